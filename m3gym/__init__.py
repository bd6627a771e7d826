"""m3gym: Gymnasium environments for multimodal tool-using agents.

``import m3gym`` registers ``M3Bench-L1-v4``, ``M3Bench-L2-v4``, ``M3Bench-L3-v4`` (each only when
its level has families), ``M3Bench-Classic-v4`` (the low-resolution classic-RL suite, 96-px view)
and one id per task family, e.g. ``M3Bench-TinyText-v4``. The version suffix is
:data:`ENV_VERSION`, the test manifest's version: it moves whenever a task's bytes do, so a
script that names ``M3Bench-L2-v4`` either gets exactly those tasks or fails (Gymnasium's
``DeprecatedEnv``). An unversioned id (``M3Bench-L2``) resolves to the newest version (Gymnasium
warns).
"""

from __future__ import annotations

import importlib.util

from m3gym.env import M3BenchEnv
from m3gym.parsing import ToolCall, parse_action
from m3gym.records_env import register_records_env
from m3gym.registration import (
    CLASSIC_ENV_ID,
    ENTRY_POINT,
    ENV_VERSION,
    env_ids,
    family_env_id,
    level_env_id,
    register_envs,
    resolve_env_id,
    versioned_id,
)
from m3gym.reward import RewardConfig, load_reward_config
from m3gym.spec import Task
from m3gym.tasks.registry import family_names, get_family, make_task
from m3gym.versions import __version__

register_records_env()  # before register_envs: M3Bench-Records-v4 takes records=
register_envs()

from m3gym.wrappers import register_discrete_envs  # noqa: E402

register_discrete_envs()

from m3gym.integrations.datasets import score_answer  # noqa: E402

__all__ = ["CLASSIC_ENV_ID", "ENTRY_POINT", "ENV_VERSION", "M3BenchEnv", "RewardConfig", "Task",
           "ToolCall", "env_ids", "family_env_id", "family_names", "get_family", "level_env_id",
           "load_reward_config", "make_task", "parse_action", "register_envs", "resolve_env_id",
           "score_answer", "versioned_id", "__version__"]


# verifiers (``pip install "m3gym[verifiers]"``) loads an environment by importing the module named
# after its id, ``m3gym``, and taking the Taskset and Harness subclasses that ``__all__`` exports:
# they are listed only where verifiers is installed and imported only when asked for
# (m3gym.verifiers; ``import m3gym`` never imports verifiers).
_VERIFIERS_EXPORTS = ("M3GymTaskset", "M3GymHarness")
if importlib.util.find_spec("verifiers") is not None:
    __all__ += list(_VERIFIERS_EXPORTS)


def __getattr__(name: str) -> object:
    """Import the verifiers taskset and harness on first use (see ``_VERIFIERS_EXPORTS``)."""
    if name in _VERIFIERS_EXPORTS:
        from m3gym import verifiers as _verifiers

        return getattr(_verifiers, name)
    raise AttributeError(f"module 'm3gym' has no attribute {name!r}")
