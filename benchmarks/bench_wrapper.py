"""Throughput of the discrete wrapper, and where a step's time goes (not a test; prints numbers).

Usage::

    python benchmarks/bench_wrapper.py --suite classic [--steps 5000] [--repeats 5] [--profile]
    python benchmarks/bench_wrapper.py --suite m3bench --level 1 [--steps 1000]

Measures single-env steps/s with uniformly random masked-valid actions: ``env.action_masks()``,
``env.step`` and ``env.reset`` are timed, the benchmark's own action sampling is not (a policy
computes actions outside the env). Settings: fresh tasks every episode vs a cached task pool, crop
zoom ``source`` vs ``view``, and the wrapper overhead alone (mask + observation on a fixed
state). Each number is the median of ``--repeats`` runs. ``--profile`` prints the top functions
by internal time for the pooled setting.
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

from m3gym.wrappers import CLASSIC_DISCRETE_KWARGS, make_discrete_env  # noqa: E402

M3BENCH_SETTINGS: dict[str, dict[str, Any]] = {
    "fresh tasks, zoom=source": {"zoom": "source"},
    "fresh tasks, zoom=view": {"zoom": "view"},
    "pool 64 cached, zoom=source": {"zoom": "source", "task_pool": 64, "cache_size": 64},
    "pool 64 cached, zoom=view": {"zoom": "view", "task_pool": 64, "cache_size": 64},
    "pool, answer-only (reset+answer)": {"task_pool": 64, "cache_size": 64, "tools": ["answer"]},
}
"""Settings measured on a benchmark level (``--suite m3bench``)."""

CLASSIC_SETTINGS: dict[str, dict[str, Any]] = {
    "fresh tasks": {},
    "pool 2000 cached": {"task_pool": 2000, "cache_size": 2000},
    "pool, answer-only (reset+answer)": {"task_pool": 2000, "cache_size": 2000,
                                         "tools": ["answer"]},
}
"""Settings measured on ``M3Bench-Classic-Discrete`` (``--suite classic``, its defaults)."""


def random_steps(env: Any, steps: int, seed: int = 0) -> tuple[int, int, float]:
    """Run ``steps`` random masked-valid steps; return (steps, episodes, env seconds).

    Only the env's calls (masks, step, reset) are timed.
    """
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(env.action_space.nvec)]).tolist()
    draws = rng.random((steps, len(offsets) - 1))
    clock = time.perf_counter
    env.reset(seed=seed)
    episodes = 0
    spent = 0.0
    for k in range(steps):
        t0 = clock()
        mask = env.action_masks()
        spent += clock() - t0
        action = []
        for d in range(len(offsets) - 1):
            valid = np.flatnonzero(mask[offsets[d]:offsets[d + 1]])
            action.append(int(valid[int(draws[k, d] * len(valid))]))
        t0 = clock()
        _, _, term, trunc, _ = env.step(action)
        if term or trunc:
            episodes += 1
            env.reset()
        spent += clock() - t0
    return steps, episodes, spent


def make_env(suite: str, level: int, **kwargs: Any) -> Any:
    """Return the discrete env of a suite (the classic one with its registered defaults)."""
    if suite == "classic":
        return make_discrete_env(**{**CLASSIC_DISCRETE_KWARGS, **kwargs})
    return make_discrete_env(level=level, max_steps=4, **kwargs)


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
    parser.add_argument("--suite", choices=("classic", "m3bench"), default="classic")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--level", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    args = parser.parse_args()
    if args.suite == "classic":
        kw = CLASSIC_DISCRETE_KWARGS
        print(f"M3Bench-Classic-Discrete (obs {kw['obs_size']}, max_steps {kw['max_steps']}, "
              f"answer_at_end {kw['answer_at_end']}), random masked-valid actions")
        settings = CLASSIC_SETTINGS
    else:
        print(f"M3Bench-L{args.level}-Discrete, obs 96, max_steps 4, random masked-valid actions")
        settings = M3BENCH_SETTINGS
    for name, kwargs in settings.items():
        env = make_env(args.suite, args.level, **kwargs)
        if "task_pool" in kwargs:  # warm the pool cache: every pool task generated once
            for k in range(int(kwargs["task_pool"])):
                env.pool_task(k)
        random_steps(env, min(200, args.steps))
        runs = [random_steps(env, args.steps, seed=1 + r) for r in range(args.repeats)]
        rates = sorted(n / secs for n, _, secs in runs)
        eps = sorted(e / secs for _, e, secs in runs)
        med = rates[len(rates) // 2]
        print(f"{name:<36} {med:8.1f} steps/s  {eps[len(eps) // 2]:7.1f} episodes/s  "
              f"({1000 / med:.3f} ms/step; runs {rates[0]:.0f}-{rates[-1]:.0f})")
    env = make_env(args.suite, args.level, task_pool=8)
    print(f"{'wrapper overhead (mask + obs)':<36} {wrapper_overhead(env):8.3f} ms/step")
    if args.profile:
        env = make_env(args.suite, args.level, zoom="view", task_pool=64, cache_size=64)
        random_steps(env, 200)
        prof = cProfile.Profile()
        prof.enable()
        random_steps(env, args.steps, seed=2)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(20)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
