"""Old name of :mod:`m3gym.mcp.episode_table` (the MCP server's episode table).

Every public name of that module (its own and those it re-exports from its neighbours) still
imports from here, with a ``DeprecationWarning`` that names its new home.
"""

from __future__ import annotations

import types

from m3gym.deprecation import renamed_names
from m3gym.mcp import episode_table as _table

_MOVED = tuple(name for name, value in vars(_table).items()
               if not name.startswith("_") and name not in ("annotations", "logger")
               and not isinstance(value, types.ModuleType)
               and str(getattr(value, "__module__", "m3gym")).startswith("m3gym"))
"""The table's own names and the m3gym names it imports (the stdlib's are left out)."""

__getattr__ = renamed_names(__name__, {
    name: (f"m3gym.mcp.episode_table.{name}", lambda name=name: getattr(_table, name))
    for name in _MOVED})
