"""Regenerate the generated tables of the docs (between ``<!-- NAME -->`` / ``<!-- /NAME -->``).

Usage: ``python scripts/update_readme.py [--seeds 100] [--only NAME ...]``. Tables: ENV-TABLE
(env ids and families, ``docs/environments.md``), TOOLS-TABLE (every tool and its parameters,
from the tool schemas, ``docs/tools.md``), STATS-TABLE (level statistics from ``m3gym.stats``)
and, when ``runs/readme`` holds the runs of ``scripts/bench_readme.sh``, AGENTS-TABLE (both in
``docs/benchmarks.md``); when ``runs/tool-gap`` holds those of ``scripts/bench_tool_gap.sh``,
TOOL-GAP-TABLE (``docs/tool-necessity.md``: the strong reader and the heuristic agent with and
without their tools, per family). Each block is rewritten in the page that holds its markers.
"""

from __future__ import annotations

import argparse
import json
import re
from pathlib import Path

import m3gym
from m3gym.stats import stats_markdown
from m3gym.tasks.registry import make_task
from m3gym.tools import default_registry

ROOT = Path(__file__).resolve().parent.parent
DOCS = ROOT / "docs"
"""The docs pages searched for the blocks' markers."""


def env_table() -> str:
    """Return the markdown table of env ids (benchmark levels, the classic suite, families)."""
    rows = ["| env id | level | suite | view | families | domains |", "|---|---|---|---|---|---|"]

    def row(env_id: str, level: int, fams: list[str]) -> str:
        classes = [m3gym.get_family(f) for f in fams]
        doms = sorted({d for c in classes for d in c.domains})
        view = max(c.view_size for c in classes)
        return (f"| `{env_id}` | {level} | {classes[0].suite} | {view} | {', '.join(fams)} | "
                f"{', '.join(doms)} |")

    for level in (1, 2, 3):
        if m3gym.family_names(level):
            rows.append(row(m3gym.level_env_id(level), level, m3gym.family_names(level)))
    if m3gym.family_names(1, "classic"):
        rows.append(row(m3gym.CLASSIC_ENV_ID, 1, m3gym.family_names(1, "classic")))
    for fam in m3gym.family_names(suite=None):
        rows.append(row(m3gym.family_env_id(fam), m3gym.get_family(fam).level, [fam]))
    return "\n".join(rows)


def tools_table() -> str:
    """Return the markdown table of tools and their parameters (defaults from the schemas)."""
    rows = ["| tool | kind | parameters (default) |", "|---|---|---|"]
    for spec in default_registry().specs():
        schema = spec.parameters_schema()
        required = set(schema.get("required", []))
        params = []
        for name, prop in schema.get("properties", {}).items():
            if name == "label":
                continue
            if name in required:
                params.append(f"`{name}`")
            else:
                params.append(f"`{name}` ({prop.get('default')})")
        aliases = f" (aliases: {', '.join(a.name for a in spec.aliases)})" if spec.aliases else ""
        rows.append(f"| `{spec.name}`{aliases} | {spec.kind} | {', '.join(params) or '—'} |")
    return "\n".join(rows)


BENCH_RUNS = ("oracle", "random", "heuristic", "heuristic-notools")
"""Run folders under ``runs/readme/`` shown in the AGENTS-TABLE (``scripts/bench_readme.sh``)."""


def chance_by_level(episodes: int = 200) -> dict[str, float]:
    """Return the chance accuracy (mean 1 / #choices) of the test split's first tasks per level."""
    from m3gym.eval.splits import split_entries

    out = {}
    for level in (1, 2, 3):
        entries = split_entries("test", level)[:episodes]
        inv = [1 / len(t.choices) if t.choices else 0.0
               for t in (make_task(e.family, e.task_seed) for e in entries)]
        out[f"L{level}"] = sum(inv) / len(inv) if inv else 0.0
    return out


def agents_table(root: Path) -> str | None:
    """Return the agent benchmark table from ``root/<run>/summary.json``, or None if missing."""
    rows = ["| agent | level | episodes | Acc | S | V | OT | M3 | recall | precision | calls |",
            "|---|---|---|---|---|---|---|---|---|---|---|"]
    chance = chance_by_level()
    rows += [f"| *chance (uniform over choices)* | {lvl} | | {p:.2f} | | | | | | | |"
             for lvl, p in chance.items()]
    found = False
    for run in BENCH_RUNS:
        path = root / run / "summary.json"
        if not path.is_file():
            continue
        found = True
        summary = json.loads(path.read_text())
        for level, block in sorted(summary.get("by_level", {}).items()):
            m = block["metrics"]
            cells = [m.get(k) for k in ("acc", "S", "V", "OT", "m3", "recall", "precision")]
            text = " | ".join("—" if v is None else f"{v:.2f}" for v in cells)
            rows.append(f"| {run} | {level} | {block['episodes']} | {text} | "
                        f"{m.get('calls') or 0:.2f} |")
    return "\n".join(rows) if found else None


GAP_RUNS = ("heuristic", "heuristic-notools")
"""Run folders under ``runs/tool-gap/`` (``scripts/bench_tool_gap.sh``): the heuristic agent with
its tools and with its tools masked, on the same tasks."""


