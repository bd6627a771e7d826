"""Reading and repairing a run's ``episodes.jsonl``: one line per finished episode attempt.

Lines are read back as untrusted input: a line that is not an episode row (a line cut by a
crash, any other damage) is an :class:`UnreadableLine`, named by ``m3gym report`` and removed
(with a backup) by ``m3gym eval --resume`` (:func:`drop_unreadable_lines`). The latest line of
an episode is its row (:func:`read_episode_rows`).
"""

from __future__ import annotations

import json
import os
import time
import warnings
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from m3gym.deprecation import renamed_names
from m3gym.eval.run_folder import (
    RECORD_SCHEMA,
    RunFolderError,
    check_file,
    read_bytes,
    schema_problem,
)

RECORD_KEYS: tuple[str, ...] = ("episode_id", "status")
"""Keys every line of ``episodes.jsonl`` must have (string values) to count as an episode row."""

EXCERPT_CHARS: int = 60
"""Characters of an unreadable line kept in :attr:`UnreadableLine.excerpt`."""


@dataclass(frozen=True)
class UnreadableLine:
    """A line of a run's ``episodes.jsonl`` that is not an episode row, so counts nowhere.

    A crash mid-write leaves such a line (cut JSON); so does any other damage to the file.
    ``m3gym report`` names each one; ``m3gym eval --resume`` names them and removes them
    (:func:`drop_unreadable_lines`, keeping a backup), and their episodes run again.

    Attributes:
        path: the file.
        line: 1-based line number.
        excerpt: the line's first :data:`EXCERPT_CHARS` characters (undecodable bytes replaced).
        reason: why it is not a row: the JSON error, or what the parsed value is or lacks.
    """

    path: Path
    line: int
    excerpt: str
    reason: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.reason}; the line starts {self.excerpt!r}"


