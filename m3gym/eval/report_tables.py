"""The tables of a report, as data: a header and rows of text cells.

One row per run (or per level, family, failure mode).
:mod:`m3gym.eval.report` renders them as Markdown and HTML; cells of the leaderboard carry a
mean with its bootstrap interval (:func:`~m3gym.eval.report_runs.interval`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from m3gym.eval.report_runs import LEADERBOARD_COLUMNS, Run, interval
from m3gym.eval.summary import FAILURE_MODES, fmt, fmt_interval, stat_value

Table = tuple[list[str], list[list[str]]]


def leaderboard_table(runs: Sequence[Run]) -> Table:
    """Return the overall leaderboard: one row per run, sorted by accuracy.

    Each cell is a mean with its 95 % bootstrap interval, ``0.620 [0.550, 0.690]``
    (:func:`interval`: tasks resampled, each with all its rollouts).
    """
    header = ["run", "agent", "N", *(h for h, _ in LEADERBOARD_COLUMNS)]
    rows = []
    for run in sorted(runs, key=lambda r: -(stat_value(r.summary["overall"], "acc") or 0.0)):
        st = run.summary["overall"]
        rows.append([run.name, str(run.config.get("agent", "?")), _n(st),
                     *(fmt_interval(stat_value(st, k), interval(run.rows, k), k)
                       for _, k in LEADERBOARD_COLUMNS)])
    return header, rows


def _n(stats: Mapping[str, Any]) -> str:
    return str(stats["scored"]) + (f"/{stats['episodes']}" if stats["scored"] !=
                                   stats["episodes"] else "")


def level_table(runs: Sequence[Run], columns: Sequence[tuple[str, str]]) -> Table:
    """Return one row per (level, run) with the given statistics."""
    header = ["level", "run", "N", *(h for h, _ in columns)]
    levels = sorted({lv for r in runs for lv in r.summary["by_level"]})
    rows = []
    for lv in levels:
        for run in runs:
            st = run.summary["by_level"].get(lv)
            if st is not None:
                rows.append([lv, run.name, _n(st), *(fmt(stat_value(st, k), k)
                                                     for _, k in columns)])
    return header, rows


def family_table(runs: Sequence[Run], key: str = "acc") -> Table:
    """Return one row per family with statistic ``key`` of each run side by side."""
    header = ["level", "family", *(run.name for run in runs)]
    fams: dict[str, str] = {}
    for run in runs:
        for fam, st in run.summary["by_family"].items():
            fams.setdefault(fam, str(st.get("level", "")))
    rows = []
    for fam, lv in sorted(fams.items(), key=lambda kv: (kv[1], kv[0])):
        cells = []
        for run in runs:
            st = run.summary["by_family"].get(fam)
            cells.append(fmt(stat_value(st, key), key) if st else "")
        rows.append([lv, fam, *cells])
    return header, rows


def failure_table(runs: Sequence[Run]) -> Table:
    """Return failure-mode counts (scored episodes) with runs side by side, plus error counts."""
    header = ["failure mode", *(run.name for run in runs)]
    modes = list(FAILURE_MODES) + sorted({m for r in runs for m in
                                          r.summary["overall"]["failure_modes"]} -
                                         set(FAILURE_MODES))
    rows = [[m, *(str(r.summary["overall"]["failure_modes"].get(m, 0)) for r in runs)]
            for m in modes]
    for key in ("infra_errors", "agent_errors", "env_errors"):
        if any(r.summary["overall"][key] for r in runs):
            rows.append([f"({key.replace('_', ' ')}, not scored)",
                         *(str(r.summary["overall"][key]) for r in runs)])
    return header, rows


def runs_table(runs: Sequence[Run]) -> Table:
    """Return one row per run: its agent, split, envs, episodes (scored) and folder."""
    header = ["run", "agent", "split", "envs", "episodes", "scored", "folder"]
    rows = [[r.name, str(r.config.get("agent", "?")), str(r.config.get("split", "?")),
             ", ".join(r.config.get("envs", [])), str(r.summary["overall"]["episodes"]),
             str(r.summary["overall"]["scored"]), str(r.path)] for r in runs]
    return header, rows


VERSION_COLUMNS: tuple[str, ...] = (
    "m3gym", "manifest", "python", "gymnasium", "numpy", "opencv", "pillow", "freetype",
    "agent_model", "agent_base_url", "agent_ocr",
)
"""``config.json["versions"]`` keys shown in the report's versions table."""


def versions_table(runs: Sequence[Run]) -> Table:
    """Return one row per run: the versions it ran on (``?`` where the run did not record them)."""
    header = ["run", *VERSION_COLUMNS]
    rows = []
    for r in runs:
        v = r.config.get("versions") or {}
        rows.append([r.name, *(str(v.get(k, "?")) for k in VERSION_COLUMNS)])
    return header, rows


def judge_table(runs: Sequence[Run]) -> Table | None:
    """Return the judge-checkpoint row of each run (``None`` when no run has any).

    Judge checkpoints (records imported from Agentic-MME) are scored by an optional VLM judge
    (``m3gym eval --judge-endpoint``), reported here on their own, never in S or V.
    """
    stats = [(r, r.summary["overall"].get("judge")) for r in runs]
    if not any(st for _, st in stats):
        return None
    header = ["run", "episodes", "judge checkpoints", "judged", "passed", "judge pass rate",
              "request errors", "not judged"]
    rows = [[r.name, str(st["episodes"]), str(st["checkpoints"]), str(st["judged"]),
             str(st["passed"]), fmt(st.get("rate")), str(st["errors"]), str(st["not_judged"])]
            for r, st in stats if st]
    return header, rows


JUDGE_NOTE: str = (
    "Judge checkpoints are the checkpoints m3gym cannot verify exactly (Agentic-MME's visual "
    "checks and search requirements), scored only by an OpenAI-compatible judge (m3gym eval "
    "--judge-endpoint): pass rate = passed / judged over all of them. They are never part of "
    "S or V; without a judge they are counted as not judged.")
"""The sentence under the judge table."""

