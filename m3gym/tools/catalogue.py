"""Tables derived from the one tool catalogue (:func:`m3gym.tools.default_registry`).

Scoring reads these instead of keeping its own lists: every table below is computed from the
facets each :class:`~m3gym.tools.base.ToolSpec` declares (kind, aliases, frame behaviour,
equivalence class, content arguments, argument defaults), so adding a tool is one edit.

The sets (:class:`LiveNames`, read-only live views) and mappings below are refreshed in place
when a tool is registered or unregistered (:func:`m3gym.tools.register_tool`), so modules that
imported them see the new tool. The tuples
:data:`CONTRAST_TOOLS` and :data:`UPRIGHT_TOOLS` are the built-in equivalence classes, fixed at
import: the frozen tasks' checkpoints are built from them.

Code mode and the discrete wrapper read the other facets through :func:`code_signature`,
:func:`code_call_ops`, :func:`code_attribute_ops`, :func:`lineage_ops`,
:func:`discrete_default_tools`, :func:`discrete_supported_tools` and :func:`discrete_options`.
"""

from __future__ import annotations

import typing
from collections.abc import Iterable, Iterator, Mapping
from collections.abc import Set as AbstractSet
from typing import Any

from m3gym.tools import default_registry
from m3gym.tools.base import ContentSimilarity, ToolSpec

_SPECS: tuple[ToolSpec, ...] = tuple(default_registry().specs())


def _names(predicate: Any) -> tuple[str, ...]:
    return tuple(s.name for s in _SPECS if predicate(s))


class LiveNames(AbstractSet[str]):
    """A read-only set of names (tools, argument keys) that :func:`refresh` keeps current.

    It compares, combines (``&``, ``|``, ``-`` give a ``frozenset``), hashes and pickles like the
    ``frozenset`` it stands for; only the catalogue changes it.
    """

    def __init__(self, names: Iterable[str] = ()) -> None:
        self._names = frozenset(names)

    @classmethod
    def _from_iterable(cls, it: Iterable[str]) -> frozenset[str]:
        return frozenset(it)

    def __contains__(self, name: object) -> bool:
        return name in self._names

    def __iter__(self) -> Iterator[str]:
        return iter(self._names)

    def __len__(self) -> int:
        return len(self._names)

    def __hash__(self) -> int:
        return hash(self._names)

    def __repr__(self) -> str:
        return f"LiveNames({sorted(self._names)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (frozenset, (tuple(self._names),))

    def _set(self, names: Iterable[str]) -> None:
        self._names = frozenset(names)


VISUAL_TOOL_NAMES: LiveNames = LiveNames()
"""Image operations (the 13 atomic ops and ``enhance``)."""

RETRIEVAL_TOOL_NAMES: LiveNames = LiveNames()
"""Retrieval tools (canonical names)."""

NON_IMAGE_TOOLS: LiveNames = LiveNames()
"""Tools that do not add an image (``answer`` included)."""

FRAME_PRESERVING_TOOLS: LiveNames = LiveNames()
"""Ops whose output keeps the input's normalized frame (pixels change, 0–1 geometry does not)."""

CONTRAST_TOOLS: tuple[str, ...] = _names(lambda s: s.equivalence == "contrast")
"""Tools that count as the same contrast repair, in catalogue order."""

UPRIGHT_TOOLS: tuple[str, ...] = _names(lambda s: s.equivalence == "upright")
"""Tools that can turn evidence upright, in catalogue order."""

TOOL_ALIASES: dict[str, str] = {}
"""Alias → canonical name (the released harness's ``google_search``, ``google_lens_search``)."""

CONTENT_ARGUMENTS: dict[str, Mapping[str, ContentSimilarity]] = {}
"""Tool → {content argument → its typed similarity}."""


def _enum_keys() -> frozenset[str]:
    keys = set()
    for s in _SPECS:
        for key, info in s.args_model.model_fields.items():
            if typing.get_origin(info.annotation) is typing.Literal:
                keys.add(key)
    return frozenset(keys)


ENUM_KEYS: LiveNames = LiveNames()
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


DEFAULT_ARGUMENTS: dict[str, dict[str, Any]] = {}
"""Tool → {argument → default} for the optional arguments with a non-``None`` default."""


def canonical_tool(name: str) -> str:
    """Return the canonical name of ``name`` (itself unless it is an alias)."""
    return TOOL_ALIASES.get(name, name)


_EQUIVALENT: dict[str, tuple[str, ...]] = {}


def equivalent_tools(name: str) -> tuple[str, ...]:
    """Return the tools that do the job of tool ``name`` for a checkpoint (itself included)."""
    name = canonical_tool(name)
    return _EQUIVALENT.get(name, (name,))