def _line_problem(raw: bytes) -> tuple[dict[str, Any] | None, str]:
    """Return ``(row, "")`` for a valid row line, else ``(None, reason)``."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        return None, f"not UTF-8 text (byte {exc.start})"
    try:
        row = json.loads(text)
    except json.JSONDecodeError as exc:
        return None, f"could not parse JSON: {exc.msg} (column {exc.colno})"
    except (ValueError, RecursionError) as exc:  # e.g. an integer of over 4300 digits
        return None, f"could not parse JSON: {exc}"
    if not isinstance(row, dict):
        kind = {list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
            type(row), "a number")
        return None, f"not an episode row: {kind} in JSON, not an object"
    for key in RECORD_KEYS:
        if key not in row:
            return None, f"not an episode row: no {key!r}"
        if not isinstance(row[key], str):
            return None, f"not an episode row: {key!r} is not a string"
    index = row.get("index", 0)
    if isinstance(index, bool) or not isinstance(index, int):
        return None, "not an episode row: 'index' is not an integer"
    found = schema_problem(row, RECORD_SCHEMA)
    if found is not None:
        return None, f"not an episode row: key {found[0]!r}: {found[1]}"
    return row, ""


def _scan_lines(data: bytes) -> Iterator[tuple[int, bytes, dict[str, Any] | None, str]]:
    """Yield ``(line number, raw bytes, row or None, reason)`` for each non-blank line."""
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            row, reason = _line_problem(raw)
            yield number, raw, row, reason


def _unreadable(path: Path, number: int, raw: bytes, reason: str) -> UnreadableLine:
    excerpt = raw.decode("utf-8", errors="replace").strip()[:EXCERPT_CHARS]
    return UnreadableLine(path, number, excerpt, reason)


def read_episode_rows_checked(path: Path) -> tuple[list[dict[str, Any]], list[UnreadableLine]]:
    """Return the latest row of each episode (ordered by index) and the unreadable lines.

    A line is unreadable when it is not UTF-8 JSON, not an object, or lacks a string
    ``episode_id`` / ``status`` (:data:`RECORD_KEYS`), has a non-integer ``index`` or a value
    of another type than :data:`~m3gym.eval.run_folder.RECORD_SCHEMA` says. Blank lines
    carry nothing and are skipped. A missing file has no rows; a path that is not a regular
    file (a directory, a broken link, a FIFO) or cannot be read raises
    :class:`~m3gym.eval.run_folder.RunFolderError` naming it.
    """
    path = Path(path)
    latest: dict[str, dict[str, Any]] = {}
    bad: list[UnreadableLine] = []
    if not check_file(path):
        return [], bad
    for number, raw, row, reason in _scan_lines(read_bytes(path)):
        if row is None:
            bad.append(_unreadable(path, number, raw, reason))
        else:
            latest[row["episode_id"]] = row
    rows = sorted(latest.values(), key=lambda r: (r.get("index", 0), r["episode_id"]))
    return rows, bad


def unreadable_message(lines: Sequence[UnreadableLine]) -> str:
    """Return one line counting unreadable lines and naming each (``file:line``)."""
    if not lines:
        return ""
    files = sorted({str(u.path) for u in lines})
    n = len(lines)
    where = ", ".join(f"{u.path}:{u.line}" for u in lines)
    return f"{n} unreadable line{'s' if n != 1 else ''} in {', '.join(files)}: {where}"


def read_episode_rows(path: Path) -> list[dict[str, Any]]:
    """Return the latest row of each episode in ``episodes.jsonl`` (ordered by index).

    Unreadable lines are left out with a ``UserWarning`` naming each; use
    :func:`read_episode_rows_checked` to get them as data.
    """
    rows, bad = read_episode_rows_checked(path)
    if bad:
        warnings.warn(f"{unreadable_message(bad)} (left out of the rows)", UserWarning,
                      stacklevel=2)
    return rows


def _backup_path(path: Path) -> Path:
    stamp = time.strftime("%Y%m%d-%H%M%S")
    candidate = path.with_name(f"{path.name}.bak-{stamp}")
    n = 2
    while candidate.exists():
        candidate = path.with_name(f"{path.name}.bak-{stamp}-{n}")
        n += 1
    return candidate


def drop_unreadable_lines(path: Path) -> tuple[list[UnreadableLine], Path | None]:
    """Remove the unreadable lines (and blank lines) of ``path``; return them and the backup.

    Nothing is written when every line is a row (the backup is then ``None``). Otherwise the
    original bytes are first copied to ``<name>.bak-<YYYYmmdd-HHMMSS>`` (a ``-2``, ``-3`` ...
    suffix where that exists: an earlier backup is never overwritten), then the row lines,
    byte for byte and in order, replace the file atomically (temporary file + ``os.replace``).
    A path that is not a regular file raises :class:`~m3gym.eval.run_folder.RunFolderError`.
    """
    path = Path(path)
    if not check_file(path):
        return [], None
    original = read_bytes(path)
    bad: list[UnreadableLine] = []
    kept: list[bytes] = []
    for number, raw, row, reason in _scan_lines(original):
        if row is None:
            bad.append(_unreadable(path, number, raw, reason))
        else:
            kept.append(raw)
    if not bad:
        return [], None
    backup = _backup_path(path)
    with backup.open("xb") as f:  # exclusive: never replaces an existing file
        f.write(original)
        f.flush()
        os.fsync(f.fileno())
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    with tmp.open("wb") as f:
        f.write(b"".join(raw + b"\n" for raw in kept))
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    return bad, backup


def terminate_last_line(path: Path) -> None:
    """End the file's last line if it lacks a newline, so the next row starts on its own line.

    (A line cut by a crash is removed first, on ``--resume``, by :func:`drop_unreadable_lines`.)
    A path that is not a regular file raises :class:`~m3gym.eval.run_folder.RunFolderError`.
    """
    if not check_file(path):
        return
    try:
        if path.stat().st_size:
            with path.open("rb") as f:
                f.seek(-1, 2)
                last = f.read(1)
            if last != b"\n":
                with path.open("a") as f:
                    f.write("\n")
    except OSError as exc:
        raise RunFolderError(path, f"cannot be read or appended to ({exc.strerror or exc})"
                             ) from None


__getattr__ = renamed_names(__name__, {
    "read_records": ("m3gym.eval.episodes_jsonl.read_episode_rows", lambda: read_episode_rows),
    "read_records_checked": ("m3gym.eval.episodes_jsonl.read_episode_rows_checked",
                             lambda: read_episode_rows_checked),
})
"""The old names ``read_records`` / ``read_records_checked`` (``records`` is the user's data)."""
