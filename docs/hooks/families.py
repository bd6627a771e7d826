"""MkDocs hook: one page per task family, generated at build time.

Each page is built from the family's class docstring (its sections ``Scene:``, ``Question:``,
``Why a tool is needed:``, ``Reference trajectory:``, ``Checkpoints:``, ``Difficulty:``,
``Config:``) and its config dataclass (default values, and the knobs that
``difficulty_knobs(d)`` sets at difficulty 0, 0.5 and 1), with the family's example picture
(``docs/families/img/<name>.png``: the task of seed 0 with the default config, each evidence box
outlined, beside an inset of each box at full resolution; written by
``scripts/family_insets.py``). A family without a committed picture gets one rendered here by
the same script. The nav lists the family pages one level down, under "Task families" →
"Every family", so the sections after it stay in view.
"""

from __future__ import annotations

import dataclasses
import inspect
import re
from pathlib import Path
from typing import Any

from mkdocs.config.defaults import MkDocsConfig
from mkdocs.structure.files import File, Files

from m3gym.testing import DOCSTRING_SECTIONS as SECTIONS

FAMILY_DIR = "families"
"""Folder of the generated pages inside ``docs/``."""

KNOB_POINTS = (0.0, 0.5, 1.0)
"""Difficulties at which the knobs are tabulated."""

FAMILY_NAV = "Every family"
"""Title of the nav group that holds the family pages (inside "Task families")."""

INSET_SCRIPT = Path(__file__).resolve().parents[2] / "scripts" / "family_insets.py"
"""The script that renders each family's example picture (imported for a missing one)."""


def _families() -> list[str]:
    """Return every registered family name (all suites), sorted."""
    import m3gym

    return m3gym.family_names(suite=None)


def _markdown(text: str) -> str:
    """Turn reST inline markup of a docstring into Markdown (literals, roles)."""
    def role(match: re.Match[str]) -> str:
        target = match.group(2)
        return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"

    text = re.sub(r":(?:func|class|attr|meth|data|mod|obj):`(~?)([^`]+)`", role, text)
    return re.sub(r"``([^`]+)``", r"`\1`", text)


def section_texts(doc: str) -> tuple[str, dict[str, str]]:
    """Split a family docstring into its summary and its named sections (dedented)."""
    lines = inspect.cleandoc(doc).splitlines()
    summary: list[str] = []
    sections: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in lines:
        title = line.strip().rstrip(":")
        if line and not line[0].isspace() and line.rstrip().endswith(":") and title in SECTIONS:
            current = sections.setdefault(title, [])
        elif current is None:
            summary.append(line)
        else:
            current.append(line)
    text = {k: inspect.cleandoc("\n".join(v)) for k, v in sections.items()}
    return "\n".join(summary).strip(), text


def _value(value: Any) -> str:
    """Format a config value for a table cell."""
    return "`" + repr(value).replace("|", "\\|") + "`"


def config_rows(cls: type) -> list[tuple[str, str]]:
    """Return ``(field, default)`` for every config field of a family class."""
    rows = []
    for f in dataclasses.fields(cls):
        if f.default is not dataclasses.MISSING:
            default = f.default
        elif f.default_factory is not dataclasses.MISSING:
            default = f.default_factory()
        else:
            default = "(required)"
        rows.append((f.name, _value(default)))
    return rows


