"""Run one episode of an agent in an env and collect what happened."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym

from m3gym.agents.base import Agent, OracleAgent, RandomAgent


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
    obs, info = env.reset(seed=seed, options=options)
    base = env.unwrapped
    if isinstance(agent, OracleAgent):
        agent.set_task(base.task)
    if isinstance(agent, RandomAgent):
        agent.bind_space(base.action_space)
    agent.reset(obs, info)
    result = EpisodeResult(task_id=info["task_id"])
    for _ in range(max_steps):
        obs, reward, terminated, truncated, info = env.step(agent.act(obs, info))
        result.rewards.append(float(reward))
        if terminated or truncated:
            result.terminated, result.truncated = terminated, truncated
            result.final_info = info
            break
    result.trace = base.trace.to_dict()
    return result
