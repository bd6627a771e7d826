"""One error for every malformed configuration: it names the file (or argument), key and problem.

:class:`ConfigError` (a ``ValueError``) reads like ``bad.yaml: line 3, column 5: could not
parse YAML: mapping values are not allowed here`` or ``bad.yaml: line 2, column 9: key
'm3_weights.multi_hop': expected a number, got 'abc'``. The ``m3gym`` command prints it as one
``m3gym: error: ...`` line (exit status 2); library calls raise it.

:func:`read_yaml_file` and :func:`read_json_file` read a file into plain data and raise
:class:`ConfigError` for text that does not parse (with the line and column) or that repeats a
key (which ``yaml.safe_load`` / ``json.loads`` would silently resolve to the last value).
:class:`ConfigSource` checks the values read, raising errors that point at the key (and, for a
YAML file, the key's line).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

KeyMarks = Mapping[str, tuple[int, int]]
"""Dotted key (``m3_weights.multi_hop``, ``arms[2]``) -> 1-based (line, column) where it is."""


class ConfigError(ValueError):
    """A configuration value or file is malformed; the message names where, which key, and why.

    Attributes:
        source: the file (or argument, e.g. ``--agent-arg``) the value came from, or ``None``.
        problem: what is wrong.
        key: the dotted key of the value, or ``None`` when the problem is not one key's.
        line / column: 1-based position in ``source``, where known.
    """

    def __init__(self, source: str | Path | None, problem: str, *, key: str | None = None,
                 line: int | None = None, column: int | None = None,
                 show_key: bool = True) -> None:
        self.source = None if source is None else str(source)
        self.problem = problem
        self.key = key
        self.line = line
        self.column = column
        self._show_key = show_key
        parts = [self.source] if self.source else []
        if line is not None:
            parts.append(f"line {line}" + (f", column {column}" if column is not None else ""))
        if key is not None and show_key:
            parts.append(f"key {key!r}")
        super().__init__(": ".join([*parts, problem]))

    def __reduce__(self) -> tuple[Any, ...]:
        # picklable across worker processes (the default would call __init__(message))
        return (_rebuild, (self.source, self.problem, self.key, self.line, self.column,
                           self._show_key))


def _rebuild(source: str | None, problem: str, key: str | None, line: int | None,
             column: int | None, show_key: bool) -> ConfigError:
    return ConfigError(source, problem, key=key, line=line, column=column, show_key=show_key)


def describe(value: Any, limit: int = 60) -> str:
    """Return a short ``repr`` of a value for an error message (cut at ``limit`` characters)."""
    text = repr(value)
    return text if len(text) <= limit else text[:limit - 1] + "…"


def _read_text(path: Path) -> str:
    if not path.is_file():
        raise FileNotFoundError(f"{path}: no such file")
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise ConfigError(path, f"not UTF-8 text (byte {exc.start})") from None


# --------------------------------------------------------------------------- YAML
def parse_yaml_text(text: str, source: str | Path | None) -> tuple[Any, dict[str, tuple[int, int]]]:
    """Return the data of a YAML text and the position of every mapping key's value.

    Raises :class:`ConfigError` naming ``source``, the line and the column when the text does
    not parse, and for a key repeated within one mapping.
    """
    try:
        node = yaml.compose(text, Loader=yaml.SafeLoader)
        data = yaml.safe_load(text)
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        problem = exc.problem or exc.context or "malformed"
        if exc.context and exc.problem and exc.context_mark is not None:
            problem += f" ({exc.context} started on line {exc.context_mark.line + 1})"
        raise ConfigError(source, f"could not parse YAML: {problem}",
                          line=mark.line + 1 if mark else None,
                          column=mark.column + 1 if mark else None) from None
    except yaml.YAMLError as exc:
        raise ConfigError(source, f"could not parse YAML: {exc}") from None
    except RecursionError:
        raise ConfigError(source, "could not parse YAML: nested too deeply") from None
    except (ValueError, TypeError) as exc:  # a constructor's refusal, e.g. the date 2001-02-30
        raise ConfigError(source, f"could not parse YAML: {exc}") from None
    marks: dict[str, tuple[int, int]] = {}
    if node is not None:
        _collect_marks(node, "", marks, source, set())
    return data, marks


def _collect_marks(node: yaml.Node, prefix: str, marks: dict[str, tuple[int, int]],
                   source: str | Path | None, seen_nodes: set[int]) -> None:
    if id(node) in seen_nodes:  # an alias met again (possibly a cycle): marked already
        return
    seen_nodes.add(id(node))
    if isinstance(node, yaml.MappingNode):
        seen: set[str] = set()
        for key_node, value_node in node.value:
            name = str(key_node.value) if isinstance(key_node, yaml.ScalarNode) else "?"
            key = f"{prefix}.{name}" if prefix else name
            if name in seen:
                raise ConfigError(source, "duplicate key (a later value would silently replace "
                                  "the first)", key=key, line=key_node.start_mark.line + 1,
                                  column=key_node.start_mark.column + 1)
            seen.add(name)
            marks[key] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            _collect_marks(value_node, key, marks, source, seen_nodes)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            key = f"{prefix}[{i}]"
            marks[key] = (item.start_mark.line + 1, item.start_mark.column + 1)
            _collect_marks(item, key, marks, source, seen_nodes)


def read_yaml_file(path: str | Path) -> tuple[Any, dict[str, tuple[int, int]]]:
    """Return the data of a YAML file and its key positions (see :func:`parse_yaml_text`).

    Raises ``FileNotFoundError`` for a missing file and :class:`ConfigError` for one that is
    not UTF-8 or not valid YAML.
    """
    path = Path(path)
    return parse_yaml_text(_read_text(path), path)


# --------------------------------------------------------------------------- JSON
def _no_duplicates(source: str | Path | None) -> Any:
    def hook(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in pairs:
            if key in out:
                raise ConfigError(source, "duplicate key (a later value would silently replace "
                                  "the first)", key=key)
            out[key] = value
        return out

    return hook


def parse_json_text(text: str, source: str | Path | None) -> Any:
    """Return the data of a JSON text; :class:`ConfigError` names ``source``, line and column."""
    try:
        return json.loads(text, object_pairs_hook=_no_duplicates(source))
    except json.JSONDecodeError as exc:
        raise ConfigError(source, f"could not parse JSON: {exc.msg}", line=exc.lineno,
                          column=exc.colno) from None
    except RecursionError:
        raise ConfigError(source, "could not parse JSON: nested too deeply") from None
    except ValueError as exc:  # e.g. an integer of more than 4300 digits
        if isinstance(exc, ConfigError):
            raise
        raise ConfigError(source, f"could not parse JSON: {exc}") from None


def read_json_file(path: str | Path) -> Any:
    """Return the data of a JSON file.

    Raises ``FileNotFoundError`` for a missing file and :class:`ConfigError` (file, line,
    column, problem) for one that is not UTF-8, not valid JSON or repeats a key.
    """
    path = Path(path)
    return parse_json_text(_read_text(path), path)


# --------------------------------------------------------------------------- checking values
@dataclass(frozen=True)
class ConfigSource:
    """Checks values read from one source and raises :class:`ConfigError` pointing at them.

    Attributes:
        name: the file or argument the values came from (``None``: a mapping given in code).
        marks: positions of the keys in the file (from :func:`read_yaml_file`).
    """

    name: str | None
    marks: KeyMarks = field(default_factory=dict)

    def error(self, problem: str, key: str | None = None) -> ConfigError:
        """Return a :class:`ConfigError` for ``key`` (with its line and column when known)."""
        line, column = self.marks.get(key, (None, None)) if key is not None else (None, None)
        return ConfigError(self.name, problem, key=key, line=line, column=column)

    def mapping(self, value: Any, key: str | None = None, what: str = "a mapping") -> Mapping[
            str, Any]:
        """Return ``value`` if it is a mapping with string keys, else raise."""
        if value is None and key is None:
            raise self.error(f"expected {what}, got nothing (empty)")
        if not isinstance(value, Mapping):
            raise self.error(f"expected {what}, got {describe(value)}", key)
        for k in value:
            if not isinstance(k, str):
                raise self.error(f"keys must be strings, got {describe(k)}", key)
        return value

    def known_keys(self, data: Mapping[str, Any], known: Iterable[str],
                   prefix: str | None = None) -> None:
        """Raise for the first key of ``data`` not in ``known`` (naming the known ones).

        The message reads ``unknown key 'm3_weights.multi_hopp' (known: multi_hop, ...)``.
        """
        allowed = sorted(known)
        for k in data:
            if k not in allowed:
                key = f"{prefix}.{k}" if prefix else k
                line, column = self.marks.get(key, (None, None))
                raise ConfigError(self.name, f"unknown key {key!r} (known: {', '.join(allowed)})",
                                  key=key, line=line, column=column, show_key=False)

    def require(self, data: Mapping[str, Any], keys: Iterable[str],
                prefix: str | None = None) -> None:
        """Raise for the first of ``keys`` missing from ``data``."""
        for k in keys:
            if k not in data:
                raise self.error("missing", f"{prefix}.{k}" if prefix else k)

    def number(self, value: Any, key: str) -> float:
        """Return ``value`` as a float if it is an int or float (not a bool or a string)."""
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise self.error(f"expected a number, got {describe(value)}", key)
        return float(value)

    def integer(self, value: Any, key: str) -> int:
        """Return ``value`` if it is an int (a float with an integral value is accepted)."""
        if isinstance(value, float) and value.is_integer():
            return int(value)
        if isinstance(value, bool) or not isinstance(value, int):
            raise self.error(f"expected an integer, got {describe(value)}", key)
        return value

    def boolean(self, value: Any, key: str) -> bool:
        """Return ``value`` if it is ``true`` or ``false``."""
        if not isinstance(value, bool):
            raise self.error(f"expected true or false, got {describe(value)}", key)
        return value

    def string(self, value: Any, key: str) -> str:
        """Return ``value`` if it is a string."""
        if not isinstance(value, str):
            raise self.error(f"expected a string, got {describe(value)}", key)
        return value

    def sequence(self, value: Any, key: str) -> list[Any]:
        """Return ``value`` as a list if it is a list or tuple."""
        if not isinstance(value, (list, tuple)):
            raise self.error(f"expected a list, got {describe(value)}", key)
        return list(value)
