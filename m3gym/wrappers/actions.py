"""The discrete wrapper's action space: its dimensions, the tools it offers, and decoding.

The ``MultiDiscrete([n_tools, 3, 14, 6, max_choices])`` action of
:class:`~m3gym.wrappers.discrete.DiscreteToolWrapper` (its module docstring has the tables):
the names of the ``source`` and ``region`` dimensions, the tools and their ``param`` options
(the tool catalogue's ``discrete`` facets), the action table, and the helpers that map actions
to tool calls and back (:func:`region_box`, :func:`nearest_option`, :class:`DecodedAction`).

The expert's box overlap is :func:`m3gym.geometry.box_iou` (re-exported here), the one IoU of the
package: 1 for two identical boxes, zero-area ones included. The expert only compares a reference
``bbox_2d`` with the 14 regions, which all have area, so that rule never picks a region: a
zero-area reference box overlaps no region (IoU 0 with each) and maps to region 0, the full image.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from m3gym.geometry import box_iou  # noqa: F401 - re-exported (the discrete wrapper's expert)
from m3gym.tools import DISCRETE_PARAM_BINS
from m3gym.tools.catalogue import (
    discrete_default_tools,
    discrete_options,
    discrete_supported_tools,
)

SOURCES: tuple[str, ...] = ("latest", "original", "previous")
"""Names of the ``source`` dimension."""

REGION_NAMES: tuple[str, ...] = (
    "full", "q_tl", "q_tr", "q_bl", "q_br",
    *(f"g{r}{c}" for r in range(3) for c in range(3)),
)
"""Names of the 14 crop regions: full image, 4 quadrants, 3x3 grid (``g<row><col>``)."""

N_PARAM_BINS = DISCRETE_PARAM_BINS
"""Size of the ``param`` dimension, 6 (a multiple of every tool's option count, which
:func:`m3gym.tools.register_tool` checks)."""

DEFAULT_TOOLS: tuple[str, ...] = discrete_default_tools()
"""The default tool subset (``answer`` first): the catalogue's tools with a ``default_slot``."""

SUPPORTED_TOOLS: tuple[str, ...] = discrete_supported_tools()
"""Every built-in tool the discrete action space can express (those with a ``discrete`` facet).

A tool added with :func:`m3gym.tools.register_tool` is accepted when it declares a
:class:`~m3gym.tools.base.Discretization` (:func:`supported_tools` sees it); otherwise the
wrapper raises an error saying why and how to add one."""

TOOL_OPTIONS: dict[str, tuple[dict[str, Any], ...]] = {
    name: opts for name in SUPPORTED_TOOLS if (opts := discrete_options(name))}
"""Arguments selected by the ``param`` bin for the built-in tools that take a parameter."""


def supported_tools() -> tuple[str, ...]:
    """Return every tool the discrete action space can express now (registered ones included)."""
    return discrete_supported_tools()


def tool_options(name: str) -> tuple[dict[str, Any], ...]:
    """Return the ``param`` options of tool ``name`` (``()``: no parameter; see the catalogue)."""
    return discrete_options(name)


def check_tools(tools: Sequence[str]) -> tuple[str, ...]:
    """Return ``tools`` as a tuple after checking the discrete action space can express them.

    Raises ``ValueError`` when ``answer`` is not first or a tool is unknown or has no
    discretization (the message says why and how to add one).
    """
    tools = tuple(tools)
    if not tools or tools[0] != "answer":
        raise ValueError("tools must start with 'answer'")
    for tool in tools:
        tool_options(tool)  # raises the catalogue's precise "not supported" error
    return tools


def region_box(region: int) -> tuple[list[float], float]:
    """Return the 0-1000 ``bbox_2d`` of a region and its size fraction of the source side."""
    if region == 0:
        return [0.0, 0.0, 1000.0, 1000.0], 1.0
    if 1 <= region <= 4:
        r, c = divmod(region - 1, 2)
        return [c * 500.0, r * 500.0, (c + 1) * 500.0, (r + 1) * 500.0], 0.5
    if 5 <= region <= 13:
        r, c = divmod(region - 5, 3)
        edges = (0.0, 1000.0 / 3, 2000.0 / 3, 1000.0)
        return [edges[c], edges[r], edges[c + 1], edges[r + 1]], 1.0 / 3
    raise ValueError(f"region must lie in 0..13, got {region}")


def options_text(options: Sequence[dict[str, Any]]) -> str:
    """Return a short text of a tool's parameter options (for the action table)."""
    if not options:
        return "-"
    return "; ".join(", ".join(f"{k}={v}" for k, v in o.items()) for o in options)


def action_table(tools: Sequence[str] = DEFAULT_TOOLS,
                 max_choices: int = 8) -> list[dict[str, Any]]:
    """Return the action table: one row per dimension, then one per tool with its options.

    Rows have ``dimension``, ``size`` and ``meaning`` keys (docs/sb3.md prints it).
    """
    rows: list[dict[str, Any]] = [
        {"dimension": "tool", "size": len(tools), "meaning": ", ".join(
            f"{i}={t}" for i, t in enumerate(tools))},
        {"dimension": "source", "size": len(SOURCES), "meaning": ", ".join(
            f"{i}={s}" for i, s in enumerate(SOURCES))},
        {"dimension": "region", "size": len(REGION_NAMES), "meaning": ", ".join(
            f"{i}={r}" for i, r in enumerate(REGION_NAMES)) + " (crop only)"},
        {"dimension": "param", "size": N_PARAM_BINS,
         "meaning": "bin b selects option b % len(options) of the tool"},
        {"dimension": "choice", "size": max_choices,
         "meaning": "index into the task's choices (answer only)"},
    ]
    for tool in check_tools(tools):
        options = tool_options(tool)
        rows.append({"dimension": f"param[{tool}]", "size": len(options),
                     "meaning": options_text(options)})
    return rows


def nearest_option(options: Sequence[dict[str, Any]], arguments: dict[str, Any]) -> int:
    """Return the index of the option closest to ``arguments`` (angles compared modulo 360).

    Options are compared on their first key: equal strings win, numbers by distance.
    """
    key = next(iter(options[0]))
    value = arguments.get(key)
    if isinstance(value, str) or value is None:
        return next((i for i, o in enumerate(options) if o[key] == value), 0)
    gaps = np.abs(float(value) - np.array([float(o[key]) for o in options]))
    if key == "angle":  # compared on the circle
        gaps = np.minimum(gaps % 360.0, 360.0 - gaps % 360.0)
    return int(np.argmin(gaps))


@dataclass(frozen=True)
class DecodedAction:
    """A ``MultiDiscrete`` action decoded into env terms."""

    tool: str
    source: int
    region: int
    param: int
    choice: int

    def describe(self) -> str:
        """Return a short human-readable description."""
        if self.tool == "answer":
            return f"answer(choice={self.choice})"
        extra = f", region={REGION_NAMES[self.region]}" if self.tool == "crop" else ""
        if tool_options(self.tool):
            extra += f", param={self.param}"
        return f"{self.tool}(source={SOURCES[self.source]}{extra})"
