"""The docs site's generated family pages, the README's size and the issue-number rule.

The build itself (`mkdocs build --strict`) runs in CI (.ci/run, step "docs").
"""

from __future__ import annotations

import importlib.util
import re
from pathlib import Path

import pytest

import m3gym
from m3gym.testing import DOCSTRING_SECTIONS

ROOT = Path(__file__).resolve().parents[1]


def _hook():
    pytest.importorskip("mkdocs", reason="the docs extra (pip install -e '.[docs]') is not installed")
    spec = importlib.util.spec_from_file_location("families_hook", ROOT / "docs/hooks/families.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_family_page_has_its_sections_knobs_and_example() -> None:
    hook = _hook()
    for name in m3gym.family_names(suite=None):
        page = hook.family_page(name, f"../gallery/after/{name}.jpg")
        headings = re.findall(r"^## (.+)$", page, flags=re.MULTILINE)
        assert [h for h in headings if h in DOCSTRING_SECTIONS] == list(DOCSTRING_SECTIONS), name
        assert "Difficulty knobs" in headings and "Config (defaults)" in headings, name
        cls = m3gym.get_family(name)
        for knob in cls.difficulty_knobs(1.0):
            assert f"| `{knob}` |" in page, (name, knob)
        assert (ROOT / "docs/gallery/after" / f"{name}.jpg").is_file(), name
        assert "``" not in page, name  # reST literals are turned into Markdown


def test_section_texts_splits_summary_and_bodies() -> None:
    hook = _hook()
    summary, sections = hook.section_texts(
        "Title line.\n\n    Scene:\n        a ``box``\n    Config:\n        x: y\n")
    assert summary == "Title line."
    assert sections == {"Scene": "a ``box``", "Config": "x: y"}


def test_readme_is_one_screen_and_keeps_the_ci_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) <= 250
    ci = (ROOT / ".ci/run").read_text()
    assert 'pip install -e ".[eval]" && m3gym eval --out runs/quickstart && m3gym report ' \
           "runs/quickstart" in readme
    test_command = 'pip install torch==2.13.0 -e ".[dev,train]" && pytest -n 2'
    assert test_command in readme and test_command in ci


def test_no_issue_numbers_in_user_docs_or_docstrings() -> None:
    files = [ROOT / "README.md", *(ROOT / "docs").rglob("*.md"), *(ROOT / "m3gym").rglob("*.py")]
    hits = [f"{p.relative_to(ROOT)}:{i}" for p in files
            for i, line in enumerate(p.read_text(encoding="utf-8").splitlines(), 1)
            if re.search(r"\bissues? [0-9]", line)]
    assert hits == []


def test_family_index_links_every_family_page() -> None:
    hook = _hook()
    table = hook.family_index()
    names = m3gym.family_names(suite=None)
    assert len(table.splitlines()) == 2 + len(names)
    for name in names:
        assert f"| [`{name}`]({name}.md) |" in table


def test_photo_scenes_page_copies_the_bundled_photo_licences() -> None:
    source = (ROOT / "m3gym/data/photos/LICENSES.md").read_text(encoding="utf-8")
    page = (ROOT / "docs/photo-scenes.md").read_text(encoding="utf-8")
    rows = [line for line in source.splitlines() if line.startswith("| `")]
    assert len(rows) == 9
    for row in rows:
        assert row in page.splitlines(), row.split("|")[1]
