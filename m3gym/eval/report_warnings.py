"""The warnings a report shows above its tables: what may make its numbers wrong or not compare.

Unreadable lines and skipped files (named, never lost in silence), code run without isolation,
a records file or task changed since the run, and runs whose tasks may differ
(:func:`report_warnings` gathers them all).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from m3gym.eval.report_runs import Run
from m3gym.eval.run_folder_write import task_version_keys


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
                       f"{r.unreadable[0].path} (not episode rows, so not counted; "
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
        n = sum(1 for row in r.rows if row.get("code_isolation") == "none")
        if n:
            out.append(f"run {r.name}: {n} episode{'s' if n != 1 else ''} ran agent code WITHOUT "
                       "isolation (code_isolation=none, the explicit opt-out): their checkpoint "
                       "and answer rewards are untrusted")
    return out


def changed_record_tasks(run: Run) -> list[str]:
    """Return ``"episode: reason"`` for each of a records run's tasks that no longer matches.

    Each distinct (env, family, task seed) of the run's episode rows is rebuilt from the run's
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
        for row in run.rows:
            want, family, seed = row.get("task_hash"), row.get("family"), row.get("task_seed")
            env_id = str(row.get("env") or "")
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
                out.append(f"{row.get('episode_id')}: cannot be rebuilt "
                           f"({type(exc).__name__}: {exc})")
                continue
            if got != want:
                out.append(f"{row.get('episode_id')}: task_hash {str(want)[:12]} in the run, "
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



def report_warnings(runs: Sequence[Run]) -> list[str]:
    """Return every warning the report shows.

    Unreadable lines, skipped files, unisolated code, changed records files or tasks,
    comparability. Files are skipped as the report reads them: call it after the pages are
    rendered to have every one.
    """
    return (unreadable_warnings(runs) + skipped_warnings(runs) + isolation_warnings(runs)
            + records_warnings(runs) + comparability_warnings(runs))

