"""Throughput of the discrete wrapper, and where a step's time goes (not a test; prints numbers).

Usage::

    python benchmarks/bench_wrapper.py [--steps 2000] [--profile]

Measures single-env steps/s with uniformly random masked-valid actions for several settings:
fresh tasks every episode vs a cached task pool, crop zoom ``source`` vs ``view``, and the wrapper
overhead alone (mask + observation on a fixed state). ``--profile`` prints the top functions by
internal time for the default training setting.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from m3gym.wrappers import make_discrete_env  # noqa: E402

SETTINGS: dict[str, dict[str, Any]] = {
    "fresh tasks, zoom=source": {"zoom": "source"},
    "fresh tasks, zoom=view": {"zoom": "view"},
    "pool 64 cached, zoom=source": {"zoom": "source", "task_pool": 64, "cache_size": 64},
    "pool 64 cached, zoom=view": {"zoom": "view", "task_pool": 64, "cache_size": 64},
    "pool, answer-only (reset+answer)": {"task_pool": 64, "cache_size": 64, "tools": ["answer"]},
}


def random_steps(env: Any, steps: int, seed: int = 0) -> tuple[int, int, float]:
    """Run ``steps`` random masked-valid steps; return (steps, episodes, seconds)."""
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(env.action_space.nvec)])
    env.reset(seed=seed)
    episodes = 0
    start = time.perf_counter()
    for _ in range(steps):
        mask = env.action_masks()
        action = [int(rng.choice(np.flatnonzero(mask[offsets[d]:offsets[d + 1]])))
                  for d in range(len(offsets) - 1)]
        _, _, term, trunc, _ = env.step(action)
        if term or trunc:
            episodes += 1
            env.reset()
    return steps, episodes, time.perf_counter() - start


def wrapper_overhead(env: Any, repeats: int = 2000) -> float:
    """Return the wrapper's own cost per step in ms: masks + features + cached observation."""
    env.reset(seed=0)
    start = time.perf_counter()
    for _ in range(repeats):
        env.action_masks()
        env.observation()
    return (time.perf_counter() - start) / repeats * 1000


def main() -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=1000)
    parser.add_argument("--level", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    print(f"M3Bench-L{args.level}-Discrete, obs 96, max_steps 4, random masked-valid actions")
    for name, kwargs in SETTINGS.items():
        env = make_discrete_env(level=args.level, max_steps=4, **kwargs)
        random_steps(env, min(100, args.steps))  # warm the pool cache
        n, eps, secs = random_steps(env, args.steps, seed=1)
        print(f"{name:<36} {n / secs:8.1f} steps/s  {eps / secs:7.1f} episodes/s  "
              f"({secs / n * 1000:.2f} ms/step)")
    env = make_discrete_env(level=args.level, max_steps=4, task_pool=8)
    print(f"{'wrapper overhead (mask + obs)':<36} {wrapper_overhead(env):8.3f} ms/step")
    if args.profile:
        env = make_discrete_env(level=args.level, max_steps=4, zoom="view", task_pool=64,
                                cache_size=64)
        random_steps(env, 100)
        prof = cProfile.Profile()
        prof.enable()
        random_steps(env, args.steps, seed=2)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
