"""Tools: one definition per tool (pydantic arguments + function) and the registry.

:func:`default_registry` returns every tool: the 13 Agentic-MME visual ops plus ``enhance``, the 4
retrieval tools (with the released harness's aliases) and ``answer``.
"""

from __future__ import annotations

from functools import lru_cache

from m3gym.tools.answer import ANSWER_TOOL
from m3gym.tools.base import ToolContext, ToolError, ToolOutput, ToolSpec
from m3gym.tools.registry import ToolRegistry


@lru_cache(maxsize=1)
def default_registry() -> ToolRegistry:
    """Return the registry of all built-in tools (visual, retrieval, answer)."""
    from m3gym.tools.visual import VISUAL_TOOLS
    from m3gym.tools.web import RETRIEVAL_TOOLS

    return ToolRegistry((*VISUAL_TOOLS, *RETRIEVAL_TOOLS, ANSWER_TOOL))


__all__ = ["ToolContext", "ToolError", "ToolOutput", "ToolRegistry", "ToolSpec",
           "default_registry"]
