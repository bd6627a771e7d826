"""Heuristic-agent accuracy per family at difficulty 0, 0.25, 0.5, 0.75 and 1.

Usage::

    python scripts/difficulty_curves.py --episodes 40            # every family with knobs
    python scripts/difficulty_curves.py --episodes 12 --family tiny_text --family price_sum

For each family that declares ``difficulty_knobs`` it runs the heuristic agent (seeded per episode)
on task seeds ``0 .. episodes-1`` at each difficulty (the same seeds at every difficulty, so the
curve compares like with like) and writes ``docs/results/difficulty_curves.csv`` (one row per
family and difficulty) and ``docs/results/difficulty_curves.md`` (a table: one row per family,
with the chance level ``1 / choices``). Families without knobs are listed as skipped.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
import time
from collections.abc import Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO_ROOT))

from m3gym.tasks.registry import family_names, get_family, make_task  # noqa: E402
from m3gym.testing import heuristic_accuracy  # noqa: E402

DIFFICULTIES: tuple[float, ...] = (0.0, 0.25, 0.5, 0.75, 1.0)
"""The difficulties of the curve."""

OUT_DIR = REPO_ROOT / "docs" / "results"
DOCS_MARKERS = ("<!-- DIFFICULTY-CURVES -->", "<!-- /DIFFICULTY-CURVES -->")
"""The block of :data:`DOCS_PAGE` that ``--docs`` rewrites."""
DOCS_PAGE = REPO_ROOT / "docs" / "benchmarks.md"
"""The docs page that holds the difficulty-curve table (section "Difficulty curves")."""


def has_knobs(family: str) -> bool:
    """Return whether ``family`` declares difficulty knobs."""
    try:
        get_family(family).difficulty_knobs(0.0)
    except NotImplementedError:
        return False
    return True


def chance(family: str, seeds: Sequence[int]) -> float | None:
    """Return the mean of ``1 / len(choices)`` over the default tasks of ``seeds``."""
    sizes = [len(t.choices) for t in (make_task(family, s) for s in seeds) if t.choices]
    return sum(1.0 / n for n in sizes) / len(sizes) if sizes else None


def curve_rows(families: Sequence[str], episodes: int,
               difficulties: Sequence[float] = DIFFICULTIES,
               cache: Path | None = None) -> list[dict[str, object]]:
    """Return one row per (family, difficulty): accuracy of the heuristic over ``episodes``.

    With ``cache`` (a folder) each family's rows are saved there as ``<family>.json`` once
    computed and read back on a later run with the same episodes and difficulties, so a long run
    can be interrupted and resumed family by family.
    """
    rows: list[dict[str, object]] = []
    seeds = range(episodes)
    for family in families:
        saved = cache / f"{family}.json" if cache is not None else None
        if saved is not None and saved.exists():
            old = json.loads(saved.read_text())
            if [r["difficulty"] for r in old] == list(difficulties) and \
                    all(r["episodes"] == episodes for r in old):
                rows.extend(old)
                print(f"{family}: cached", flush=True)
                continue
        start = time.perf_counter()
        for d in difficulties:
            acc = heuristic_accuracy(family, d, seeds)
            rows.append({"family": family, "level": get_family(family).level,
                         "suite": get_family(family).suite, "difficulty": d,
                         "episodes": episodes, "accuracy": round(acc, 4)})
        print(f"{family}: " + " ".join(f"{r['accuracy']:.2f}" for r in rows[-len(difficulties):])
              + f"  ({time.perf_counter() - start:.0f} s)", flush=True)
        if saved is not None:
            saved.parent.mkdir(parents=True, exist_ok=True)
            saved.write_text(json.dumps(rows[-len(difficulties):]))
    return rows


def markdown_table(rows: Sequence[dict[str, object]], chances: dict[str, float | None],
                   skipped: Sequence[str]) -> str:
    """Return the curve as a markdown table (one row per family)."""
    if not rows:
        return "No family declares difficulty knobs yet" + (
            f" (skipped: {', '.join(skipped)})." if skipped else ".") + "\n"
    difficulties = sorted({float(r["difficulty"]) for r in rows})  # type: ignore[arg-type]
    head = "| family | level | " + " | ".join(f"d={d:g}" for d in difficulties) + \
        " | chance | episodes |"
    lines = [head, "|" + "---|" * (len(difficulties) + 4)]
    for family in dict.fromkeys(str(r["family"]) for r in rows):
        mine = {float(r["difficulty"]): r for r in rows if r["family"] == family}  # type: ignore[arg-type]
        first = next(iter(mine.values()))
        c = chances.get(family)
        lines.append(f"| {family} | {first['level']} | "
                     + " | ".join(f"{float(mine[d]['accuracy']):.2f}" for d in difficulties)  # type: ignore[arg-type]
                     + f" | {'' if c is None else f'{c:.2f}'} | {first['episodes']} |")
    if skipped:
        lines += ["", "No difficulty knobs yet (skipped): " + ", ".join(skipped) + "."]
    return "\n".join(lines) + "\n"


def replace_block(text: str, table: str) -> str:
    """Return ``text`` with the block between :data:`DOCS_MARKERS` replaced by ``table``."""
    start, end = DOCS_MARKERS
    if text.count(start) != 1 or text.count(end) != 1:
        raise ValueError(f"the page needs exactly one {start} ... {end} block")
    head, rest = text.split(start)
    _, tail = rest.split(end)
    return f"{head}{start}\n{table}{end}{tail}"


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--episodes", type=int, default=40, help="episodes per difficulty")
    parser.add_argument("--family", action="append", default=[],
                        help="only this family (repeatable; default: every family with knobs)")
    parser.add_argument("--out-dir", default=str(OUT_DIR))
    parser.add_argument("--cache", help="folder keeping each finished family's rows (resume)")
    parser.add_argument("--docs", "--readme", dest="docs", action="store_true",
                        help="also rewrite the table in docs/benchmarks.md (## Difficulty curves)")
    args = parser.parse_args(argv)
    if args.episodes < 1:
        parser.error("--episodes must be >= 1")
    names = args.family or family_names(suite=None)
    unknown = [n for n in names if n not in family_names(suite=None)]
    if unknown:
        parser.error(f"unknown families {unknown}")
    families = [n for n in names if has_knobs(n)]
    skipped = [n for n in names if n not in families]
    rows = curve_rows(families, args.episodes,
                      cache=Path(args.cache) if args.cache else None)
    out = Path(args.out_dir)
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "difficulty_curves.csv", "w", newline="") as fh:
        writer = csv.DictWriter(fh, ["family", "level", "suite", "difficulty", "episodes",
                                     "accuracy"])
        writer.writeheader()
        writer.writerows(rows)
    chances = {f: chance(f, range(min(args.episodes, 20))) for f in families}
    table = markdown_table(rows, chances, skipped)
    (out / "difficulty_curves.md").write_text(table)
    if args.docs:
        DOCS_PAGE.write_text(replace_block(DOCS_PAGE.read_text(), table))
    print(table)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
