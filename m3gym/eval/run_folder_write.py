"""Preparing and writing a run folder: a fresh or resumed folder, episode files, ``config.json``.

:mod:`m3gym.eval.run_folder` checks every file of a run folder as it is read; this module
prepares a folder for a run (refusing a resumed one whose settings changed), checks that every
episode's files can be written before anything runs, and writes outcomes and ``config.json``
(with the versions a run ran on: :func:`run_versions`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m3gym.deprecation import renamed_attribute
from m3gym.eval.config import EpisodeOutcome, EvalConfig
from m3gym.eval.episodes_jsonl import (
    UnreadableLine,
    drop_unreadable_lines,
    read_episode_rows_checked,
)
from m3gym.eval.run_folder import (
    check_file,
    check_folder,
    check_layout,
    check_run_config,
    read_text,
)


def write_outcome(out: Path, outcome: EpisodeOutcome, jsonl: Any) -> None:
    """Write an episode's thumbnails and trace into ``out``, then its line to ``jsonl``."""
    ep = outcome.row["episode_id"]
    if outcome.thumbs:
        thumb_dir = out / "thumbs" / ep
        thumb_dir.mkdir(parents=True, exist_ok=True)
        for idx, data in outcome.thumbs.items():
            (thumb_dir / f"{idx}.jpg").write_bytes(data)
    (out / "traces" / f"{ep}.json").write_text(json.dumps(outcome.trace, default=str))
    jsonl.write(json.dumps(outcome.row, default=str) + "\n")
    jsonl.flush()


@dataclass
class PreparedFolder:
    """What :func:`prepare_run_folder` found: the rows, and the unreadable lines it removed."""

    rows: list[dict[str, Any]]
    removed: list[UnreadableLine] = field(default_factory=list)
    backup: Path | None = None

    records = renamed_attribute("m3gym.eval.run_folder_write.PreparedFolder", "records", "rows")


def read_run_config(path: Path) -> dict[str, Any]:
    """Return a run's ``config.json``, checked against its schema.

    Raises ``FileNotFoundError`` for a missing file and
    :class:`~m3gym.eval.run_folder.RunFolderError` (a ``ConfigError``) naming the file and the
    problem for one that is not a regular file, cannot be read, is not UTF-8 JSON, not an object
    or has a value of the wrong type (the key and the type expected:
    :data:`~m3gym.eval.run_folder.RUN_CONFIG_SCHEMA`).
    """
    from m3gym.config_errors import parse_json_text

    return check_run_config(parse_json_text(read_text(Path(path)), path), path)


def records_entry(env_args: Mapping[str, Any]) -> dict[str, Any]:
    """Return ``{"records": {"source", "sha256"}}`` for a records env's run, else ``{}``.

    It goes into ``config.json``; ``--resume`` and ``m3gym report`` compare the fingerprint
    with the records file's now.
    """
    if env_args.get("records") is None:
        return {}
    from m3gym.records.load import records_fingerprint

    return {"records": records_fingerprint(env_args["records"])}


