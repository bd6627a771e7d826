"""Run one episode of an agent in an env and collect what happened.

A thin view of the one episode loop (:func:`m3gym.eval.episode_loop.record_episode`) for scripts and
tests: errors propagate instead of being recorded as a status.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from m3gym.agents.base import Agent
from m3gym.eval.episode_loop import record_episode


@dataclass
class EpisodeResult:
    """The outcome of one episode: rewards per step, the final info and the episode's trace."""

    task_id: str
    rewards: list[float] = field(default_factory=list)
    final_info: dict[str, Any] = field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False
    trace: dict[str, Any] = field(default_factory=dict)

    @property
    def total_reward(self) -> float:
        """Sum of the step rewards."""
        return float(sum(self.rewards))


def run_episode(env: gym.Env, agent: Agent, seed: int | None = None,
                options: dict[str, Any] | None = None, max_steps: int = 100) -> EpisodeResult:
    """Reset ``env`` with ``seed`` and let ``agent`` act until the episode ends."""
    rec = record_episode(env, agent, seed=seed, options=options, max_steps=max_steps, catch=False)
    return EpisodeResult(
        task_id=rec.task.task_id, rewards=[s["reward"] for s in rec.steps],
        final_info=rec.final, terminated=rec.terminated, truncated=rec.truncated,
        trace=rec.base.trace.to_dict())
