"""``m3gym audit-tools``: the tool-necessity table per family and level, with a verdict.

For each env (level) and family, on the first ``--tasks`` held-out tasks (the frozen test
split's seed range): the strong reader's accuracy without and with the reference tool
(:mod:`m3gym.audit.readers`), chance, the reader-independent unexplained share and the per-op
ablation (:mod:`m3gym.audit.tool_necessity`), and the verdict against the lines of
docs/tool-necessity.md:

* share ≥ :data:`~m3gym.audit.tool_necessity.SHARE_LINE`, or a chain necessity measured;
* every op of the reference needed on its own (its loss drops the share under the line, or
  breaks a later tool);
* the reader's no-tool accuracy ≤ chance + :data:`NO_TOOL_MARGIN` (a search key: read on at most
  that share of the tasks);
* its with-tool accuracy ≥ :data:`WITH_TOOL_LINE` on text answers and keys.

Exit status 1 when any row fails, unless ``--report-only``. Deterministic: fixed seeds, a fixed
reader, no sampling.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from dataclasses import dataclass, field
from typing import Any

from m3gym.audit.readers import READERS, ReaderScore

NO_TOOL_MARGIN: float = 0.10
"""Largest excess over chance of the reader's no-tool accuracy."""
WITH_TOOL_LINE: float = 0.8
"""Smallest with-tool accuracy of the reader on text answers."""
DEFAULT_TASKS: int = 6
"""Held-out tasks per family (the issue's share sample)."""
DEFAULT_ENVS: tuple[str, ...] = ("M3Bench-L1", "M3Bench-L2", "M3Bench-L3", "M3Bench-Classic")
"""The envs audited when neither ``--env`` nor ``--family`` is given."""


def env_families(env_id: str) -> tuple[str, list[str]]:
    """Return the level label (``L2``, ``Classic``, or a family env's level) and its families."""
    import gymnasium as gym

    from m3gym.registration import register_envs, resolve_env_id
    from m3gym.tasks.registry import family_names, get_family

    register_envs()
    resolved = resolve_env_id(env_id)
    if resolved not in gym.registry:
        raise SystemExit(f"audit-tools: unknown env id {env_id!r}")
    kwargs = gym.registry[resolved].kwargs or {}
    if kwargs.get("family"):
        fam = str(kwargs["family"])
        cls = get_family(fam)
        return ("Classic" if cls.suite == "classic" else f"L{cls.level}"), [fam]
    suite = str(kwargs.get("suite", "m3bench"))
    level = int(kwargs.get("level", 1))
    return ("Classic" if suite == "classic" else f"L{level}"), family_names(level, suite)


def family_level(family: str) -> str:
    """Return the level label of a family (``L1``..``L3`` or ``Classic``)."""
    from m3gym.tasks.registry import get_family

    cls = get_family(family)
    return "Classic" if cls.suite == "classic" else f"L{cls.level}"


@dataclass
class Row:
    """One family's measurements and verdict."""

    level: str
    family: str
    scene: str
    necessity: Any
    reads: list[ReaderScore] = field(default_factory=list)
    reader_note: str = ""
    known: str | None = None

    def _mean(self, attr: str) -> float:
        return statistics.fmean(getattr(r, attr) for r in self.reads)

    @property
    def kind(self) -> str | None:
        """``answer``, ``key`` or None (no reader for this family)."""
        return self.reads[0].kind if self.reads else None

    @property
    def chance(self) -> float:
        """Mean chance of the read tasks (0 for search keys)."""
        return statistics.fmean(r.chance or 0.0 for r in self.reads) if self.reads else 0.0

    def failures(self) -> list[str]:
        """Return the lines this family misses (empty: pass)."""
        n = self.necessity
        out = []
        if not n.passes_share:
            out.append(f"share {n.share:.2f} < 0.3")
        out += [f"{op.key} not needed" for op in n.ops if not op.needed(n.share)]
        if self.reads:
            no, with_ = self._mean("no_tool"), self._mean("with_tool")
            if no > self.chance + NO_TOOL_MARGIN + 1e-9:
                out.append(f"no-tool {no:.2f} > chance + {NO_TOOL_MARGIN:.2f}")
            if with_ < WITH_TOOL_LINE - 1e-9:
                out.append(f"with-tool {with_:.2f} < {WITH_TOOL_LINE}")
        return out

    def cells(self) -> list[str]:
        """Return the table cells of the row."""
        n = self.necessity
        if self.reads:
            what = " (key)" if self.kind == "key" else ""
            no = f"{self._mean('no_tool'):.2f}{what}"
            with_ = f"{self._mean('with_tool'):.2f}{what}"
            chance = "–" if self.kind == "key" else f"{self.chance:.3f}"
        else:
            no = with_ = chance = "–"
        fails = self.failures()
        verdict = "pass" if not fails else "FAIL: " + "; ".join(fails)
        if fails and self.known:
            verdict += f" (known: {self.known})"
        if not self.reads and self.reader_note:
            verdict += f" [reader: {self.reader_note}]"
        ops = "<br>".join(op.cell(n.share) for op in n.ops) or "–"
        return [self.level, self.family, self.scene, str(len(n.shares)), no, with_, chance,
                f"{n.share:.3f}", ops, verdict]

    def as_dict(self) -> dict[str, Any]:
        """Return the row as plain data (``--json``): the measurements, not the formatted cells."""
        n = self.necessity
        reads = bool(self.reads)
        return {
            "level": self.level, "family": self.family, "scene": self.scene,
            "tasks": len(n.shares), "share": n.share, "shares": list(n.shares),
            "reader_kind": self.kind,
            "no_tool": self._mean("no_tool") if reads else None,
            "with_tool": self._mean("with_tool") if reads else None,
            "chance": self.chance if reads and self.kind == "answer" else None,
            "ops": [{"op": op.key, "tasks": op.n, "share_without": op.share_without,
                     "chain_breaks": op.chain_breaks, "needed": op.needed(n.share)}
                    for op in n.ops],
            "failures": self.failures(), "known": self.known, "reader_note": self.reader_note,
        }


