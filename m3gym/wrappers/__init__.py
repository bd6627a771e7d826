"""Classic-RL wrappers: discrete tool actions with masks and fixed-size pixel observations.

Importing this package registers ``M3Bench-L1-Discrete-v4`` / ``-L2-`` / ``-L3-`` (for each level
that has families) with :func:`~m3gym.wrappers.make.make_discrete_env` as entry point; keyword
arguments of ``gym.make`` go to the wrapper (``obs_size``, ``task_pool``, ...) or, for
``reward``, ``suite``, ``view_size``, ``max_tool_calls``, ``max_rounds``, ``family_weights``,
``family_config``, ``difficulty``, ``curriculum`` and ``curriculum_update``, to the env.
``M3Bench-Classic-Discrete-v4`` wraps the classic-RL suite (:data:`CLASSIC_DISCRETE_KWARGS`).
"""

from __future__ import annotations

from gymnasium.envs.registration import register, registry

from m3gym.tasks.registry import family_names
from m3gym.versions import MANIFEST_VERSION
from m3gym.wrappers.discrete import (
    DEFAULT_TOOLS,
    REGION_NAMES,
    SOURCES,
    SUPPORTED_TOOLS,
    TOOL_OPTIONS,
    DecodedAction,
    DiscreteToolWrapper,
    action_table,
)
from m3gym.wrappers.make import make_discrete_env

DISCRETE_ENTRY_POINT = "m3gym.wrappers.make:make_discrete_env"


CLASSIC_DISCRETE_ID = f"M3Bench-Classic-Discrete-v{MANIFEST_VERSION}"
"""The classic-RL suite behind the discrete wrapper, with defaults tuned for pixel policies."""

CLASSIC_DISCRETE_KWARGS: dict[str, object] = {
    "level": 1, "suite": "classic", "obs_size": 96, "zoom": "view", "choices_obs": "none",
    "observe_original": False, "max_steps": 2, "answer_at_end": True,
}
"""Defaults of ``M3Bench-Classic-Discrete``: 96-px observations (the suite's view size), crops
zoomed to the view, no choice panel (the choices are the same digits in every task), no
``original`` image (the first observation is Image 0), and a fixed horizon of one tool call, then
the answer (every classic task needs exactly one call)."""


def discrete_env_ids() -> list[str]:
    """Return the discrete-wrapper env ids (one per level that has families, then the classic)."""
    ids = [f"M3Bench-L{lvl}-Discrete-v{MANIFEST_VERSION}" for lvl in (1, 2, 3)
           if family_names(lvl)]
    return ids + ([CLASSIC_DISCRETE_ID] if family_names(1, "classic") else [])


def register_discrete_envs() -> None:
    """Register ``M3Bench-L{1,2,3}-Discrete-vN`` and ``M3Bench-Classic-Discrete-vN`` (idempotent).

    ``N`` is the frozen tasks' version (:data:`m3gym.ENV_VERSION`).
    """
    for env_id in discrete_env_ids():
        if env_id in registry:
            continue
        if env_id == CLASSIC_DISCRETE_ID:
            kwargs = dict(CLASSIC_DISCRETE_KWARGS)
        else:
            kwargs = {"level": int(env_id.split("-")[1][1:])}
        register(id=env_id, entry_point=DISCRETE_ENTRY_POINT, kwargs=kwargs)


register_discrete_envs()

__all__ = ["CLASSIC_DISCRETE_ID", "CLASSIC_DISCRETE_KWARGS", "DEFAULT_TOOLS", "REGION_NAMES",
           "SOURCES", "SUPPORTED_TOOLS", "TOOL_OPTIONS",
           "DecodedAction", "DiscreteToolWrapper", "action_table", "discrete_env_ids",
           "make_discrete_env", "register_discrete_envs"]
