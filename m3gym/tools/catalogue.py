"""Tables derived from the one tool catalogue (:func:`m3gym.tools.default_registry`).

Scoring reads these instead of keeping its own lists: every table below is computed from the
facets each :class:`~m3gym.tools.base.ToolSpec` declares (kind, aliases, frame behaviour,
equivalence class, content arguments, argument defaults), so adding a tool is one edit.
"""

from __future__ import annotations

import typing
from collections.abc import Mapping
from typing import Any

from m3gym.tools import default_registry
from m3gym.tools.base import ContentSimilarity, ToolSpec

_SPECS: tuple[ToolSpec, ...] = tuple(default_registry().specs())


def _names(predicate: Any) -> tuple[str, ...]:
    return tuple(s.name for s in _SPECS if predicate(s))


VISUAL_TOOL_NAMES: frozenset[str] = frozenset(_names(lambda s: s.kind == "visual"))
"""Image operations (the 13 atomic ops and ``enhance``)."""

RETRIEVAL_TOOL_NAMES: frozenset[str] = frozenset(_names(lambda s: s.kind == "retrieval"))
"""Retrieval tools (canonical names)."""

NON_IMAGE_TOOLS: frozenset[str] = frozenset(_names(lambda s: s.frame == "none"))
"""Tools that do not add an image (``answer`` included)."""

FRAME_PRESERVING_TOOLS: frozenset[str] = frozenset(_names(lambda s: s.frame == "preserving"))
"""Ops whose output keeps the input's normalized frame (pixels change, 0–1 geometry does not)."""

CONTRAST_TOOLS: tuple[str, ...] = _names(lambda s: s.equivalence == "contrast")
"""Tools that count as the same contrast repair, in catalogue order."""

UPRIGHT_TOOLS: tuple[str, ...] = _names(lambda s: s.equivalence == "upright")
"""Tools that can turn evidence upright, in catalogue order."""

TOOL_ALIASES: Mapping[str, str] = {a.name: s.name for s in _SPECS for a in s.aliases}
"""Alias → canonical name (the released harness's ``google_search``, ``google_lens_search``)."""

CONTENT_ARGUMENTS: Mapping[str, Mapping[str, ContentSimilarity]] = {
    s.name: dict(s.content) for s in _SPECS}
"""Tool → {content argument → its typed similarity}."""


def _enum_keys() -> frozenset[str]:
    keys = set()
    for s in _SPECS:
        for key, info in s.args_model.model_fields.items():
            if typing.get_origin(info.annotation) is typing.Literal:
                keys.add(key)
    return frozenset(keys)


ENUM_KEYS: frozenset[str] = _enum_keys()
"""Argument names whose values are an enumeration (compared exactly)."""


def _defaults() -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for s in _SPECS:
        found = {}
        for key, info in s.args_model.model_fields.items():
            if key == "label" or info.is_required():
                continue
            default = info.get_default(call_default_factory=True)
            if default is not None:
                found[key] = default
        if found:
            out[s.name] = found
    return out


DEFAULT_ARGUMENTS: Mapping[str, Mapping[str, Any]] = _defaults()
"""Tool → {argument → default} for the optional arguments with a non-``None`` default."""


def canonical_tool(name: str) -> str:
    """Return the canonical name of ``name`` (itself unless it is an alias)."""
    return TOOL_ALIASES.get(name, name)


_EQUIVALENT: Mapping[str, tuple[str, ...]] = {
    s.name: _names(lambda t, e=s.equivalence: t.equivalence == e)
    for s in _SPECS if s.equivalence is not None}


def equivalent_tools(name: str) -> tuple[str, ...]:
    """Return the tools that do the job of tool ``name`` for a checkpoint (itself included)."""
    name = canonical_tool(name)
    return _EQUIVALENT.get(name, (name,))
