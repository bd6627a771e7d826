"""Reports of one or more run folders: ``report.md`` (tables) and ``report.html`` with its images.

The HTML holds a leaderboard (each metric's mean with its 95 % bootstrap interval over tasks),
per-level / per-family / M3-Bench tables, plots (matplotlib, inlined as base64 PNG, with 95 %
error bars) and a trajectory viewer: per episode the question, each step's calls with arguments
and results, the images produced, the checkpoints each call passed and the reward components of
each step. Several runs are shown side by side. The viewer shows at most ``max_episodes``
episodes, spread over runs and families.

:func:`write_report` puts the viewer's images in ``report_files/`` beside the page
(:mod:`m3gym.eval.report_images`): lazy-loaded JPEG thumbnails, each linking to the
full-resolution PNG re-created by replaying the episode (opened on click). The bootstrap is
seeded (:data:`BOOTSTRAP_SEED`), so the same run folders give byte-identical reports.

The page's markup lives in jinja2 templates (``templates/``, :func:`template_env`); this module
computes what they show. Plots and templates need the ``eval`` extra (matplotlib, jinja2).
"""

from __future__ import annotations

import base64
import functools
import html
import io
import json
import shutil
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from m3gym.eval.peer_summary import peer_tables
from m3gym.eval.report_images import FILES_DIR, ReportImages, ShownImage
from m3gym.eval.runner import (
    UnreadableLine,
    read_records_checked,
    read_run_config,
    task_version_keys,
)
from m3gym.eval.summary import (
    FAILURE_MODES,
    M3BENCH_COLUMNS,
    fmt,
    fmt_interval,
    stat_interval,
    stat_value,
    summarize,
)
from m3gym.extras import require_extra

LEADERBOARD_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Acc", "acc"), ("S", "S"), ("V", "V"), ("V_true", "V_true"), ("OT", "OT"), ("M3", "m3"),
    ("Recall", "recall"), ("Prec", "precision"), ("ArgSim", "arg_similarity"),
    ("Safety", "safety"), ("Calls", "calls"), ("Reward", "reward"),
)
"""(header, statistic) columns of the leaderboard and per-level tables."""

MAX_RESULT_CHARS: int = 600
"""Longest tool result text shown per call in the viewer."""

BOOTSTRAP_SEED: int = 0
"""Seed of the generator behind every interval of the report (one fresh generator per interval,
so an interval depends only on its own episodes, not on which other runs are shown)."""

INTERVAL_LEVEL: float = 0.95
"""Coverage of the leaderboard's intervals and the plots' error bars."""


def bootstrap_rng() -> np.random.Generator:
    """Return the seeded ``np.random.Generator`` one report interval is drawn with."""
    return np.random.default_rng(BOOTSTRAP_SEED)


def interval(records: Sequence[Mapping[str, Any]], key: str) -> tuple[float, float] | None:
    """Return the report's 95 % bootstrap interval of statistic ``key`` over ``records``."""
    return stat_interval(records, key, bootstrap_rng(), INTERVAL_LEVEL)


@dataclass
class Run:
    """A loaded run folder: its name, config, latest episode records and summary.

    ``unreadable`` lists the lines of ``episodes.jsonl`` that are not episode records (left out
    of every count; the report names each). ``skipped`` maps each file of the run the report
    could not use (a trace that is not JSON or not of the trace schema, a thumbnail that is not
    a JPEG, ``traces`` that is not a folder ...) to why; the report names each and goes on.
    """

    name: str
    path: Path
    config: dict[str, Any]
    records: list[dict[str, Any]]
    summary: dict[str, Any]
    unreadable: list[UnreadableLine] = field(default_factory=list)
    records_check: list[str] | None = field(default=None, repr=False, compare=False)
    """The records-file warnings, once computed (:func:`records_warnings`)."""
    skipped: dict[str, str] = field(default_factory=dict)

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
            problem = "missing (the episode has a record but no trace)"
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
    """Load a run folder written by ``m3gym eval`` (its summary is recomputed from records).

    Raises ``FileNotFoundError`` when there is no ``episodes.jsonl`` and
    :class:`~m3gym.eval.run_folder.RunFolderError` naming the file and the problem when
    ``episodes.jsonl`` or ``config.json`` is not a regular file or cannot be read, or
    ``config.json`` is malformed (:func:`~m3gym.eval.runner.read_run_config`). ``traces`` or
    ``thumbs`` that is not a folder is recorded in :attr:`Run.skipped` (the report names it).
    """
    from m3gym.eval.run_folder import RunFolderError, check_file, check_folder

    path = Path(path)
    records_path = path / "episodes.jsonl"
    if not check_file(records_path):
        raise FileNotFoundError(f"{path} is not an m3gym run folder (no episodes.jsonl)")
    cfg_path = path / "config.json"
    config = read_run_config(cfg_path) if check_file(cfg_path) else {}
    records, unreadable = read_records_checked(records_path)
    run = Run(name or path.name, path, config, records, summarize(records), unreadable)
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


