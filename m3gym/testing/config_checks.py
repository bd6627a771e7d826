"""Checks of a family class before any task is built: its docstring, ``validate()`` and knobs.

Checks 1–3 of :func:`~m3gym.testing.check_family`.
"""

from __future__ import annotations

import inspect
import re
from dataclasses import MISSING, fields
from typing import Any

from m3gym.tasks.registry import FamilyConfig
from m3gym.testing.errors import _fail

DOCSTRING_SECTIONS: tuple[str, ...] = (
    "Scene", "Question", "Why a tool is needed", "Reference trajectory", "Checkpoints",
    "Difficulty", "Config",
)
"""The sections every family docstring has, in this order."""

CHECK_DIFFICULTIES: tuple[float, ...] = (0.0, 0.5, 1.0)
"""Difficulties at which the knobs' config must validate."""

BAD_OPTION = "__not_a_valid_option__"
"""The string a probe puts in a string or string-tuple field."""


# ------------------------------------------------------------------------------ docstring
def docstring_sections(doc: str | None) -> list[str]:
    """Return the Google-style section headers of ``doc`` in order of appearance.

    A header is a line holding only ``Title:`` (at the docstring's base indentation) followed by
    a non-empty, more indented line.
    """
    lines = inspect.cleandoc(doc or "").splitlines()
    found = []
    for i, line in enumerate(lines[:-1]):
        m = re.fullmatch(r"([A-Z][A-Za-z ]*):", line)
        nxt = lines[i + 1]
        if m and nxt.strip() and nxt.startswith((" ", "\t")):
            found.append(m.group(1))
    return found


def check_docstring(cls: type[FamilyConfig]) -> None:
    """Raise unless the family docstring has :data:`DOCSTRING_SECTIONS` in order."""
    found = [s for s in docstring_sections(cls.__doc__) if s in DOCSTRING_SECTIONS]
    missing = [s for s in DOCSTRING_SECTIONS if s not in found]
    if missing:
        raise _fail(cls.name, "docstring",
                    f"{cls.__name__} docstring lacks section(s) {missing} (each a line "
                    f"'Title:' followed by indented text); found {found}")
    if found != list(DOCSTRING_SECTIONS):
        raise _fail(cls.name, "docstring",
                    f"{cls.__name__} docstring sections {found} are not exactly once each in "
                    f"the order {list(DOCSTRING_SECTIONS)}")


# ------------------------------------------------------------------------------ validate
def _is_number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _default(f: Any) -> Any:
    if f.default is not MISSING:
        return f.default
    if f.default_factory is not MISSING:
        return f.default_factory()
    return MISSING


NOT_RANGE_WORDS: tuple[str, ...] = ("shape", "resolution", "size")
"""A 2-number tuple field whose name holds one of these (and not ``range``) is a pair such as a
``(width, height)``, not a ``(lo, hi)`` range: :func:`bad_config_probes` does not reverse it."""


def _is_range_name(name: str) -> bool:
    return "range" in name or not any(w in name for w in NOT_RANGE_WORDS)


def bad_config_probes(cls: type[FamilyConfig]) -> list[tuple[str, dict[str, Any]]]:
    """Return ``(why, overrides)`` pairs that every sane family config must refuse.

    Built from the config's fields and defaults: a 2-number range ``(lo, hi)`` with ``lo < hi``
    reversed (not a ``(w, h)`` pair, see :data:`NOT_RANGE_WORDS`); ``X_min``/``X_max`` scalars
    swapped; a ``*prob*`` field at 1.5 and -0.1; a positive number (size, count, seed, contrast
    ...) at -1; a ``split`` at an unknown name; a non-empty tuple of strings (scenes, transforms,
    attributes) empty.
    """
    defaults = {f.name: _default(f) for f in fields(cls)}
    probes: list[tuple[str, dict[str, Any]]] = []
    for name, value in defaults.items():
        if value is MISSING:
            continue
        if isinstance(value, tuple) and len(value) == 2 and all(map(_is_number, value)) \
                and value[0] < value[1] and _is_range_name(name):
            probes.append((f"reversed range {name}", {name: (value[1], value[0])}))
        elif _is_number(value) and "prob" in name:
            probes.append((f"probability {name} > 1", {name: 1.5}))
            probes.append((f"probability {name} < 0", {name: -0.1}))
        elif _is_number(value) and value > 0:
            probes.append((f"negative {name}", {name: -1 if isinstance(value, int) else -1.0}))
        elif name == "split" and isinstance(value, str):
            probes.append((f"unknown {name}", {name: BAD_OPTION}))
        elif isinstance(value, tuple) and value and all(isinstance(v, str) for v in value):
            probes.append((f"empty {name}", {name: ()}))
        if name.endswith("_min") and _is_number(value):
            other = name[:-4] + "_max"
            hi = defaults.get(other)
            if _is_number(hi) and hi > value:
                probes.append((f"{name} > {other}", {name: hi, other: value}))
    return probes


def refuses(cls: type[FamilyConfig], overrides: dict[str, Any]) -> bool:
    """Return whether building and validating ``cls(**overrides)`` raises ``ValueError``."""
    try:
        cls(**overrides).validate()
    except ValueError:
        return True
    return False


def check_validate(cls: type[FamilyConfig]) -> None:
    """Raise unless the default config validates and every :func:`bad_config_probes` is refused."""
    try:
        cls().validate()
    except Exception as exc:
        raise _fail(cls.name, "validate", f"the default config does not validate: {exc}") \
            from exc
    probes = bad_config_probes(cls)
    if not probes:
        raise _fail(cls.name, "validate",
                    f"{cls.__name__} has no field a generic probe can perturb (no ranges, "
                    "sizes, probabilities or options): give it validated fields")
    for why, overrides in probes:
        try:
            ok = refuses(cls, overrides)
        except Exception as exc:
            raise _fail(cls.name, "validate",
                        f"{cls.__name__}(**{overrides!r}) ({why}) raised "
                        f"{type(exc).__name__}: {exc} instead of ValueError") from exc
        if not ok:
            raise _fail(cls.name, "validate",
                        f"{cls.__name__}(**{overrides!r}).validate() accepted a bad config "
                        f"({why}); it must raise ValueError")


# ------------------------------------------------------------------------------ difficulty
def check_knobs(cls: type[FamilyConfig]) -> None:
    """Raise unless ``difficulty_knobs`` is implemented, names fields and validates at 0/.5/1."""
    names = {f.name for f in fields(cls)}
    knobs: dict[float, dict[str, Any]] = {}
    for d in CHECK_DIFFICULTIES:
        try:
            knobs[d] = dict(cls.difficulty_knobs(d))
        except NotImplementedError as exc:
            raise _fail(cls.name, "difficulty",
                        f"{cls.__name__}.difficulty_knobs is not implemented ({exc}); map "
                        "difficulty in [0, 1] to the family's real knobs") from exc
        unknown = sorted(set(knobs[d]) - names)
        if unknown:
            raise _fail(cls.name, "difficulty",
                        f"difficulty_knobs({d}) names {unknown}, not fields of {cls.__name__} "
                        f"(fields: {sorted(names)})")
        try:
            cls(**knobs[d]).validate()
        except Exception as exc:
            raise _fail(cls.name, "difficulty",
                        f"the config of difficulty_knobs({d}) = {knobs[d]!r} does not validate: "
                        f"{type(exc).__name__}: {exc}") from exc
    if knobs[0.0] == knobs[1.0]:
        raise _fail(cls.name, "difficulty",
                    f"difficulty_knobs(0) == difficulty_knobs(1) = {knobs[0.0]!r}: the knobs "
                    "do not change anything")