HEADER = ("| level | family | scenes | n | no tool | with tool | chance | unexplained share "
          "| per-op (share without; chain breaks) | verdict |\n"
          "|---|---|---|---|---|---|---|---|---|---|")


def measure_family(family: str, level: str, tasks: int, photo: bool, reader: Any) -> Row:
    """Measure one family: the share with ablation, then the reader (when it has text)."""
    from m3gym.audit.readers import read_task
    from m3gym.audit.tool_necessity import KNOWN_BELOW_LINE, family_necessity, held_out_tasks
    from m3gym.tasks.registry import get_family

    use_photo = photo and get_family(family).photo_scenes
    config = {"scenes": "photo"} if use_photo else None
    todo = held_out_tasks(family, tasks, config)
    necessity = family_necessity(family, task_list=todo)
    row = Row(level, family, "photo" if use_photo else "flat", necessity,
              known=KNOWN_BELOW_LINE.get(family))
    if reader is None:
        row.reader_note = "no reader asked (--reader none)"
        return row
    reads = [r for r in (read_task(t, reader) for t in todo) if r is not None]
    row.reads = reads
    if not reads:
        row.reader_note = ("the answer is not drawn text nor a drawn search key: no reader, "
                           "relies on (a)")
    return row


def run(args: argparse.Namespace) -> int:
    """Print the table for the envs/families asked; 1 when a row fails (unless report-only)."""
    from m3gym.audit.readers import make_reader, reader_name
    from m3gym.tasks.registry import get_family

    if args.tasks < 1:
        raise SystemExit(f"audit-tools: --tasks must be >= 1, got {args.tasks}")
    targets: list[tuple[str, str]] = []
    if args.family:
        for fam in args.family:
            get_family(fam)  # unknown names fail with the list
            targets.append((family_level(fam), fam))
    for env_id in args.env or ([] if args.family else list(DEFAULT_ENVS)):
        level, fams = env_families(env_id)
        targets += [(level, f) for f in fams]
    reader = make_reader(args.reader)
    print(f"Reader: {reader_name(args.reader)}; held-out tasks per family: {args.tasks}; "
          f"scenes: {'photo where the family has them' if args.photo else 'flat'}\n")
    print(HEADER, flush=True)
    failed = 0
    start = time.perf_counter()
    rows = []
    for level, fam in targets:
        row = measure_family(fam, level, args.tasks, args.photo, reader)
        rows.append(row)
        failed += bool(row.failures())
        print("| " + " | ".join(row.cells()) + " |", flush=True)
    if args.json:
        write_json(args.json, rows, reader_name(args.reader), args.tasks, args.photo)
    print(f"\n{failed} of {len(targets)} famil{'y' if len(targets) == 1 else 'ies'} fail "
          f"({time.perf_counter() - start:.0f} s)")
    return 1 if failed and not args.report_only else 0


def write_json(path: str, rows: list[Row], reader: str, tasks: int, photo: bool) -> None:
    """Write the rows as one JSON document (what ``scripts/update_readme.py`` tabulates)."""
    import json
    from pathlib import Path

    doc = {"reader": reader, "tasks": tasks, "photo": photo,
           "rows": [row.as_dict() for row in rows]}
    Path(path).write_text(json.dumps(doc, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def add_audit_tools_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``audit-tools`` on the ``m3gym`` sub-command parser."""
    p = sub.add_parser("audit-tools", help="tool necessity per family: the reader-independent "
                       "share, per-op ablation and a strong reader")
    p.add_argument("--env", action="append",
                   help="env id (repeatable; default: M3Bench-L1/L2/L3 and M3Bench-Classic)")
    p.add_argument("--family", action="append", help="family name (repeatable)")
    p.add_argument("--tasks", type=int, default=DEFAULT_TASKS, help="held-out tasks per family")
    p.add_argument("--photo", action="store_true",
                   help="build the families that have photo scenes in photographs")
    p.add_argument("--reader", choices=READERS, default="best",
                   help="best: PP-OCRv4 (rapidocr, the 'audit' extra) and Tesseract, best of both")
    p.add_argument("--report-only", action="store_true", help="exit 0 even when a row fails")
    p.add_argument("--json", metavar="PATH",
                   help="also write the measurements as JSON (for the docs' tool-gap table)")
    p.set_defaults(func=run)


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="m3gym-audit-tools")
    add_audit_tools_parser(parser.add_subparsers(dest="command", required=True))
    ns = parser.parse_args(["audit-tools", *sys.argv[1:]])
    sys.exit(ns.func(ns))
