"""Tools: one definition per tool (pydantic arguments + function) and the registry.

:func:`default_registry` returns every tool: the 13 Agentic-MME visual ops plus ``enhance``, the 4
retrieval tools (with the released harness's aliases) and ``answer``. :func:`register_tool` adds
a tool to it, so that new envs show it in their schemas, prompts, MCP tool list, code mode and
(when it declares a :class:`~m3gym.tools.base.Discretization`) the discrete wrapper;
:func:`unregister_tool`, or leaving the ``with register_tool(spec):`` block, removes it again.
"""

from __future__ import annotations

import keyword
from functools import lru_cache
from types import TracebackType

from m3gym.tools.answer import ANSWER_TOOL
from m3gym.tools.base import Discretization, ToolContext, ToolError, ToolOutput, ToolSpec
from m3gym.tools.registry import ToolRegistry

DISCRETE_PARAM_BINS = 6
"""Bins of the discrete wrapper's ``param`` dimension: a tool's option count must divide it."""

RESERVED_NAMES: frozenset[str] = frozenset({
    "images", "save", "np", "numpy", "cv2", "Image", "ImageOps", "ImageFilter", "ImageEnhance",
    "math", "run_python", "code", "start_episode", "parallel_calls", "episode_report"})
"""Names a registered tool may not take: code cells' globals, code mode's and MCP's own tools."""


@lru_cache(maxsize=1)
def default_registry() -> ToolRegistry:
    """Return the registry of all tools (built in, then those added by :func:`register_tool`)."""
    from m3gym.tools.visual import VISUAL_TOOLS
    from m3gym.tools.web import RETRIEVAL_TOOLS

    return ToolRegistry((*VISUAL_TOOLS, *RETRIEVAL_TOOLS, ANSWER_TOOL))


def built_in_tool_names() -> tuple[str, ...]:
    """Return the canonical names of the built-in tools (which cannot be unregistered)."""
    from m3gym.tools.visual import VISUAL_TOOLS
    from m3gym.tools.web import RETRIEVAL_TOOLS

    return tuple(s.name for s in (*VISUAL_TOOLS, *RETRIEVAL_TOOLS, ANSWER_TOOL))


class ToolRegistration:
    """A tool added by :func:`register_tool`; as a context manager it unregisters on exit."""

    def __init__(self, spec: ToolSpec) -> None:
        self.spec = spec

    def __enter__(self) -> ToolSpec:
        return self.spec

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self.spec.name in default_registry():
            unregister_tool(self.spec.name)


def _check_new_tool(spec: ToolSpec) -> None:
    if not isinstance(spec, ToolSpec):
        raise TypeError(f"register_tool takes a ToolSpec, got {type(spec).__name__}")
    if not spec.name.isidentifier() or keyword.iskeyword(spec.name):
        raise ValueError(f"tool name {spec.name!r} must be a Python identifier: code mode "
                         "calls the tool as a function of that name")
    if spec.name in RESERVED_NAMES:
        raise ValueError(f"tool name {spec.name!r} is reserved (it names something code cells "
                         "or the MCP server already provide); choose another")
    if spec.kind not in ("visual", "retrieval"):
        raise ValueError(f"tool {spec.name!r}: kind must be 'visual' or 'retrieval' ('answer' "
                         f"is built in), got {spec.kind!r}")
    registry = default_registry()
    clashes = [n for n in (spec.name, *(a.name for a in spec.aliases)) if n in registry]
    if clashes:
        raise ValueError(f"tool {spec.name!r}: name(s) {clashes} already registered")
    if spec.discrete is not None:
        n = len(spec.discrete.options)
        if n and DISCRETE_PARAM_BINS % n:
            raise ValueError(f"tool {spec.name!r}: {n} discrete options do not divide the "
                             f"discrete wrapper's {DISCRETE_PARAM_BINS} parameter bins; give "
                             "1, 2, 3 or 6")
        for option in spec.discrete.options:
            try:
                spec.validate({"image_index": 0, **option} if "image_index" in
                              spec.args_model.model_fields else dict(option))
            except ToolError as exc:
                raise ValueError(f"tool {spec.name!r}: discrete option {dict(option)} is not "
                                 f"valid: {exc}") from None
        slots = {s.discrete.default_slot for s in registry.specs() if s.discrete is not None}
        if spec.discrete.default_slot is not None and spec.discrete.default_slot in slots:
            raise ValueError(f"tool {spec.name!r}: default_slot {spec.discrete.default_slot} is "
                             "taken; leave it None (the user opts in with tools=...)")


def register_tool(spec: ToolSpec) -> ToolRegistration:
    """Add ``spec`` to :func:`default_registry` (before ``answer``) and refresh the catalogue.

    Envs made afterwards show the tool in their schemas (OpenAI and MCP), the system prompt's
    code-mode section, the MCP server's tool list and code mode (a function of the same name);
    the discrete wrapper accepts it in ``tools=`` when ``spec.discrete`` is set and otherwise
    says why not. Use ``with register_tool(spec): ...`` (or :func:`unregister_tool`) so a
    registration does not outlive its use, e.g. in tests.

    Raises:
        ValueError: a name that is not an identifier, reserved or taken; a kind other than
            ``visual``/``retrieval``; a discretization the wrapper cannot use.
    """
    from m3gym.tools import catalogue

    _check_new_tool(spec)
    default_registry().add(spec, before="answer")  # answer stays the last schema
    catalogue.refresh()
    return ToolRegistration(spec)


def unregister_tool(name: str) -> ToolSpec:
    """Remove a tool added by :func:`register_tool` (built-in tools cannot be removed)."""
    from m3gym.tools import catalogue

    if name in built_in_tool_names():
        raise ValueError(f"tool {name!r} is built in and cannot be unregistered")
    spec = default_registry().remove(name)
    catalogue.refresh()
    return spec


__all__ = ["DISCRETE_PARAM_BINS", "Discretization", "ToolContext", "ToolError", "ToolOutput",
           "ToolRegistration", "ToolRegistry", "ToolSpec", "built_in_tool_names",
           "default_registry", "register_tool", "unregister_tool"]
