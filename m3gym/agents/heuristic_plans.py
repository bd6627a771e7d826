"""Deprecated import path of the heuristic agent's plans (moved).

Each name read from here is found in the first of :data:`MOVED_TO` that defines it, with a
:class:`DeprecationWarning` that names its new module.
"""

from m3gym.agents.heuristic._aliases import moved_names

MOVED_TO: tuple[str, ...] = (
    "m3gym.agents.heuristic.calls",
    "m3gym.agents.heuristic.reading",
    "m3gym.agents.heuristic.prices",
    "m3gym.agents.heuristic.lookup",
    "m3gym.agents.heuristic.web",
    "m3gym.agents.heuristic.clock",
    "m3gym.agents.heuristic.counting",
    "m3gym.agents.heuristic.grid",
)
"""The modules this one's names moved to, searched in order."""

__getattr__ = moved_names(__name__, MOVED_TO)
