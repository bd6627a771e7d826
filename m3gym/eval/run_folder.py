"""The trust boundary of a run folder: every file ``m3gym eval`` wrote is checked as it is read.

A run folder (``config.json``, ``episodes.jsonl``, ``traces/``, ``thumbs/``, ``summary.json``)
is read back by ``m3gym eval --resume`` and ``m3gym report``, possibly after a crash, a full
disk, a hand edit or someone else's tampering. Nothing in it is trusted:

* a file of the layout that is something else (a directory, a broken symbolic link, a FIFO,
  which would block a reader forever), that cannot be read (permissions) or that is not UTF-8
  raises :class:`RunFolderError`, a :class:`~m3gym.config_errors.ConfigError` naming the file
  and the problem (``m3gym`` prints it as one ``m3gym: error:`` line, exit status 2);
* ``config.json`` is checked against :data:`RUN_CONFIG_SCHEMA` (the fields ``m3gym eval`` and
  the MCP server write): a value of the wrong type is named with its key and the type expected;
* a trace (``traces/<episode>.json``) is checked against :data:`TRACE_SCHEMA` (the fields the
  report reads) by :func:`trace_problem`; the report skips a bad one and names it.

Schemas are small nested Python values (:func:`schema_problem`): ``str``, ``int``, ``float``
(any number), ``bool``, ``dict`` (any object), ``list`` (any list), ``object`` (anything), a
``dict`` of key -> schema (an object whose listed keys, where present, match; :class:`Required`
marks a key that must be there), ``[schema]`` (a list of such items) and a ``tuple`` of schemas
(any one of them; ``None`` allows null). Keys a schema does not list are not checked (newer
m3gym versions may add some).
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from m3gym.config_errors import ConfigError, describe


class RunFolderError(ConfigError):
    """A run folder's file is of the wrong kind, unreadable or malformed (bad input, not a bug).

    The message reads ``<file>: <problem>`` or ``<file>: key 'seed': expected an integer, got
    'zero'``; :attr:`source` is the file, :attr:`key` the dotted key where one is at fault.
    """

    def __reduce__(self) -> tuple[Any, ...]:
        return (_rebuild, (self.source, self.problem, self.key, self.line, self.column))


def _rebuild(source: str | None, problem: str, key: str | None, line: int | None,
             column: int | None) -> RunFolderError:
    return RunFolderError(source, problem, key=key, line=line, column=column)


# --------------------------------------------------------------------------- kinds of files
def path_kind(path: Path) -> str:
    """Return what ``path`` is: ``file``, ``folder``, ``missing`` or a description of another kind.

    Symbolic links are followed (a link to a file is a ``file``); a link whose target does not
    exist is ``a broken symbolic link``.
    """
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "a broken symbolic link" if os.path.islink(path) else "missing"
    except NotADirectoryError:
        return "missing"  # a parent is a file: nothing can be here
    except OSError as exc:
        return f"not accessible ({exc.strerror})"
    if stat.S_ISREG(st.st_mode):
        return "file"
    if stat.S_ISDIR(st.st_mode):
        return "folder"
    if stat.S_ISFIFO(st.st_mode):
        return "a FIFO (named pipe)"
    if stat.S_ISSOCK(st.st_mode):
        return "a socket"
    if stat.S_ISCHR(st.st_mode) or stat.S_ISBLK(st.st_mode):
        return "a device"
    return "not a regular file"


def _kind_phrase(kind: str) -> str:
    return "a directory" if kind == "folder" else kind


def check_file(path: Path, required: bool = False, why: str = "") -> bool:
    """Return ``True`` for a regular file, ``False`` when ``path`` is missing (and not required).

    Raises :class:`RunFolderError` for anything else (a directory, a broken link, a FIFO ...),
    and for a missing ``required`` file (``why`` says what needs it).
    """
    kind = path_kind(path)
    if kind == "file":
        return True
    if kind == "missing":
        if required:
            raise RunFolderError(path, f"missing{why}")
        return False
    raise RunFolderError(path, f"is {_kind_phrase(kind)}, not a file{why}")


def check_folder(path: Path, why: str = "") -> bool:
    """Return ``True`` for a folder, ``False`` when ``path`` is missing; raise for anything else."""
    kind = path_kind(path)
    if kind == "folder":
        return True
    if kind == "missing":
        return False
    what = "a file" if kind == "file" else kind
    raise RunFolderError(path, f"is {what}, not a folder{why}")


def read_bytes(path: Path) -> bytes:
    """Return the bytes of a regular file; :class:`RunFolderError` names why they cannot be read.

    A missing file raises ``FileNotFoundError`` (callers decide whether that is fine).
    """
    path = Path(path)
    if not check_file(path):
        raise FileNotFoundError(f"{path}: no such file")
    try:
        return path.read_bytes()
    except OSError as exc:
        raise RunFolderError(path, f"cannot be read ({exc.strerror or exc})") from None


def read_text(path: Path) -> str:
    """Return the UTF-8 text of a regular file (:func:`read_bytes`; not UTF-8 is named too)."""
    data = read_bytes(path)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise RunFolderError(path, f"not UTF-8 text (byte {exc.start})") from None


FILES: tuple[str, ...] = ("config.json", "episodes.jsonl", "summary.json")
"""The files of a run folder (each, where present, must be a regular file)."""

FOLDERS: tuple[str, ...] = ("traces", "thumbs")
"""The folders of a run folder (each, where present, must be a folder)."""


def check_layout(folder: Path, files: tuple[str, ...] = FILES,
                 folders: tuple[str, ...] = FOLDERS) -> None:
    """Raise :class:`RunFolderError` for the first of ``files`` / ``folders`` of the wrong kind.

    Missing ones are fine (a run stopped before its first episode has no ``episodes.jsonl``).
    ``m3gym eval --resume`` checks the whole layout before anything runs, since it writes each.
    """
    why = " (move it away, or choose another --out)"
    for name in files:
        check_file(folder / name, why=why)
    for name in folders:
        check_folder(folder / name, why=why)


# --------------------------------------------------------------------------- schemas
@dataclass(frozen=True)
class Required:
    """Marks a key of an object schema that must be present (its value matches ``schema``)."""

    schema: Any


def schema_text(schema: Any) -> str:
    """Return what a schema expects, in words (``an integer``, ``a list of strings`` ...)."""
    if isinstance(schema, Required):
        return schema_text(schema.schema)
    if schema is None:
        return "null"
    if isinstance(schema, tuple):
        return " or ".join(schema_text(s) for s in schema)
    if isinstance(schema, list):
        inner = schema_text(schema[0])
        plural = {"a string": "strings", "an integer": "integers", "a number": "numbers",
                  "an object": "objects", "a list": "lists"}.get(inner, inner)
        return f"a list of {plural}"
    if isinstance(schema, Mapping):
        return "an object"
    return {str: "a string", int: "an integer", float: "a number", bool: "true or false",
            dict: "an object", list: "a list", object: "anything"}[schema]


def _matches_type(value: Any, schema: Any) -> bool:
    if schema is object:
        return True
    if schema is None:
        return value is None
    if schema is int:
        return isinstance(value, int) and not isinstance(value, bool)
    if schema is float:
        return isinstance(value, (int, float)) and not isinstance(value, bool)
    if schema is bool:
        return isinstance(value, bool)
    if schema is str:
        return isinstance(value, str)
    if schema is dict or isinstance(schema, Mapping):
        return isinstance(value, dict) and all(isinstance(k, str) for k in value)
    if schema is list or isinstance(schema, list):
        return isinstance(value, list)
    raise TypeError(f"not a schema: {schema!r}")


def schema_problem(value: Any, schema: Any, key: str = "") -> tuple[str, str] | None:
    """Return ``(dotted key, problem)`` for the first part of ``value`` not matching ``schema``.

    ``None`` when it matches. The key reads ``steps[2].calls[0].output_index``; the problem
    ``expected an integer, got 'x'``.
    """
    if isinstance(schema, Required):
        schema = schema.schema
    if isinstance(schema, tuple):
        for option in schema:
            if _matches_type(value, option):
                return schema_problem(value, option, key) if option is not None else None
        return key, f"expected {schema_text(schema)}, got {describe(value)}"
    if not _matches_type(value, schema):
        return key, f"expected {schema_text(schema)}, got {describe(value)}"
    if isinstance(schema, list):
        for i, item in enumerate(value):
            found = schema_problem(item, schema[0], f"{key}[{i}]")
            if found is not None:
                return found
    elif isinstance(schema, Mapping):
        for name, sub in schema.items():
            where = f"{key}.{name}" if key else name
            if name not in value:
                if isinstance(sub, Required):
                    return where, "missing"
                continue
            found = schema_problem(value[name], sub, where)
            if found is not None:
                return found
    return None


RUN_CONFIG_SCHEMA: dict[str, Any] = {
    # EvalConfig (m3gym.eval.config), as EvalConfig.to_dict writes it
    "envs": [str], "agent": str, "episodes": int, "split": str, "seed": int,
    "reward": (str, None),  # the MCP server's run folders record no reward preset
    "workers": int, "agent_args": dict, "env_args": dict, "max_consecutive_infra": int,
    "thumb_size": int, "max_thumbs": int, "samples": int, "manifest": (str, None),
    "allow_changed_tasks": bool, "judge_endpoint": (str, None), "judge_model": (str, None),
    # what run_eval adds
    "episode_ids": [str],
    "versions": (dict, None),
    "frozen_tasks": ({"manifest": (str, None), "version": object, "checked": int,
                      "changed": [str], "allowed_changed_tasks": bool}, None),
    "records": ({"source": Required(str), "sha256": Required(str)}, None),
}
"""The schema of a run's ``config.json`` (:func:`schema_problem`): every field ``m3gym eval``
(and the MCP server's run folders) write. Keys not listed are not checked; none is required
(older runs lack ``versions``, MCP runs most of them)."""


def check_run_config(data: Any, path: str | Path) -> dict[str, Any]:
    """Return ``data`` as the run config of ``path``, or raise :class:`RunFolderError`.

    Not an object, or a value not of its :data:`RUN_CONFIG_SCHEMA` type, is named (file, key,
    expected type, value found).
    """
    if not isinstance(data, dict):
        got = "nothing (null)" if data is None else describe(data)
        raise RunFolderError(path, f"expected a JSON object (the run's config), got {got}")
    found = schema_problem(data, RUN_CONFIG_SCHEMA)
    if found is not None:
        key, problem = found
        raise RunFolderError(path, problem, key=key or None)
    return dict(data)


RECORD_SCHEMA: dict[str, Any] = {
    "episode_id": Required(str), "status": Required(str), "index": int,
    "reward": (float, None), "metrics": (dict, None),
}
"""The schema of a line of ``episodes.jsonl``: a line that does not match is not an episode
row (named, left out of every count; ``--resume`` removes it, keeping a backup, and reruns
its episode). The summary and the report read the other fields defensively."""


_CALL: dict[str, Any] = {"arguments": object, "output_index": object}
_STEP: dict[str, Any] = {
    "reward": float, "reward_components": (dict, None), "checkpoints_passed": ([str], None),
    "calls": [_CALL], "parse_errors": list, "code_cells": object,
}
TRACE_SCHEMA: dict[str, Any] = {
    "task": ({
        "answer": ({"variants": (list, None), "tolerance": (float, None)}, None),
        "reference": ([[dict]], None),
        "checkpoints": ([{"id": Required((str, int)), "description": object}], None),
    }, None),
    "images": [{"index": Required(int), "thumb": (str, None), "shape": ([int], None)}],
    "steps": [_STEP],
    "audit": ({
        "checkpoints": ({"results": ([{"checkpoint_id": (str, int, None)}], None)}, None),
        "alignment": ({"matches": ([{"sim": float}], None)}, None),
    }, None),
    "metrics": (dict, None),
    "recreate": (dict, None),
}
"""The schema of a stored trace (``traces/<episode>.json``): the fields the report's viewer and
the peer metric tables read, with the types they need."""


def trace_problem(data: Any) -> str | None:
    """Return why ``data`` (a parsed trace file) cannot be shown, or ``None`` when it can."""
    if not isinstance(data, dict):
        got = "null" if data is None else describe(data)
        return f"expected a JSON object (an episode trace), got {got}"
    found = schema_problem(data, TRACE_SCHEMA)
    if found is None:
        return None
    key, problem = found
    return f"key {key!r}: {problem}"


def episode_trace_path(folder: Path, episode_id: Any) -> tuple[Path | None, str | None]:
    """Return ``(traces/<episode>.json, None)`` of a run folder, or ``(None, reason)``.

    An episode id comes from ``episodes.jsonl`` (not trusted): one that is not a plain file name
    (a path separator, ``..``, a NUL byte) would read a file outside ``traces/``; it is refused.
    """
    ep = str(episode_id)
    if not ep or ep in (".", "..") or any(c in ep for c in "/\\\0"):
        return None, f"episode id {describe(ep)} is not a plain file name; its trace is not read"
    return folder / "traces" / f"{ep}.json", None


def read_trace_checked(path: Path) -> tuple[dict[str, Any] | None, str | None]:
    """Return ``(trace, None)``, ``(None, None)`` for a missing file, or ``(None, reason)``.

    The reason names why the file cannot be used: not a regular file, unreadable, not UTF-8, not
    JSON (line and column), or not of :data:`TRACE_SCHEMA` (the key and the type expected).
    """
    from m3gym.config_errors import parse_json_text

    try:
        data = parse_json_text(read_text(path), None)
    except FileNotFoundError:
        return None, None
    except ConfigError as exc:  # RunFolderError included: the file is named by the caller
        where = f"line {exc.line}, column {exc.column}: " if exc.line is not None else ""
        return None, where + exc.problem
    problem = trace_problem(data)
    return (None, problem) if problem is not None else (data, None)
