"""Recording an MCP server's episodes into a run folder that ``m3gym report`` reads.

:class:`RunFolder` writes the layout ``m3gym eval`` writes (``config.json`` naming the agent
``mcp``, ``episodes.jsonl``, ``traces/``, ``thumbs/``), so a recorded MCP run sits beside any
other run in a report.
"""

from __future__ import annotations

import itertools
import json
import threading
import warnings
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from m3gym.deprecation import renamed_attribute
from m3gym.eval.config import EpisodeOutcome
from m3gym.eval.episodes_jsonl import (
    drop_unreadable_lines,
    read_episode_rows_checked,
    terminate_last_line,
    unreadable_message,
)
from m3gym.eval.run_folder_write import read_run_config, records_entry, run_versions, write_outcome


class RunFolder:
    """A run folder an MCP server records into (the layout ``m3gym eval`` writes).

    ``config.json`` names the agent ``mcp``; an existing MCP run folder is appended to, any other
    non-empty folder is refused.
    """

    records = renamed_attribute("m3gym.mcp.recording.RunFolder", "records", "rows")

    def __init__(self, path: str | Path, env_args: Mapping[str, Any] | None = None,
                 settings: Mapping[str, Any] | None = None) -> None:
        self.path = Path(path)
        if self.path.exists() and not self.path.is_dir():
            raise FileExistsError(f"{self.path} exists and is not a folder")
        cfg_path = self.path / "config.json"
        if self.path.is_dir() and any(self.path.iterdir()):
            old = read_run_config(cfg_path) if cfg_path.is_file() else {}
            if old.get("agent") != "mcp":
                raise FileExistsError(f"{self.path} is not empty and not an MCP run folder; "
                                      "choose another --record folder")
        (self.path / "traces").mkdir(parents=True, exist_ok=True)
        (self.path / "thumbs").mkdir(parents=True, exist_ok=True)
        jsonl = self.path / "episodes.jsonl"
        # a line cut by a crash is removed (backup kept, named in a warning), and the next
        # row starts on its own line
        self.removed, self.backup = drop_unreadable_lines(jsonl)
        if self.removed:
            warnings.warn(f"removed {unreadable_message(self.removed)}; the original is kept as "
                          f"{self.backup}", UserWarning, stacklevel=2)
        terminate_last_line(jsonl)
        self.rows = read_episode_rows_checked(jsonl)[0]
        self._ids = {r["episode_id"] for r in self.rows}
        self._lock = threading.Lock()
        if not cfg_path.is_file():
            from m3gym.eval.splits import load_manifest

            # env_args and the records file's fingerprint: m3gym report checks the records
            extra = ({"env_args": dict(env_args), **records_entry(env_args)}
                     if env_args else {})
            cfg_path.write_text(json.dumps(
                {"agent": "mcp", "envs": [], "split": "mcp", "seed": 0, "reward": None,
                 "versions": run_versions(None, load_manifest("test")), **extra,
                 **({"mcp_server": dict(settings)} if settings is not None else {})},
                indent=2, default=str) + "\n")
        elif settings is not None:
            self._record_settings(cfg_path, settings)

    @staticmethod
    def _record_settings(cfg_path: Path, settings: Mapping[str, Any]) -> None:
        """Keep an appended run's server settings: shared episodes once shared stay recorded."""
        cfg = read_run_config(cfg_path)
        old = dict(cfg.get("mcp_server") or {})
        new = {**dict(settings),
               "shared_episodes": bool(old.get("shared_episodes")) or
               bool(settings.get("shared_episodes"))}
        if old != new:
            cfg["mcp_server"] = new
            cfg_path.write_text(json.dumps(cfg, indent=2, default=str) + "\n")

    def next_index(self) -> int:
        """Return the index the next recorded episode gets."""
        return len(self._ids)

    def unique_id(self, episode_id: str) -> str:
        """Return ``episode_id``, suffixed ``~2``, ``~3`` ... when already recorded."""
        if episode_id not in self._ids:
            return episode_id
        return next(f"{episode_id}~{n}" for n in itertools.count(2)
                    if f"{episode_id}~{n}" not in self._ids)

    def write(self, outcome: EpisodeOutcome) -> None:
        """Append one episode (row, trace, thumbnails), flushed."""
        with self._lock, (self.path / "episodes.jsonl").open("a") as jsonl:
            write_outcome(self.path, outcome, jsonl)
            self._ids.add(outcome.row["episode_id"])