# --------------------------------------------------------------------------- tables
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
                     *(fmt_interval(stat_value(st, k), interval(run.records, k), k)
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


def markdown_table(table: Table) -> str:
    """Return a table as GitHub Markdown."""
    header, rows = table
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(c.replace("|", "\\|") for c in row) + " |" for row in rows]
    return "\n".join(lines)


def html_table(table: Table, css: str = "") -> str:
    """Return a table as HTML (cells escaped; numeric cells right-aligned).

    A cell ``mean [lo, hi]`` keeps its interval on one line (``<span class="ci">``), so a narrow
    column wraps between the mean and its interval only. The markup is the ``table`` macro of
    ``templates/macros.html.j2``.
    """
    header, _ = table
    macro = template_env().get_template("macros.html.j2").module.table
    return str(macro(header, table_cells(table), css))


def table_cells(table: Table) -> list[list[dict[str, Any]]]:
    """Return a table's rows as the templates' cells: ``{"num", "text", "ci"}``.

    ``num`` says the cell is numeric (right-aligned); a cell ``mean [lo, hi]`` has ``text`` the
    mean and ``ci`` the bracketed interval without its opening bracket, every other ``ci`` is
    ``None``.
    """
    return [[_cell(c) for c in row] for row in table[1]]


def _cell(cell: str) -> dict[str, Any]:
    mean, sep, bounds = cell.partition(" [")
    if sep and bounds.endswith("]") and _is_num(mean):
        return {"num": _is_num(cell), "text": mean, "ci": bounds}
    return {"num": _is_num(cell), "text": cell, "ci": None}


def _is_num(cell: str) -> bool:
    try:
        float(cell.split("/")[0].split(" [")[0])
        return True
    except ValueError:
        return cell == "-"


def _runs_table(runs: Sequence[Run]) -> Table:
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


def comparability_warnings(runs: Sequence[Run]) -> list[str]:
    """Return a warning per way the runs' tasks may differ, so their scores may not compare.

    Runs side by side must share every version in :func:`task_version_keys` (m3gym, the
    manifest, the pixel libraries); a run that recorded none, or that ran with changed frozen
    tasks (``--allow-changed-tasks``), is named too.
    """
    out = []
    for r in runs:
        if not r.config.get("versions"):
            out.append(f"run {r.name} records no versions (written by an older m3gym): its tasks "
                       "cannot be shown to match the others'")
        changed = (r.config.get("frozen_tasks") or {}).get("changed") or []
        if changed:
            out.append(f"run {r.name} ran {len(changed)} frozen task(s) that differ from its "
                       f"manifest (--allow-changed-tasks), e.g. {changed[0]}")
    recorded = [r for r in runs if r.config.get("versions")]
    for key in task_version_keys():
        values = {r.name: r.config["versions"].get(key) for r in recorded}
        if len(set(map(str, values.values()))) > 1:
            shown = ", ".join(f"{name}: {v}" for name, v in values.items())
            out.append(f"runs differ in {key} ({shown}); it changes tasks, so their scores may "
                       "not be comparable")
    return out


def unreadable_warnings(runs: Sequence[Run]) -> list[str]:
    """Return, per run with unreadable ``episodes.jsonl`` lines, a count, then one per line.

    Each line is named ``file:line`` with the reason and how it starts; its episode is not
    counted (``m3gym eval --resume`` removes such lines, keeping a backup, and reruns them).
    """
    out = []
    for r in runs:
        if r.unreadable:
            n = len(r.unreadable)
            out.append(f"run {r.name}: {n} unreadable line{'s' if n != 1 else ''} in "
                       f"{r.unreadable[0].path} (not episode records, so not counted; "
                       "m3gym eval --resume removes them, keeping a backup, and reruns "
                       "their episodes)")
            out += [str(u) for u in r.unreadable]
    return out


