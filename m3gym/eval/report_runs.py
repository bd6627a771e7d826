"""The run folders a report shows: loaded as untrusted input, with seeded bootstrap intervals.

:func:`load_run` reads a run folder (its summary recomputed from the episode rows); a file it cannot
use is recorded in :attr:`Run.skipped` and named by the report. Every interval of a report is
drawn from a fresh generator seeded with :data:`BOOTSTRAP_SEED` (:func:`interval`), so the same
run folders give byte-identical reports.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from m3gym.deprecation import renamed_attribute
from m3gym.eval.episodes_jsonl import UnreadableLine, read_episode_rows_checked
from m3gym.eval.run_folder_write import read_run_config
from m3gym.eval.summary import stat_interval, summarize

LEADERBOARD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Acc", "acc"), ("S", "S"), ("V", "V"), ("V_true", "V_true"), ("OT", "OT"), ("M3", "m3"),
    ("Recall", "recall"), ("Prec", "precision"), ("ArgSim", "arg_similarity"),
    ("Safety", "safety"), ("Calls", "calls"), ("Reward", "reward"),
)
"""(header, statistic) columns of the leaderboard and per-level tables."""

BOOTSTRAP_SEED: int = 0
"""Seed of the generator behind every interval of the report (one fresh generator per interval,
so an interval depends only on its own episodes, not on which other runs are shown)."""

INTERVAL_LEVEL: float = 0.95
"""Coverage of the leaderboard's intervals and the plots' error bars."""


def bootstrap_rng() -> np.random.Generator:
    """Return the seeded ``np.random.Generator`` one report interval is drawn with."""
    return np.random.default_rng(BOOTSTRAP_SEED)


def interval(rows: Sequence[Mapping[str, Any]], key: str) -> tuple[float, float] | None:
    """Return the report's 95 % bootstrap interval of statistic ``key`` over ``rows``."""
    return stat_interval(rows, key, bootstrap_rng(), INTERVAL_LEVEL)


@dataclass
class Run:
    """A loaded run folder: its name, config, latest episode rows and summary.

    ``unreadable`` lists the lines of ``episodes.jsonl`` that are not episode rows (left out
    of every count; the report names each). ``skipped`` maps each file of the run the report
    could not use (a trace that is not JSON or not of the trace schema, a thumbnail that is not
    a JPEG, ``traces`` that is not a folder ...) to why; the report names each and goes on.
    """

    name: str
    path: Path
    config: dict[str, Any]
    rows: list[dict[str, Any]]
    summary: dict[str, Any]
    unreadable: list[UnreadableLine] = field(default_factory=list)
    records_check: list[str] | None = field(default=None, repr=False, compare=False)
    """The records-file warnings, once computed (:func:`records_warnings`)."""
    skipped: dict[str, str] = field(default_factory=dict)

    records = renamed_attribute("m3gym.eval.report_runs.Run", "records", "rows")

    def skip(self, path: str | Path, reason: str) -> None:
        """Record a file of the run the report cannot use, and why (named in the warnings)."""
        self.skipped.setdefault(str(path), reason)

    def trace(self, episode_id: str) -> dict[str, Any] | None:
        """Return the stored trace of an episode, or ``None`` when it is missing or skipped.

        A trace that is not a regular file, cannot be read, is not UTF-8 JSON or does not match
        :data:`~m3gym.eval.run_folder.TRACE_SCHEMA` is skipped: recorded in :attr:`skipped`
        with the reason (file, line and column, or key and expected type).
        """
        from m3gym.eval.run_folder import episode_trace_path, read_trace_checked

        if str(self.path / "traces") in self.skipped:
            return None
        path, problem = episode_trace_path(self.path, episode_id)
        if path is None:
            self.skip(self.path / "episodes.jsonl", str(problem))
            return None
        trace, problem = read_trace_checked(path)
        if problem is None and trace is None:
            problem = "missing (the episode has a row but no trace)"
        if problem is not None:
            self.skip(path, problem)
        return trace

    def thumb_data_url(self, rel: str | None) -> str | None:
        """Return a stored thumbnail as a ``data:image/jpeg;base64`` URL (``None``: none usable).

        A thumbnail outside ``thumbs/`` of the run, or that is not a JPEG file, is skipped
        (:attr:`skipped`).
        """
        from m3gym.eval.report_images import read_thumb

        data, problem = read_thumb(self.path, rel)
        if problem is not None:
            self.skip(self.path / str(rel), problem)
        if data is None:
            return None
        return "data:image/jpeg;base64," + base64.b64encode(data).decode()


def load_run(path: str | Path, name: str | None = None) -> Run:
    """Load a run folder written by ``m3gym eval`` (its summary recomputed from the rows).

    Raises ``FileNotFoundError`` when there is no ``episodes.jsonl`` and
    :class:`~m3gym.eval.run_folder.RunFolderError` naming the file and the problem when
    ``episodes.jsonl`` or ``config.json`` is not a regular file or cannot be read, or
    ``config.json`` is malformed (:func:`~m3gym.eval.run_folder_write.read_run_config`).
    ``traces`` or ``thumbs`` that is not a folder is recorded in :attr:`Run.skipped` (the
    report names it).
    """
    from m3gym.eval.run_folder import RunFolderError, check_file, check_folder

    path = Path(path)
    rows_path = path / "episodes.jsonl"
    if not check_file(rows_path):
        raise FileNotFoundError(f"{path} is not an m3gym run folder (no episodes.jsonl)")
    cfg_path = path / "config.json"
    config = read_run_config(cfg_path) if check_file(cfg_path) else {}
    rows, unreadable = read_episode_rows_checked(rows_path)
    run = Run(name or path.name, path, config, rows, summarize(rows), unreadable)
    for folder, what in (("traces", "no trace is shown"), ("thumbs", "no image is shown")):
        try:
            check_folder(path / folder)
        except RunFolderError as exc:
            run.skip(path / folder, f"{exc.problem}: {what}")
    return run


def load_runs(paths: Sequence[str | Path]) -> list[Run]:
    """Load several runs, naming them by folder (with the parent folder when names repeat)."""
    names = [Path(p).resolve().name for p in paths]
    runs = []
    for p, n in zip(paths, names):
        label = n if names.count(n) == 1 else f"{Path(p).resolve().parent.name}/{n}"
        runs.append(load_run(p, label))
    return runs
