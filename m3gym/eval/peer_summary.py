"""The peers' metric blocks of a run folder (``m3gym eval --metrics amme,m3bench``).

:mod:`m3gym.scoring.peers` computes Agentic-MME's and M3-Bench's numbers from episodes; this
module reads the episodes' stored traces, writes the blocks into the run's summary, prints them
after the run and gives the report one table per metric family (see ``docs/peer-metrics.md``).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any, Protocol

from m3gym.scoring.peers import PeerEpisode, amme_metrics, m3bench_metrics, peer_episode

PEER_FAMILIES: tuple[str, ...] = ("amme", "m3bench")
"""The metric families computed here (``m3gym`` is the summary itself)."""

AMME_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Acc", "final_answer_accuracy"), ("Acc strict", "acc_m3gym"),
    ("Hedges", "contains_only_correct"), ("S", "avg_S"), ("V", "avg_V"),
    ("PQS", "avg_PQS"), ("Penalty", "avg_penalty"), ("CP50", "checkpoint_pass_rate_50"),
    ("CP80", "checkpoint_pass_rate_80"), ("Calls", "avg_tool_calls_per_case"),
    ("Calls/ref", "avg_overthink_ratio"), ("OT", "OT_paper"),
)
"""(header, key) of the Agentic-MME table (keys of :func:`~m3gym.scoring.peers.amme_metrics`)."""

M3BENCH_TABLE: tuple[tuple[str, str], ...] = (
    ("Recall", "recall"), ("Precision", "precision"), ("ArgSim", "avg_sim_all_cov"),
    ("ArgSim strong", "avg_sim_strong_cov"), ("StepCoh", "step_coherence_cov"),
    ("Order", "order_consistency_cov"), ("Merge", "merge_purity_cov"),
    ("Rounds", "avg_Rounds"), ("Calls", "avg_tool_calls"),
)
"""(header, key) of the M3-Bench table (call-weighted, as ``evaluate_trajectories.py``)."""

AMME_NOTE = ("Acc is Agentic-MME's lenient answer match (contains), Acc strict m3gym's; Hedges "
             "counts answers only the lenient match accepts; S, V and PQS aggregate m3gym's "
             "verified checkpoints Agentic-MME's way (S over tasks with S checkpoints, V "
             "likewise); CP50 / CP80 = share of tasks passing 50% / 80% of their checkpoints; "
             "Calls/ref = mean calls over reference calls; OT = the paper's overthink. See "
             "docs/peer-metrics.md.")
"""The note under the report's Agentic-MME table."""

M3BENCH_NOTE = ("Recall and precision pooled over calls, the other metrics weighted by each "
                "task's reference calls, as M3-Bench's evaluate_trajectories.py (m3gym's own "
                "M3-Bench table is a plain episode mean). See docs/peer-metrics.md.")
"""The note under the report's M3-Bench table."""


class _RunLike(Protocol):
    name: str
    path: Path
    rows: list[dict[str, Any]]

    def trace(self, episode_id: str) -> dict[str, Any] | None: ...


def peer_episodes(rows: Iterable[Mapping[str, Any]], read_trace: Any,
                  skipped: list[str] | None = None) -> list[PeerEpisode]:
    """Return the :class:`PeerEpisode` of every scored row whose trace ``read_trace`` finds.

    ``read_trace(episode_id)`` returns the trace dict or ``None``; unscored rows (errors) are
    left out, as in m3gym's summary. A trace that is not a finished m3gym trace
    (:func:`~m3gym.scoring.peers.peer_episode`'s ``ValueError``) is left out and named in
    ``skipped`` (``"<episode>: <reason>"``) when that list is given, else raises.
    """
    out = []
    for row in rows:
        if row.get("status") != "ok":
            continue
        trace = read_trace(str(row["episode_id"]))
        if trace is None:
            continue
        try:
            out.append(peer_episode(trace))
        except ValueError as exc:
            if skipped is None:
                raise
            skipped.append(f"{row['episode_id']}: {exc}")
    return out


def _read_trace_in(folder: Path, skipped: list[str]) -> Any:
    from m3gym.eval.run_folder import episode_trace_path, read_trace_checked

    def read(episode_id: str) -> dict[str, Any] | None:
        path, problem = episode_trace_path(folder, episode_id)
        if path is not None:
            trace, problem = read_trace_checked(path)
            if problem is None:
                return trace
        if problem is not None:
            skipped.append(f"{path or episode_id}: {problem}")
        return None
    return read


