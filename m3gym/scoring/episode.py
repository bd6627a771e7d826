"""Old name of :mod:`m3gym.scoring.episode_score` (an episode's score).

Every name of that module still imports from here, with a ``DeprecationWarning`` that names its
new home.
"""

from __future__ import annotations

from m3gym.deprecation import renamed_names
from m3gym.scoring import episode_score as _score

_MOVED = ("METRIC_KEYS", "score_episode")

__getattr__ = renamed_names(__name__, {
    name: (f"m3gym.scoring.episode_score.{name}", lambda name=name: getattr(_score, name))
    for name in _MOVED})
