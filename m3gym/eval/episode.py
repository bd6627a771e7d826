"""Old name of :mod:`m3gym.eval.episode_loop` (the one episode loop).

Every public name of that module still imports from here, with a ``DeprecationWarning`` that
names its new home.
"""

from __future__ import annotations

from m3gym.deprecation import renamed_names
from m3gym.eval import episode_loop as _loop

_MOVED = ("AGENT_RESET_KEYS", "AGENT_STEP_KEYS", "MAX_STEPS_GUARD", "AgentFailure",
          "EpisodeRecorder", "agent_info", "is_infrastructure_error", "json_safe", "record_episode",
          "step_record")

__getattr__ = renamed_names(__name__, {
    name: (f"m3gym.eval.episode_loop.{name}", lambda name=name: getattr(_loop, name))
    for name in _MOVED})