def peer_blocks(episodes: Sequence[PeerEpisode], metrics: Iterable[str]) -> dict[str, Any]:
    """Return ``{"amme": ..., "m3bench": ...}`` for the chosen families (others skipped)."""
    chosen = set(metrics)
    out: dict[str, Any] = {}
    if "amme" in chosen:
        out["amme"] = amme_metrics(episodes)
    if "m3bench" in chosen:
        out["m3bench"] = m3bench_metrics(episodes)
    return out


def run_peer_blocks(out: str | Path, rows: Iterable[Mapping[str, Any]],
                    metrics: Iterable[str]) -> dict[str, Any]:
    """Return the chosen peer blocks of the run folder ``out`` (its traces are read).

    A trace that cannot be used (not JSON, not a trace, not finished) is left out of the blocks
    and named in a ``UserWarning``.
    """
    metrics = [m for m in metrics if m in PEER_FAMILIES]
    if not metrics:
        return {}
    skipped: list[str] = []
    blocks = peer_blocks(peer_episodes(rows, _read_trace_in(Path(out), skipped), skipped),
                         metrics)
    if skipped:
        import warnings

        n = len(skipped)
        warnings.warn(f"{n} trace{'s' if n != 1 else ''} left out of the peer metrics: "
                      + "; ".join(skipped), UserWarning, stacklevel=2)
    return blocks


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, int) and not isinstance(value, bool):
        return str(value)
    return f"{float(value):.3f}"


def block_rows(block: Mapping[str, Any], columns: Sequence[tuple[str, str]]) -> list[str]:
    """Return the formatted cells of ``columns`` from one metric block (``-`` when missing)."""
    return [_fmt(block.get(key)) for _, key in columns]


def print_peer_summary(summary: Mapping[str, Any], console: Any = None) -> None:
    """Print the summary's peer blocks (if any) as rich tables."""
    if not any(k in summary for k in PEER_FAMILIES):
        return
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=140)
    for key, title, columns in (("amme", "Agentic-MME metrics", AMME_COLUMNS),
                                ("m3bench", "M3-Bench metrics (call-weighted)", M3BENCH_TABLE)):
        block = summary.get(key)
        if not block:
            continue
        table = Table(title=title)
        table.add_column("level", style="bold")
        for header, _ in columns:
            table.add_column(header, justify="right", no_wrap=True)
        groups = [*(block.get("by_level") or {}).items(), ("all", block.get("overall", block))]
        for label, stats in groups:
            table.add_row(label, *block_rows(stats, columns))
        console.print(table)


def run_metrics(path: Path) -> list[str]:
    """Return the metric families a run folder's ``summary.json`` lists (``[]`` if none)."""
    from m3gym.eval.run_folder import read_text

    try:  # ValueError: RunFolderError (a directory, a FIFO ...), not UTF-8, not JSON
        data = json.loads(read_text(path / "summary.json"))
    except (OSError, ValueError, RecursionError):
        return []
    found = data.get("metrics") if isinstance(data, dict) else None
    return [str(m) for m in found] if isinstance(found, list) else []


def peer_tables(runs: Sequence[_RunLike]
                ) -> list[tuple[str, tuple[list[str], list[list[str]]], str]]:
    """Return the report's peer tables: ``(title, (header, rows), note)``, one row per run.

    A run contributes to a family's table when its eval chose that family (``summary.json``'s
    ``metrics``); the blocks are recomputed from its traces.
    """
    chosen = {r.name: [m for m in run_metrics(r.path) if m in PEER_FAMILIES] for r in runs}
    tables = []
    for key, title, columns, note in (
            ("amme", "Agentic-MME metrics", AMME_COLUMNS, AMME_NOTE),
            ("m3bench", "M3-Bench metrics (call-weighted)", M3BENCH_TABLE, M3BENCH_NOTE)):
        rows = []
        for run in runs:
            if key not in chosen[run.name]:
                continue
            skipped: list[str] = []
            block = peer_blocks(peer_episodes(run.rows, run.trace, skipped), [key])[key]
            skip = getattr(run, "skip", None)
            for line in skipped:
                if skip is not None:
                    ep, _, reason = line.partition(": ")
                    skip(run.path / "traces" / f"{ep}.json", f"not used by the peer metrics: "
                         f"{reason}")
            rows.append([run.name, *block_rows(block.get("overall", block), columns)])
        if rows:
            tables.append((title, (["run", *(h for h, _ in columns)], rows), note))
    return tables