def prepare_run_folder(out: Path, cfg: EvalConfig, resume: bool) -> PreparedFolder:
    """Make ``out`` ready for a run and return what a resumed folder already holds.

    A fresh folder must be empty (or missing) unless ``resume``; a resumed one must be an m3gym
    run folder whose settings (:meth:`EvalConfig.identity`) and records file are those of the
    run, and its unreadable ``episodes.jsonl`` lines are removed (a backup kept) before its
    rows are read. Raises ``FileExistsError`` / ``ValueError`` naming the problem.
    """
    if out.exists() and not out.is_dir():
        raise FileExistsError(f"{out} exists and is not a folder")
    nonempty = out.is_dir() and any(out.iterdir())
    if nonempty and not resume:
        raise FileExistsError(f"run folder {out} already exists and is not empty; "
                              "pass --resume to continue it or choose another --out")
    prepared = PreparedFolder([])
    if nonempty:
        check_layout(out)
        cfg_path = out / "config.json"
        if not check_file(cfg_path):
            raise FileExistsError(f"{out} is not an m3gym run folder (no config.json)")
        old = read_run_config(cfg_path)
        new = cfg.identity()
        diff = [k for k in new if json.dumps(old.get(k), sort_keys=True)
                != json.dumps(new[k], sort_keys=True)]
        if diff:
            k = diff[0]
            raise ValueError(f"cannot resume {out}: {k} was {old.get(k)!r}, now {new[k]!r}")
        then = (old.get("records") or {}).get("sha256")
        now = (records_entry(cfg.env_args).get("records") or {}).get("sha256")
        if then is not None and then != now:
            raise ValueError(f"cannot resume {out}: the records file changed since the run "
                             f"(sha256 {then[:16]} then, {str(now)[:16]} now)")
        prepared.removed, prepared.backup = drop_unreadable_lines(out / "episodes.jsonl")
        prepared.rows = read_episode_rows_checked(out / "episodes.jsonl")[0]
    (out / "traces").mkdir(parents=True, exist_ok=True)
    (out / "thumbs").mkdir(parents=True, exist_ok=True)
    return prepared


def check_episode_files(out: Path, episode_ids: Iterable[str]) -> None:
    """Raise :class:`~m3gym.eval.run_folder.RunFolderError` where episode files can't be written.

    That is ``traces/<episode>.json`` not a file, ``thumbs/<episode>`` not a folder (or holding
    something that is not a file): a resumed run then stops before it starts, not midway.
    """
    why = " (move it away: the episode runs again and writes it)"
    for ep in episode_ids:
        check_file(out / "traces" / f"{ep}.json", why=why)
        thumbs = out / "thumbs" / ep
        if check_folder(thumbs, why=why):
            for entry in sorted(thumbs.iterdir()):
                check_file(entry, why=why)


def write_run_config(out: Path, cfg: EvalConfig, episode_ids: Sequence[str],
                     versions: Mapping[str, Any], frozen_tasks: Mapping[str, Any] | None) -> None:
    """Write the run's ``config.json``: its settings, planned episodes, versions, frozen check."""
    (out / "config.json").write_text(json.dumps(
        {**cfg.to_dict(), "episode_ids": list(episode_ids), "versions": dict(versions),
         "frozen_tasks": None if frozen_tasks is None else dict(frozen_tasks),
         **records_entry(cfg.env_args)},
        indent=2, default=str) + "\n")


def run_versions(agent: Any, manifest: dict[str, Any] | None) -> dict[str, Any]:
    """Return what a run ran on: libraries, the manifest's version and digest, the agent's model.

    The agent's model and endpoint are read from its ``config`` (``model``, ``base_url``) where it
    has one; an agent that reads text with OCR records the backend it reads with.
    """
    from m3gym.eval.splits import manifest_digest
    from m3gym.fingerprint import library_versions

    out: dict[str, Any] = dict(library_versions())
    out["manifest"] = manifest.get("version") if manifest else None
    out["manifest_digest"] = manifest_digest(manifest)[:16] if manifest else None
    agent_cfg = getattr(agent, "config", None)
    for key in ("model", "base_url"):
        value = getattr(agent_cfg, key, None) or getattr(agent, key, None)
        if isinstance(value, str) and value:
            out[f"agent_{key}"] = value
    if type(agent).__module__.startswith("m3gym.agents.heuristic"):
        from m3gym.agents.ocr import ocr_backend

        out["agent_ocr"] = ocr_backend()
    return out


def task_version_keys() -> tuple[str, ...]:
    """Return the keys of ``config.json["versions"]`` that can change the tasks a run scored.

    m3gym's version, the manifest's version and digest, and every pixel library
    (:func:`m3gym.fingerprint.pixel_library_versions`).
    """
    from m3gym.fingerprint import pixel_library_versions

    return ("m3gym", "manifest", "manifest_digest", *pixel_library_versions())
