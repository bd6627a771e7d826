"""One ``Discrete`` action per complete tool call, for policies without factored action heads.

:class:`~m3gym.wrappers.discrete.DiscreteToolWrapper` acts with ``MultiDiscrete([tool, source,
region, param, choice])``: one categorical head per dimension, sampled independently. A dimension
the chosen tool ignores (the crop ``region`` of a ``rotate``, the ``param`` of a ``crop``) is still
sampled, and its log-probability still takes the step's advantage: policy-gradient noise on the
heads that matter when another tool is chosen, which slows credit assignment for choices that
pay rarely (which crop region holds a tiny tag). :class:`FlatToolActions` lists every distinct
call once — ``answer`` × choice, ``crop`` × source × region, each tool with options × source ×
option, the rest × source — as one ``Discrete(n)`` action, so each action's probability is one
logit and an advantage is credited to exactly the call that was made. Masks (``action_masks()``,
length ``n``) allow an action when each component it uses is allowed by the inner wrapper; it
also lets SB3's ``DQN`` and plain ``PPO`` use the action space.

``gym.make("M3Bench-Classic-Discrete", flat_actions=True)`` (any discrete id) builds it.
"""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from m3gym.wrappers.discrete import (
    N_PARAM_BINS,
    REGION_NAMES,
    SOURCES,
    DiscreteToolWrapper,
    tool_options,
)


def flat_action_table(tools: tuple[str, ...], max_choices: int) -> np.ndarray:
    """Return the ``(n, 5)`` ``MultiDiscrete`` action of every flat action, in order.

    Per tool (in ``tools`` order): ``answer`` one row per choice; ``crop`` source × region;
    a tool with options (:func:`~m3gym.wrappers.discrete.tool_options`) source × option; any
    other tool one row per source. Components a tool ignores are 0 (the value the inner masks
    always keep valid).
    """
    rows: list[tuple[int, int, int, int, int]] = []
    for t, tool in enumerate(tools):
        if tool == "answer":
            rows.extend((t, 0, 0, 0, ch) for ch in range(max_choices))
        elif tool == "crop":
            rows.extend((t, s, r, 0, 0) for s in range(len(SOURCES))
                        for r in range(len(REGION_NAMES)))
        elif n_opt := len(tool_options(tool)):
            if N_PARAM_BINS % n_opt:  # pragma: no cover - checked by register_tool
                raise ValueError(f"{tool}: {n_opt} options do not divide {N_PARAM_BINS} bins")
            rows.extend((t, s, 0, p, 0) for s in range(len(SOURCES)) for p in range(n_opt))
        else:
            rows.extend((t, s, 0, 0, 0) for s in range(len(SOURCES)))
    return np.array(rows, dtype=np.int64)


class FlatToolActions(gym.Wrapper):
    """Expose a :class:`DiscreteToolWrapper` with one ``Discrete`` action per distinct call.

    ``table[i]`` is the inner ``MultiDiscrete`` action of flat action ``i``
    (:func:`flat_action_table`); ``info["action_mask"]`` and :meth:`action_masks` give the flat
    mask. Observations, rewards and infos are the inner wrapper's.
    """

    def __init__(self, env: gym.Env) -> None:
        super().__init__(env)
        inner = env
        while not isinstance(inner, DiscreteToolWrapper):
            if not isinstance(inner, gym.Wrapper):
                raise TypeError("FlatToolActions needs a DiscreteToolWrapper inside")
            inner = inner.env
        self.inner: DiscreteToolWrapper = inner
        self.table = flat_action_table(inner.tools, inner.max_choices)
        self._offsets = np.asarray(inner._nvec_offsets[:-1], dtype=np.int64)
        self.action_space = spaces.Discrete(len(self.table))

    def action_masks(self) -> np.ndarray:
        """Return the flat boolean mask: an action is valid when all its components are."""
        components = self.inner.action_masks()
        return components[self._offsets[None, :] + self.table].all(axis=1)

    def flat_index(self, multi: np.ndarray) -> int:
        """Return the flat action of a ``MultiDiscrete`` action.

        Components the tool ignores are dropped; a ``param`` is read modulo the tool's option
        count.
        """
        t, s, r, p, ch = (int(v) for v in np.asarray(multi).reshape(-1))
        tool = self.inner.tools[t]
        if tool == "answer":
            row = (t, 0, 0, 0, ch)
        elif tool == "crop":
            row = (t, s, r, 0, 0)
        else:
            n_opt = len(tool_options(tool))
            row = (t, s, 0, p % n_opt if n_opt else 0, 0)
        hits = np.flatnonzero((self.table == np.array(row)).all(axis=1))
        if not len(hits):
            raise ValueError(f"no flat action for {row}")
        return int(hits[0])

    def expert_action(self) -> int:
        """Return the flat action of the inner wrapper's :meth:`expert_action` (the oracle)."""
        return self.flat_index(self.inner.expert_action())

    def multi_action(self, action: Any) -> np.ndarray:
        """Return the inner ``MultiDiscrete`` action of flat ``action`` (clipped into range)."""
        index = int(np.clip(int(np.asarray(action).reshape(-1)[0]), 0, len(self.table) - 1))
        return self.table[index]

    def reset(self, **kwargs: Any) -> tuple[Any, dict[str, Any]]:
        """Reset the inner env; ``info["action_mask"]`` is the flat mask."""
        obs, info = self.env.reset(**kwargs)
        info["action_mask"] = self.action_masks()
        return obs, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        """Run the call of flat ``action``; ``info["action_mask"]`` is the flat mask."""
        obs, reward, terminated, truncated, info = self.env.step(self.multi_action(action))
        info["action_mask"] = self.action_masks()
        return obs, reward, terminated, truncated, info