def refresh() -> None:
    """Recompute the sets and mappings above, in place, from the current default registry.

    :func:`m3gym.tools.register_tool` and :func:`m3gym.tools.unregister_tool` call it.
    """
    global _SPECS
    _SPECS = tuple(default_registry().specs())
    tables: list[tuple[LiveNames, Iterable[str]]] = [
        (VISUAL_TOOL_NAMES, _names(lambda s: s.kind == "visual")),
        (RETRIEVAL_TOOL_NAMES, _names(lambda s: s.kind == "retrieval")),
        (NON_IMAGE_TOOLS, _names(lambda s: s.frame == "none")),
        (FRAME_PRESERVING_TOOLS, _names(lambda s: s.frame == "preserving")),
        (ENUM_KEYS, _enum_keys()),
    ]
    for table, values in tables:
        table._set(values)
    mappings: list[tuple[dict[str, Any], dict[str, Any]]] = [
        (TOOL_ALIASES, {a.name: s.name for s in _SPECS for a in s.aliases}),
        (CONTENT_ARGUMENTS, {s.name: dict(s.content) for s in _SPECS}),
        (DEFAULT_ARGUMENTS, _defaults()),
        (_EQUIVALENT, {s.name: _names(lambda t, e=s.equivalence: t.equivalence == e)
                       for s in _SPECS if s.equivalence is not None}),
    ]
    for mapping, new in mappings:
        mapping.clear()
        mapping.update(new)


refresh()  # fills the tables above from the built-in catalogue


# ------------------------------------------------------------------ code mode
def code_signature(spec: ToolSpec) -> str:
    """Return how the code-mode prompt shows ``spec``'s function, e.g. ``blur(i, radius=2)``.

    The spec's :attr:`~m3gym.tools.base.ToolSpec.code_signature` when set; otherwise derived from
    the argument model: ``image_index`` as ``i``, then the other arguments (``label`` left out)
    with their defaults.
    """
    if spec.code_signature is not None:
        return spec.code_signature
    parts = []
    for key, info in spec.args_model.model_fields.items():
        if key == "label":
            continue
        if key == "image_index":
            parts.append("i")
        elif info.is_required():
            parts.append(key)
        else:
            default = info.get_default(call_default_factory=True)
            shown = f'"{default}"' if isinstance(default, str) else f"{default:g}" \
                if isinstance(default, float) else str(default)
            parts.append(f"{key}={shown}")
    return f"{spec.name}({', '.join(parts)})"


def code_callable_specs() -> list[ToolSpec]:
    """Return the tools a code cell can call as functions (visual and retrieval, in order)."""
    return [s for s in default_registry().specs() if s.kind in ("visual", "retrieval")]


def code_call_ops() -> dict[str, str]:
    """Return called name → tool for the static pass: each tool's own name and its code names."""
    out: dict[str, str] = {}
    for spec in code_callable_specs():
        out[spec.name] = spec.name
        for name in spec.code_names:
            out[name] = spec.name
    return out


def code_attribute_ops() -> dict[str, str]:
    """Return constant name (used without a call, e.g. ``ImageFilter.SHARPEN``) → tool."""
    return {name: spec.name for spec in code_callable_specs() for name in spec.code_attributes}


def lineage_ops() -> dict[str, str]:
    """Return traced lineage op name → the tool that replays it (``crop_px`` → ``crop``)."""
    return {s.lineage_op: s.name for s in code_callable_specs() if s.lineage_op is not None}


# ------------------------------------------------------------------ discrete wrapper
def discrete_default_tools() -> tuple[str, ...]:
    """Return the discrete wrapper's default tool subset (by ``default_slot``, ``answer`` first)."""
    slotted = [(s.discrete.default_slot, s.name) for s in default_registry().specs()
               if s.discrete is not None and s.discrete.default_slot is not None]
    return tuple(name for _, name in sorted(slotted))


def discrete_supported_tools() -> tuple[str, ...]:
    """Return every tool the discrete wrapper can express: the defaults, then the others."""
    defaults = discrete_default_tools()
    others = tuple(s.name for s in default_registry().specs()
                   if s.discrete is not None and s.name not in defaults)
    return defaults + others


def discrete_options(name: str) -> tuple[dict[str, Any], ...]:
    """Return the argument sets the discrete ``param`` bin selects for tool ``name``.

    ``()`` for a tool without parameters. Raises ``ValueError`` naming the
    reason and the fix when the tool is unknown or has no discretization.
    """
    registry = default_registry()
    if name not in registry:
        raise ValueError(f"tool {name!r} is not in the tool catalogue; register it first "
                        "(m3gym.tools.register_tool)")
    spec = registry.resolve(name, {})[0]
    if spec.discrete is None:
        why = ("it takes free-text arguments" if spec.kind == "retrieval" else
               "its catalogue entry declares no discretization (ToolSpec.discrete is None)")
        raise ValueError(f"tool {name!r} is not supported by the discrete wrapper: {why}; to add "
                        "it, give its ToolSpec discrete=Discretization(options=(...)) with 1, 2, "
                        "3 or 6 argument sets (docs/contributing.md, 'Add a tool')")
    return tuple(dict(o) for o in spec.discrete.options)
