"""m3gym as a native `verifiers <https://github.com/PrimeIntellect-ai/verifiers>`_ environment.

Verifiers' v1 API (``verifiers>=0.4,<0.5``, ``pip install "m3gym[verifiers]"``): a taskset of
m3gym tasks, a per-rollout MCP toolset with one tool per m3gym tool (text and image content), a
reward (the episode return), metrics (acc, S, V, m3, OT, safety) and an oracle replay for
``vf-validate``. Verifiers finds it under the id ``m3gym``: its loader imports the module named
after the id and takes the ``Taskset`` (and ``Harness``) subclass that ``m3gym.__all__`` exports
(lazily: ``import m3gym`` never imports verifiers). Only this subpackage imports verifiers.
"""

from __future__ import annotations

from m3gym.verifiers.taskset import (
    M3GymConfig,
    M3GymHarness,
    M3GymTask,
    M3GymTaskConfig,
    M3GymTaskset,
    oracle_calls,
    task_rows,
)
from m3gym.verifiers.toolset import M3GymData, M3GymState, M3GymToolset, encode_image, replay

__all__ = ["M3GymConfig", "M3GymData", "M3GymHarness", "M3GymState", "M3GymTask",
           "M3GymTaskConfig", "M3GymTaskset", "M3GymToolset", "encode_image", "oracle_calls",
           "replay", "task_rows"]