def skipped_warnings(runs: Sequence[Run]) -> list[str]:
    """Return, per run with files the report could not use, a count, then one per file.

    Each is named with the reason (a trace that is not JSON or not a trace, a thumbnail that is
    not a JPEG, ``traces`` that is not a folder ...); the report shows the rest of the run.
    """
    out = []
    for r in runs:
        if r.skipped:
            n = len(r.skipped)
            out.append(f"run {r.name}: {n} file{'s' if n != 1 else ''} skipped (not shown; "
                       "a skipped trace is left out of the peer metric tables too)")
            out += [f"{path}: {reason}" for path, reason in r.skipped.items()]
    return out


def isolation_warnings(runs: Sequence[Run]) -> list[str]:
    """Return, per run with code-mode episodes run without isolation, how many and what it means.

    Such episodes (``code_isolation`` ``"none"``, the explicit opt-out) let agent code read
    what the env's machine can: their checkpoint and answer rewards are not trustworthy.
    """
    out = []
    for r in runs:
        n = sum(1 for rec in r.records if rec.get("code_isolation") == "none")
        if n:
            out.append(f"run {r.name}: {n} episode{'s' if n != 1 else ''} ran agent code WITHOUT "
                       "isolation (code_isolation=none, the explicit opt-out): their checkpoint "
                       "and answer rewards are untrusted")
    return out


def changed_record_tasks(run: Run) -> list[str]:
    """Return ``"episode: reason"`` for each of a records run's tasks that no longer matches.

    Each distinct (env, family, task seed) of the run's records is rebuilt from the run's
    ``env_args`` (its records file as it is now) and its content hash compared with the
    ``task_hash`` the episode recorded; a task that cannot be built any more counts too.
    """
    import gymnasium as gym

    from m3gym import registration
    from m3gym.tasks.registry import make_task

    env_args = dict(run.config.get("env_args") or {})
    envs: dict[str, Any] = {}
    seen: set[tuple[str, str, int]] = set()
    out: list[str] = []
    try:
        for rec in run.records:
            want, family, seed = rec.get("task_hash"), rec.get("family"), rec.get("task_seed")
            env_id = str(rec.get("env") or "")
            if not want or not isinstance(family, str) or not isinstance(seed, int):
                continue
            if (env_id, family, seed) in seen:
                continue
            seen.add((env_id, family, seed))
            try:
                if env_id not in envs:
                    envs[env_id] = gym.make(registration.resolve_env_id(env_id),
                                            disable_env_checker=True, **env_args)
                base = envs[env_id].unwrapped
                config = base.family_config if family in base.families else {}
                got = make_task(family, seed, config).content_hash()
            except Exception as exc:  # a record gone or broken: the task cannot be rebuilt
                out.append(f"{rec.get('episode_id')}: cannot be rebuilt "
                           f"({type(exc).__name__}: {exc})")
                continue
            if got != want:
                out.append(f"{rec.get('episode_id')}: task_hash {str(want)[:12]} in the run, "
                           f"{got[:12]} now")
    finally:
        for env in envs.values():
            env.close()
    return out


def records_warnings(runs: Sequence[Run]) -> list[str]:
    """Return a warning per records run whose records file or tasks changed since it ran.

    A run of the records env keeps its file's path and sha256 (``config.json["records"]``):
    the file is warned about when it is missing or its sha256 differs, and each of the run's
    tasks is rebuilt from it (:func:`changed_record_tasks`) and warned about when its hash no
    longer matches the episode's ``task_hash``: the scores are then for records that are gone.
    """
    out: list[str] = []
    for r in runs:
        if r.records_check is None:
            r.records_check = _run_records_warnings(r)
        out += r.records_check
    return out


