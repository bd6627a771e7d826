"""Deprecated path: the heuristic agent's episode view moved to :mod:`m3gym.agents.heuristic`."""

from m3gym.agents.heuristic._aliases import moved_names

__getattr__ = moved_names(__name__)