def family_page(name: str, image: str) -> str:
    """Return the Markdown page of family ``name``; ``image`` is the example's path from it."""
    import m3gym

    cls = m3gym.get_family(name)
    summary, sections = section_texts(cls.__doc__ or "")
    env_id = m3gym.family_env_id(name)
    out = [f"# `{name}`", "", _markdown(summary), "",
           "| level | suite | env id | view | domains |", "|---|---|---|---|---|",
           f"| {cls.level} | {cls.suite} | `{env_id}` | {cls.view_size} px | "
           f"{', '.join(cls.domains)} |", "",
           "## Example", "",
           f"![{name}, seed 0, default config, with its evidence enlarged]({image})", "",
           "Left: the task of seed 0 with the default config, "
           f"`m3gym.make_task(\"{name}\", seed=0)` (input images side by side, downscaled), "
           "each evidence box (`Task.evidence`) outlined in red. Right: the numbered boxes cut "
           "from the full-resolution image, with a margin: what the agent must read. "
           "Drawn by `scripts/family_insets.py`.", ""]
    for title in SECTIONS:
        if title in sections:
            out += [f"## {title}", "", _markdown(sections[title]), ""]
    out += ["## Difficulty knobs", "",
            "`difficulty_knobs(d)` sets these config fields for `difficulty=d` "
            "(`difficulty=None`, the default, keeps the default config below: the distribution "
            "the frozen levels use).", ""]
    knobs = {d: cls.difficulty_knobs(d) for d in KNOB_POINTS}
    keys = sorted({k for v in knobs.values() for k in v})
    if keys:
        out += ["| field | " + " | ".join(f"d = {d:g}" for d in KNOB_POINTS) + " |",
                "|---|" + "---|" * len(KNOB_POINTS)]
        out += [f"| `{k}` | " + " | ".join(_value(knobs[d].get(k, "—")) for d in KNOB_POINTS)
                + " |" for k in keys]
    else:
        out.append("This family declares no difficulty knobs.")
    out += ["", "## Config (defaults)", "", "| field | default |", "|---|---|"]
    out += [f"| `{k}` | {v} |" for k, v in config_rows(cls)]
    out += ["", f"Source: `{cls.__module__.replace('.', '/')}.py`."]
    return "\n".join(out) + "\n"


def _inset_script() -> Any:
    """Return ``scripts/family_insets.py`` as a module."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("family_insets", INSET_SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def nav_with_families(nav: list[Any], names: list[str]) -> list[Any]:
    """Return ``nav`` with the families index and a nested group of every family page.

    The families index comes first in "Task families"; the group ``FAMILY_NAV`` (one page per
    family, one level down) comes last, so the sidebar keeps the sections after it in view.
    """
    out = []
    for entry in nav:
        if isinstance(entry, dict) and "Task families" in entry:
            pages = [{name: f"{FAMILY_DIR}/{name}.md"} for name in names]
            entry = {"Task families": [f"{FAMILY_DIR}/index.md", *entry["Task families"],
                                       {FAMILY_NAV: pages}]}
        out.append(entry)
    return out


def on_config(config: MkDocsConfig) -> MkDocsConfig:
    """Put the families index and one nav entry per family under "Task families"."""
    config.nav = nav_with_families(list(config.nav or []), _families())
    return config


def on_files(files: Files, config: MkDocsConfig) -> Files:
    """Add the generated family pages (and any example picture rendered here) to the build."""
    docs = Path(config.docs_dir)
    for name in _families():
        image = f"{FAMILY_DIR}/img/{name}.png"
        if not (docs / image).is_file():
            files.append(File.generated(config, image,
                                        content=_inset_script().render_family(name)[0]))
        files.append(File.generated(config, f"{FAMILY_DIR}/{name}.md",
                                    content=family_page(name, f"img/{name}.png")))
    return files


def family_index() -> str:
    """Return the Markdown table of every family (name, level, suite, env id, summary)."""
    import m3gym

    rows = ["| family | level | suite | env id | task |", "|---|---|---|---|---|"]
    for name in _families():
        cls = m3gym.get_family(name)
        summary = _markdown(section_texts(cls.__doc__ or "")[0].split("\n\n")[0])
        rows.append(f"| [`{name}`]({name}.md) | {cls.level} | {cls.suite} | "
                    f"`{m3gym.family_env_id(name)}` | {' '.join(summary.split())} |")
    return "\n".join(rows) + "\n"


def on_page_markdown(markdown: str, page: Any, config: MkDocsConfig, files: Files) -> str:
    """Put the table of every family where the families index says ``<!-- FAMILY-INDEX -->``."""
    if page.file.src_uri == f"{FAMILY_DIR}/index.md":
        return markdown.replace("<!-- FAMILY-INDEX -->", family_index())
    return markdown
