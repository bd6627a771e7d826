"""The entry point of the discrete env ids: the env, the discrete wrapper and the flat actions.

It sits above :mod:`m3gym.wrappers.discrete` and :mod:`m3gym.wrappers.flat`, so neither imports
the other's user.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym

from m3gym.env import M3BenchEnv
from m3gym.wrappers.discrete import DiscreteToolWrapper
from m3gym.wrappers.flat import FlatToolActions


def make_discrete_env(level: int | None = 1, family: str | None = None,
                      env_kwargs: dict[str, Any] | None = None, flat_actions: bool = False,
                      **wrapper_kwargs: Any) -> gym.Env:
    """Return ``DiscreteToolWrapper(M3BenchEnv(level=..., family=..., **env_kwargs))``.

    ``env_kwargs`` go to :class:`~m3gym.env.M3BenchEnv` (e.g. ``reward``, ``view_size``); the
    other keyword arguments to the wrapper. With ``flat_actions`` the wrapper is wrapped again in
    :class:`~m3gym.wrappers.flat.FlatToolActions` (one ``Discrete`` action per distinct call).
    The ``M3Bench-L*-Discrete`` ids use it as entry point.
    """
    kwargs = dict(env_kwargs or {})
    kwargs.setdefault("observe_images", False)
    for key in ("reward", "suite", "view_size", "max_tool_calls", "max_rounds",
                "family_weights", "family_config", "render_mode",
                "difficulty", "curriculum", "curriculum_update"):
        if key in wrapper_kwargs:
            kwargs[key] = wrapper_kwargs.pop(key)
    env = M3BenchEnv(level=None if family else level, family=family, **kwargs)
    wrapped = DiscreteToolWrapper(env, **wrapper_kwargs)
    return FlatToolActions(wrapped) if flat_actions else wrapped