def _run_records_warnings(r: Run) -> list[str]:
    import hashlib

    info = r.config.get("records")
    if not isinstance(info, Mapping) or not info.get("sha256"):
        return []
    source, sha = str(info.get("source")), str(info["sha256"])
    if source.startswith("<"):  # records given as Python objects: nothing on disk to check
        return []
    path = Path(source).expanduser()
    if not path.is_file():
        return [f"run {r.name}: its records file {source} is missing (sha256 {sha[:12]} at the "
                "run): its tasks cannot be checked"]
    out = []
    now = hashlib.sha256(path.read_bytes()).hexdigest()
    if now != sha:
        out.append(f"run {r.name}: the records file {source} changed since the run (sha256 "
                   f"{sha[:12]} at the run, {now[:12]} now): its scores are for the records "
                   "as they were")
    changed = changed_record_tasks(r)
    if changed:
        out.append(f"run {r.name}: {len(changed)} task(s) built from {source} no longer match "
                   f"the run's task_hash, e.g. {changed[0]}")
    return out


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


def report_warnings(runs: Sequence[Run]) -> list[str]:
    """Return every warning the report shows.

    Unreadable lines, skipped files, unisolated code, changed records files or tasks,
    comparability. Files are skipped as the report reads them: call it after the pages are
    rendered to have every one.
    """
    return (unreadable_warnings(runs) + skipped_warnings(runs) + isolation_warnings(runs)
            + records_warnings(runs) + comparability_warnings(runs))


INTERVAL_NOTE: str = (
    "Each leaderboard cell is the mean over scored episodes with its 95 % percentile-bootstrap "
    "interval in brackets (2000 resamples of the tasks, each task with all its rollouts; "
    "seeded, so the report is reproducible).")
"""The sentence under the leaderboard that says what its brackets are."""

_MD_SPECIAL = str.maketrans({c: "\\" + c for c in "\\`*_[]<>|#"})


def _md_text(text: str) -> str:
    """Return ``text`` with Markdown's special characters escaped (shown as written)."""
    return text.translate(_MD_SPECIAL)


def render_markdown(runs: Sequence[Run]) -> str:
    """Return ``report.md``: runs, leaderboard, per-level, per-family and failure-mode tables."""
    peer = peer_tables(runs)  # reads traces: before the warnings, which name skipped ones
    warnings = report_warnings(runs)
    judge = judge_table(runs)
    parts = [
        "# m3gym evaluation report", "",
        *(["## Warnings", "", *(f"- **{_md_text(w)}**" for w in warnings), ""]
          if warnings else []),
        "## Runs", "", markdown_table(_runs_table(runs)), "",
        "## Versions", "", markdown_table(versions_table(runs)), "",
        "## Leaderboard", "", markdown_table(leaderboard_table(runs)), "",
        INTERVAL_NOTE, "",
        "## Per level", "", markdown_table(level_table(runs, LEADERBOARD_COLUMNS)), "",
        "## M3-Bench metrics per level", "", markdown_table(level_table(runs, M3BENCH_COLUMNS)),
        "",
        "## Accuracy per family", "", markdown_table(family_table(runs, "acc")), "",
        "## Failure modes", "", markdown_table(failure_table(runs)), "",
        *(["## Judge checkpoints", "", markdown_table(judge), "", JUDGE_NOTE, ""]
          if judge is not None else []),
        *(s for title, t, note in peer
          for s in (f"## {title}", "", markdown_table(t), "", note, "")),
        "Acc = answer accuracy; S / V = strategy / visual-evidence checkpoints passed (V_true: "
        "evidence legible in an artifact, verified on pixels); OT = overthink "
        "max(0, C_agent − C_ref)/(C_ref + 1); M3 = multi-modal / multi-hop / multi-threaded "
        "tool-use score; Recall, Prec, ArgSim = M3-Bench call alignment. Infrastructure errors "
        "are not scored.", "",
    ]
    return "\n".join(parts)


