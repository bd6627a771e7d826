"""Scoring throughput on real oracle and random episodes (issue: >= 5,000 episodes/s).

Collects N episodes per agent over the three levels, then scores them ``--episodes`` times in a
cycle and prints episodes/s (median of ``--repeats`` runs) for:

- terminal: what the env computes at episode end, given the checkpoint report it kept
  incrementally during the episode (alignment, M3, overthink, safety, taxonomy, answer);
- full: offline re-scoring from scratch, including the pixel-level checkpoint verification.

Usage: ``python benchmarks/bench_episode_scoring.py [--episodes 10000] [--collect 60]``
"""

from __future__ import annotations

import argparse
import statistics
import time

import gymnasium as gym

import m3gym  # noqa: F401
from m3gym.agents import OracleAgent, RandomAgent
from m3gym.rollout import run_episode
from m3gym.scoring.checkpoints import evaluate_checkpoints
from m3gym.scoring.episode_score import score_episode


def collect(agent_name: str, n: int) -> list[tuple]:
    out = []
    for level in (1, 2, 3):
        env = gym.make(f"M3Bench-L{level}")
        for seed in range(n // 3):
            agent = OracleAgent() if agent_name == "oracle" else RandomAgent(seed=seed)
            run_episode(env, agent, seed=seed)
            base = env.unwrapped
            report = evaluate_checkpoints(base.task, base.trace, base.state)
            out.append((base.task, base.trace, base.state, report))
    return out


def rate(episodes: list[tuple], total: int, full: bool) -> float:
    t0 = time.perf_counter()
    for i in range(total):
        task, trace, state, report = episodes[i % len(episodes)]
        score_episode(task, trace, state, report=None if full else report)
    return total / (time.perf_counter() - t0)


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--collect", type=int, default=60)
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args()
    for agent in ("oracle", "random"):
        eps = collect(agent, args.collect)
        term = statistics.median(rate(eps, args.episodes, False) for _ in range(args.repeats))
        full_n = max(1, args.episodes // 20)
        full = statistics.median(rate(eps, full_n, True) for _ in range(args.repeats))
        print(f"{agent:<7} terminal scoring: {term:8.0f} episodes/s   "
              f"full re-scoring incl. pixel checks: {full:7.0f} episodes/s")


if __name__ == "__main__":
    main()
