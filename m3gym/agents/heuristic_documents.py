"""Deprecated import path of the heuristic agent's document plans (moved).

Each name read from here is found in the first of :data:`MOVED_TO` that defines it, with a
:class:`DeprecationWarning` that names its new module.
"""

from m3gym.agents.heuristic._aliases import moved_names

MOVED_TO: tuple[str, ...] = (
    "m3gym.agents.heuristic.documents",
)
"""The modules this one's names moved to, searched in order."""

__getattr__ = moved_names(__name__, MOVED_TO)