# --------------------------------------------------------------------------- plots
def _png_data_url(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    require_extra("matplotlib.pyplot", "eval", "the report's plots").close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _legend(ax: Any) -> None:
    """Draw the legend when something is labelled (no runs with records: none, and no warning)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def level_records(run: Run) -> dict[str, list[dict[str, Any]]]:
    """Return the run's records grouped by level label (``L1``, ...), as in its summary."""
    out: dict[str, list[dict[str, Any]]] = {}
    for rec in run.records:
        out.setdefault(f"L{rec.get('level')}", []).append(rec)
    return out


def error_bar(value: float | None, bounds: tuple[float, float] | None) -> tuple[float, float]:
    """Return matplotlib's ``(below, above)`` error-bar lengths of ``value`` (0 when missing)."""
    if value is None or bounds is None:
        return 0.0, 0.0
    return max(0.0, value - bounds[0]), max(0.0, bounds[1] - value)


def plot_images(runs: Sequence[Run]) -> dict[str, str]:
    """Return the report's plots as PNG data URLs: accuracy per level, OT vs Acc, failure modes.

    Accuracy and OT carry 95 % bootstrap error bars (:func:`interval`).
    """
    require_extra("matplotlib", "eval", "the report's plots").use("Agg")
    plt = require_extra("matplotlib.pyplot", "eval", "the report's plots")

    out: dict[str, str] = {}
    levels = sorted({lv for r in runs for lv in r.summary["by_level"]})
    width = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    for i, run in enumerate(runs):
        recs = level_records(run)
        means = [stat_value(run.summary["by_level"].get(lv, {}), "acc") for lv in levels]
        bars = [error_bar(m, interval(recs.get(lv, []), "acc")) for m, lv in zip(means, levels)]
        ax.bar(np.arange(len(levels)) + i * width, [m or 0.0 for m in means], width,
               yerr=np.array(bars).T.reshape(2, -1), capsize=3, label=run.name)
    ax.set_xticks(np.arange(len(levels)) + width * (len(runs) - 1) / 2, levels)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy")
    ax.set_title("Accuracy per level (95 % bootstrap intervals)")
    _legend(ax)
    out["accuracy"] = _png_data_url(fig)

    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    markers = "osD^v<>p*h"
    for i, run in enumerate(runs):
        recs = level_records(run)
        pts = [(stat_value(st, "OT"), stat_value(st, "acc"), lv)
               for lv, st in run.summary["by_level"].items()]
        pts = [p for p in pts if p[0] is not None and p[1] is not None]
        if pts:
            xerr = [error_bar(x, interval(recs.get(lv, []), "OT")) for x, _, lv in pts]
            yerr = [error_bar(y, interval(recs.get(lv, []), "acc")) for _, y, lv in pts]
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts], xerr=np.array(xerr).T,
                        yerr=np.array(yerr).T, fmt=markers[i % 10], capsize=3, label=run.name)
            for x, y, lv in pts:
                ax.annotate(lv, (x, y), textcoords="offset points", xytext=(4, 3), fontsize=8)
    ax.set_xlabel("overthink OT (lower is better)")
    ax.set_ylabel("accuracy")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("Overthink vs accuracy per level (95 % intervals)")
    _legend(ax)
    out["ot_vs_acc"] = _png_data_url(fig)

    modes = list(FAILURE_MODES)
    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    height = 0.8 / max(1, len(runs))
    for i, run in enumerate(runs):
        counts = [run.summary["overall"]["failure_modes"].get(m, 0) for m in modes]
        ax.barh(np.arange(len(modes)) + i * height, counts, height, label=run.name)
    ax.set_yticks(np.arange(len(modes)) + height * (len(runs) - 1) / 2,
                  [m.replace("_", " ") for m in modes], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("episodes")
    ax.set_title("Failure modes")
    _legend(ax)
    out["failure_modes"] = _png_data_url(fig)
    return out


# --------------------------------------------------------------------------- trajectory viewer
def select_episodes(runs: Sequence[Run], max_episodes: int) -> list[tuple[Run, dict[str, Any]]]:
    """Return up to ``max_episodes`` (run, record) pairs spread over runs and families.

    Each run gets an equal share, taken round-robin over its families, alternating unsolved and
    solved episodes within a family.
    """
    quota = max(1, max_episodes // max(1, len(runs)))
    chosen: list[tuple[Run, dict[str, Any]]] = []
    for run in runs:
        by_family: dict[str, list[dict[str, Any]]] = {}
        for rec in run.records:
            by_family.setdefault(str(rec.get("family")), []).append(rec)
        queues = [_alternate(v) for _, v in sorted(by_family.items())]
        picked: list[dict[str, Any]] = []
        while len(picked) < quota and any(queues):
            for q in queues:
                if q and len(picked) < quota:
                    picked.append(q.pop(0))
        chosen += [(run, rec) for rec in sorted(picked, key=lambda r: r.get("index", 0))]
    return chosen[:max_episodes]


def _alternate(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    wrong = [r for r in records if not r.get("answer_correct")]
    right = [r for r in records if r.get("answer_correct")]
    out = []
    for i in range(max(len(wrong), len(right))):
        out += [x[i] for x in (wrong, right) if i < len(x)]
    return out


def _args_text(args: Any) -> str:
    if isinstance(args, Mapping):
        return ", ".join(f"{k}={json.dumps(v, default=str)}" for k, v in args.items())
    return json.dumps(args, default=str)


# --------------------------------------------------------------------------- HTML templates
TEMPLATES_DIR: str = "templates"
"""Folder of :mod:`m3gym.eval` (package data) holding the jinja2 templates of ``report.html``:
``report.html.j2`` (the page), ``episode.html.j2`` (one episode of the viewer),
``macros.html.j2`` (tables, images), ``report.css`` and ``report.js``."""


@functools.cache
def template_env() -> Any:
    """Return the ``jinja2.Environment`` of the report's templates.

    Autoescaping is on; every value is escaped with :func:`html.escape` (the entities the report
    has always written), markup built by the templates passes through. Undefined names fail.
    Needs the ``eval`` extra (:class:`~m3gym.extras.MissingExtraError` otherwise).
    """
    jinja2 = require_extra("jinja2", "eval", "the HTML report")
    markup = require_extra("markupsafe", "eval", "the HTML report").Markup

    def finalize(value: Any) -> Any:
        return value if hasattr(value, "__html__") else markup(html.escape(str(value)))

    return jinja2.Environment(
        loader=jinja2.PackageLoader("m3gym.eval", TEMPLATES_DIR), autoescape=True,
        undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
        keep_trailing_newline=True, finalize=finalize)


@dataclass
class ImageSource:
    """Where the viewer's images come from: the report's files, or inlined thumbnails.

    With ``files`` (what :func:`write_report` uses) thumbnails are files loaded lazily, each
    linking to its full-resolution image; without, thumbnails are inlined as data URLs (a page
    rendered in memory, with no folder to put files in).
    """

    files: ReportImages | None = None

    def shown(self, run: Run, trace: Mapping[str, Any],
              entry: Mapping[str, Any]) -> ShownImage | None:
        """Return the URLs of one image of an episode (``None``: it has no thumbnail)."""
        if self.files is None:
            url = run.thumb_data_url(entry.get("thumb"))
            return ShownImage(url) if url else None
        return self.files.image(run.path, run.name, trace, entry,
                                int(run.config.get("thumb_size") or 256), on_skip=run.skip)


def thumb_size_of(shape: Sequence[int], size: int) -> tuple[int, int]:
    """Return the (width, height) of the stored thumbnail of an image of ``shape`` (h, w, ...)."""
    h, w = int(shape[0]), int(shape[1])
    scale = min(1.0, size / max(h, w, 1))
    return (max(1, round(w * scale)), max(1, round(h * scale))) if scale < 1.0 else (w, h)


def _image(run: Run, trace: Mapping[str, Any], images: Mapping[int, Mapping[str, Any]],
           index: Any, caption: str, source: ImageSource) -> dict[str, Any] | None:
    """Return one viewer image for the ``image`` macro (``None``: nothing to show)."""
    entry = images.get(index) if isinstance(index, int) else None
    shown = source.shown(run, trace, entry) if entry else None
    if entry is None or shown is None:
        return None
    dims = list(entry.get("shape") or [])[:2]
    shape = "x".join(str(s) for s in dims[::-1])
    size = (thumb_size_of(dims, int(run.config.get("thumb_size") or 256))
            if len(dims) == 2 else None)
    view = (shown.view if shown.full is not None and shown.view is not None
            and shown.view != tuple(dims[::-1]) else None)
    return {"thumb": shown.thumb, "full": shown.full, "size": size, "shape": shape,
            "title": f"Image {index} ({shape}) ← {entry.get('op')}", "caption": caption,
            "view": view}


def _checkpoint_results(trace: Mapping[str, Any]
                        ) -> tuple[list[dict[str, Any]], dict[str, list[str]]]:
    """Return the checkpoint table's rows and, per call id, the checkpoints it passed."""
    results = ((trace.get("audit") or {}).get("checkpoints") or {}).get("results") or []
    specs = {c["id"]: c for c in ((trace.get("task") or {}).get("checkpoints") or [])}
    by_call: dict[str, list[str]] = {}
    rows = []
    for res in results:
        cid = res.get("checkpoint_id")
        if res.get("passed") and res.get("call_id"):
            by_call.setdefault(str(res["call_id"]), []).append(str(cid))
        desc = specs.get(cid, {}).get("description", "")
        by = res.get("call_id") or (f"Image {res['image_index']}"
                                    if res.get("image_index") is not None else "")
        rows.append({"passed": bool(res.get("passed")), "id": cid, "axis": res.get("axis", ""),
                     "kind": res.get("kind", ""), "by": by,
                     "detail": desc or res.get("reason", "")})
    return rows, by_call


def episode_context(run: Run, record: Mapping[str, Any], trace: Mapping[str, Any] | None,
                    number: int, source: ImageSource | None = None) -> dict[str, Any]:
    """Return what ``episode.html.j2`` shows of one episode (images from ``source``)."""
    source = source or ImageSource()
    status = record.get("status")
    correct = record.get("answer_correct")
    ep: dict[str, Any] = {
        "number": number, "open": number == 0, "status": status,
        "mark": "✓" if correct else ("✗" if status == "ok" else "⚠"),
        "task_id": record.get("task_id"), "run": run.name, "answer": repr(record.get("answer")),
        "calls": record.get("calls"), "reward": round(float(record.get("reward") or 0.0), 3),
        "failure_mode": record.get("failure_mode"), "trace": None,
    }
    if trace is None:
        return ep
    task = trace.get("task") or {}
    images = {int(im["index"]): im for im in trace.get("images", [])}
    inputs = [i for i, im in images.items() if im.get("parent") is None and
              im.get("op") == "input"]
    reference = task.get("reference") or []
    checkpoints, by_call = _checkpoint_results(trace)
    metrics = trace.get("metrics") or {}
    ep["trace"] = {
        "question": trace.get("question") or "",
        "gold": (task.get("answer") or {}).get("value"), "given": trace.get("answer"),
        "error": trace.get("error"),
        "inputs": [_image(run, trace, images, i, f"input Image {i}", source) for i in inputs],
        "reference": "\n".join(f"step {i}: " + " ‖ ".join(
            f"{c.get('name')}({_args_text(c.get('arguments'))})" for c in step)
            for i, step in enumerate(reference)) if reference else None,
        "steps": [_step_context(run, trace, step, images, by_call, source)
                  for step in trace.get("steps", [])],
        "checkpoints": checkpoints,
        "metrics": [(k, round(v, 3) if isinstance(v, float) else v)
                    for k, v in metrics.items() if v is not None and k != "failure_mode"],
    }
    return ep


def render_episode(run: Run, record: Mapping[str, Any], trace: Mapping[str, Any] | None,
                   number: int, source: ImageSource | None = None) -> str:
    """Return the viewer section of one episode (images from ``source``; default: inlined)."""
    return template_env().get_template("episode.html.j2").render(
        ep=episode_context(run, record, trace, number, source))


def _step_context(run: Run, trace: Mapping[str, Any], step: Mapping[str, Any],
                  images: Mapping[int, Mapping[str, Any]], by_call: Mapping[str, list[str]],
                  source: ImageSource) -> dict[str, Any]:
    comps = step.get("reward_components") or {}
    passed = step.get("checkpoints_passed") or []
    calls = []
    for call in step.get("calls", []):
        text = str(call.get("result_text") or call.get("error") or "")
        if len(text) > MAX_RESULT_CHARS:
            text = text[:MAX_RESULT_CHARS] + " …"
        calls.append({
            "ok": call.get("ok"), "call_id": call.get("call_id"), "name": call.get("name"),
            "args": _args_text(call.get("arguments")), "text": text,
            "badges": by_call.get(str(call.get("call_id")), []),
            "image": _image(run, trace, images, call.get("output_index"),
                            f"→ Image {call['output_index']}", source)
            if call.get("output_index") is not None else None,
        })
    return {
        "step": step.get("step"), "reward": f"{step.get('reward', 0):+.3f}",
        "components": ", ".join(f"{k} {v:+.3f}" for k, v in comps.items()
                                if isinstance(v, (int, float)) and v),
        "passed": ", ".join(passed) if passed else None, "calls": calls,
        "observation": step["observation_text"]
        if not step.get("calls") and step.get("observation_text") else None,
        "parse_errors": step.get("parse_errors", []),
        "action": str(step["action"])[:4000] if step.get("action") else None,
    }


def _section(title: str, table: Table, css: str = "",
             note: str | None = None) -> dict[str, Any]:
    """Return one titled table of the page for ``report.html.j2``."""
    return {"title": title, "header": table[0], "rows": table_cells(table), "css": css,
            "note": note}


def render_html(runs: Sequence[Run], max_episodes: int = 60,
                images: ReportImages | None = None) -> str:
    """Return the ``report.html`` text (``templates/report.html.j2``).

    With ``images`` the viewer's thumbnails and full-resolution images are written as files
    there and linked (lazy-loaded); without, thumbnails are inlined and there is no full size.
    """
    plots = plot_images(runs)
    chosen = select_episodes(runs, max_episodes)
    source = ImageSource(images)
    try:
        episodes = [episode_context(run, rec, run.trace(rec["episode_id"]), i, source)
                    for i, (run, rec) in enumerate(chosen)]
    finally:
        if images is not None:
            images.close()
    peer = peer_tables(runs)  # reads traces: before the warnings, which name skipped ones
    warnings = report_warnings(runs) + (images.problems if images is not None else [])
    judge = judge_table(runs)
    head_tables = [
        _section("Runs", _runs_table(runs)),
        _section("Versions", versions_table(runs)),
        _section("Leaderboard", leaderboard_table(runs), "leaderboard", INTERVAL_NOTE),
    ]
    tables = [
        _section("Per level", level_table(runs, LEADERBOARD_COLUMNS)),
        _section("M3-Bench metrics per level", level_table(runs, M3BENCH_COLUMNS)),
        _section("Accuracy per family", family_table(runs, "acc")),
        _section("Failure modes", failure_table(runs)),
        *([_section("Judge checkpoints", judge, note=JUDGE_NOTE)] if judge is not None else []),
        *(_section(title, t, note=note) for title, t, note in peer),
    ]
    return template_env().get_template("report.html.j2").render(
        warnings=warnings, head_tables=head_tables, plots=list(plots.items()), tables=tables,
        shown=len(chosen), total=sum(len(r.records) for r in runs), episodes=episodes)


@dataclass
class WrittenReport:
    """What :func:`build_report` wrote: the two pages, the runs and every warning shown."""

    pages: list[Path]
    runs: list[Run]
    warnings: list[str]


def build_report(run_paths: Sequence[str | Path], out: str | Path | None = None,
                 max_episodes: int = 60, full_images: bool = True) -> WrittenReport:
    """Write the report (:func:`write_report`) and return its pages, runs and warnings.

    The warnings are :func:`report_warnings` after both pages are rendered, so they name every
    file of the runs the report skipped.
    """
    if not run_paths:
        raise ValueError("give at least one run folder")
    runs = load_runs(run_paths)
    if out is None:
        out = runs[0].path if len(runs) == 1 else runs[0].path.parent / "report"
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    md, page = out / "report.md", out / "report.html"
    files = out / FILES_DIR
    if files.is_dir():
        shutil.rmtree(files)
    # the page first: the files it skips are then named in report.md too
    page_text = render_html(runs, max_episodes, ReportImages(out, full=full_images))
    md.write_text(render_markdown(runs))
    page.write_text(page_text)
    return WrittenReport([md, page], runs, report_warnings(runs))


def write_report(run_paths: Sequence[str | Path], out: str | Path | None = None,
                 max_episodes: int = 60, full_images: bool = True) -> list[Path]:
    """Write ``report.md``, ``report.html`` and its ``report_files/``; return the two pages.

    ``out`` defaults to the run folder for one run and to ``<parent>/report`` for several.
    ``report_files/`` is rewritten from scratch (:mod:`m3gym.eval.report_images`); with
    ``full_images=False`` the episodes are not replayed and only thumbnails are linked. A file
    of a run the report cannot use (a garbage trace, say) is skipped and named in both pages'
    warnings (:func:`skipped_warnings`).
    """
    return build_report(run_paths, out, max_episodes, full_images).pages