def _acc(summary: dict | None, family: str) -> tuple[float | None, int]:
    """Return a family's accuracy and scored episodes in a run summary (None when absent)."""
    stats = (summary or {}).get("by_family", {}).get(family)
    if not stats:
        return None, 0
    return (stats.get("metrics") or {}).get("acc"), int(stats.get("scored", 0))


def _merged_summaries(root: Path, run: str) -> dict:
    """Return ``{"by_family": ...}`` merged over ``root/run*/summary.json`` (levels, classic)."""
    merged: dict = {"by_family": {}}
    for path in sorted(root.glob(f"{run}*/summary.json")):
        if path.parent.name.removeprefix(run) not in ("", "-classic"):
            continue
        merged["by_family"].update(json.loads(path.read_text()).get("by_family", {}))
    return merged


def tool_gap_table(root: Path) -> str | None:
    """Return the with/without-tools table per family from ``root`` (None if it is missing).

    ``root/audit.json`` is ``m3gym audit-tools --json`` (the strong reader and the share);
    ``root/heuristic*/summary.json`` and ``root/heuristic-notools*/summary.json`` are
    ``m3gym eval`` runs of the heuristic agent with its tools and with them masked
    (``use_tools=false``: it answers from the initial view).
    """
    audit_path = root / "audit.json"
    if not audit_path.is_file():
        return None
    audit = json.loads(audit_path.read_text())
    runs = {run: _merged_summaries(root, run) for run in GAP_RUNS}

    def cell(value: float | None, suffix: str = "") -> str:
        return "–" if value is None else f"{value:.2f}{suffix}"

    rows = ["| level | family | reader, no tool | reader, with tool | chance | heuristic, tools "
            "| heuristic, tools masked | gap (heuristic) | unexplained share | audit |",
            "|---|---|---|---|---|---|---|---|---|---|"]
    for row in audit["rows"]:
        fam = row["family"]
        key = " (key)" if row["reader_kind"] == "key" else ""
        with_acc, n_with = _acc(runs["heuristic"], fam)
        without_acc, _ = _acc(runs["heuristic-notools"], fam)
        gap = None if with_acc is None or without_acc is None else with_acc - without_acc
        n = f" (n={n_with})" if n_with else ""
        verdict = "pass" if not row["failures"] else "FAIL: " + "; ".join(row["failures"])
        rows.append(f"| {row['level']} | {fam} | {cell(row['no_tool'], key)} | "
                    f"{cell(row['with_tool'], key)} | {cell(row['chance'])} | "
                    f"{cell(with_acc)}{n} | {cell(without_acc)} | "
                    f"{'–' if gap is None else f'{gap:+.2f}'} | {row['share']:.3f} | {verdict} |")
    return "\n".join(rows)


def replace_block(text: str, name: str, body: str) -> str:
    """Replace (or create at a bare ``<!-- NAME -->`` marker) the generated block ``name``."""
    block = f"<!-- {name} -->\n{body}\n<!-- /{name} -->"
    pattern = re.compile(rf"<!-- {name} -->.*?<!-- /{name} -->", re.DOTALL)
    if pattern.search(text):
        return pattern.sub(lambda _: block, text)
    return text.replace(f"<!-- {name} -->", block)


def page_with_block(name: str, docs: Path = DOCS) -> Path:
    """Return the one page under ``docs`` that holds the ``<!-- name -->`` marker."""
    pages = [p for p in sorted(docs.rglob("*.md")) if f"<!-- {name} -->" in p.read_text()]
    if len(pages) != 1:
        raise SystemExit(f"update_readme: {len(pages)} pages under {docs} hold <!-- {name} --> "
                         f"({', '.join(map(str, pages)) or 'none'}); expected exactly one")
    return pages[0]


def main() -> None:
    """Rewrite the generated tables in the docs pages that hold them."""
    parser = argparse.ArgumentParser()
    parser.add_argument("--seeds", type=int, default=100)
    parser.add_argument("--only", action="append", metavar="NAME",
                        help="rewrite only this block (repeatable), e.g. TOOL-GAP-TABLE")
    args = parser.parse_args()
    makers = {"ENV-TABLE": env_table, "TOOLS-TABLE": tools_table,
              "STATS-TABLE": lambda: stats_markdown(args.seeds),
              "AGENTS-TABLE": lambda: agents_table(ROOT / "runs" / "readme"),
              "TOOL-GAP-TABLE": lambda: tool_gap_table(ROOT / "runs" / "tool-gap")}
    unknown = set(args.only or ()) - set(makers)
    if unknown:
        raise SystemExit(f"update_readme: unknown block(s) {sorted(unknown)}; "
                         f"known: {sorted(makers)}")
    blocks = {}
    for name, make in makers.items():
        if args.only and name not in args.only:
            continue
        body = make()
        if body is not None:
            blocks[name] = body
    for name, body in blocks.items():
        path = page_with_block(name)
        path.write_text(replace_block(path.read_text(), name, body))


if __name__ == "__main__":
    main()
