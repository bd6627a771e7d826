"""Classic-RL wrappers: discrete tool actions with masks and fixed-size pixel observations.

Importing this package registers ``M3Bench-L1-Discrete`` / ``-L2-`` / ``-L3-`` (for each level that
has families) with :func:`~m3gym.wrappers.discrete.make_discrete_env` as entry point; keyword
arguments of ``gym.make`` go to the wrapper (``obs_size``, ``task_pool``, ...) or, for
``reward``, ``view_size``, ``max_tool_calls``, ``max_rounds``, ``family_weights`` and
``family_config``, to the env.
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from m3gym.tasks.registry import family_names
from m3gym.wrappers.discrete import (
    DEFAULT_TOOLS,
    REGION_NAMES,
    SOURCES,
    SUPPORTED_TOOLS,
    TOOL_OPTIONS,
    DecodedAction,
    DiscreteToolWrapper,
    action_table,
    make_discrete_env,
)

DISCRETE_ENTRY_POINT = "m3gym.wrappers.discrete:make_discrete_env"


def discrete_env_ids() -> list[str]:
    """Return the discrete-wrapper env ids (one per level that has families)."""
    return [f"M3Bench-L{lvl}-Discrete" for lvl in (1, 2, 3) if family_names(lvl)]


def register_discrete_envs() -> None:
    """Register ``M3Bench-L{1,2,3}-Discrete`` (idempotent)."""
    for env_id in discrete_env_ids():
        if env_id not in registry:
            level = int(env_id.split("-")[1][1:])
            register(id=env_id, entry_point=DISCRETE_ENTRY_POINT, kwargs={"level": level})


register_discrete_envs()

__all__ = ["DEFAULT_TOOLS", "REGION_NAMES", "SOURCES", "SUPPORTED_TOOLS", "TOOL_OPTIONS",
           "DecodedAction", "DiscreteToolWrapper", "action_table", "discrete_env_ids",
           "make_discrete_env", "register_discrete_envs"]
