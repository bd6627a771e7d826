"""Throughput of the discrete wrapper, and where a step's time goes (not a test; prints numbers).

Usage::

    OPENBLAS_NUM_THREADS=1 python benchmarks/bench_wrapper.py --suite classic [--steps 2000]
        [--repeats 3] [--profile]
    python benchmarks/bench_wrapper.py --suite m3bench --level 1 [--steps 400]
    python benchmarks/bench_wrapper.py --smoke          # a few steps of every setting (CI)

Measures single-env steps/s with uniformly random masked-valid actions: ``env.action_masks()``,
``env.step`` and ``env.reset`` are timed, the benchmark's own action sampling is not (a policy
computes actions outside the env). Every setting's time per step is split into three parts,
measured in the same run:

* **generation** — task generation (``make_task``, called by ``M3BenchEnv.reset`` for a fresh
  task; zero for a cached pool);
* **env** — :class:`~m3gym.env.M3BenchEnv`'s own ``reset`` and ``step`` (the tool op, reward
  tracking, end-of-episode scoring), generation excluded;
* **wrapper** — what :class:`~m3gym.wrappers.discrete.DiscreteToolWrapper` adds: action
  decoding, masks, the pixel observation and ``info``.

Settings: a fresh task every episode (as classic RL needs), a cached task pool, reset + answer
only. Each number is the median of ``--repeats`` runs, printed with the load average it ran
under. ``--profile`` prints the top functions by internal time for the fresh-task setting.
"""

from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import statistics
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import m3gym.env as env_module  # noqa: E402
from m3gym.wrappers import CLASSIC_DISCRETE_KWARGS, make_discrete_env  # noqa: E402

M3BENCH_SETTINGS: dict[str, dict[str, Any]] = {
    "fresh tasks, zoom=source": {"zoom": "source"},
    "fresh tasks, zoom=view": {"zoom": "view"},
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

CLOCK = time.perf_counter


class Timers:
    """Seconds spent in task generation and in the inner env (generation included)."""

    def __init__(self) -> None:
        self.generation = 0.0
        self.inner = 0.0

    def reset(self) -> None:
        """Zero both timers."""
        self.generation = self.inner = 0.0


TIMERS = Timers()
"""The timers every wrapped env and the patched ``make_task`` add to."""

_make_task = env_module.make_task


def timed_make_task(*args: Any, **kwargs: Any) -> Any:
    """``make_task`` as the env calls it, its time added to :data:`TIMERS`."""
    t0 = CLOCK()
    try:
        return _make_task(*args, **kwargs)
    finally:
        TIMERS.generation += CLOCK() - t0


class TimedEnv:
    """A transparent proxy of the inner env whose ``reset``/``step`` time goes to :data:`TIMERS`.

    ``unwrapped`` (the wrapper reads it a dozen times a step) is a plain attribute, so the
    proxy's ``__getattr__`` does not add its cost to the wrapper's share.
    """

    def __init__(self, env: Any) -> None:
        self._env = env
        self.unwrapped = env.unwrapped

    def reset(self, **kwargs: Any) -> Any:
        """The inner ``reset``, timed."""
        t0 = CLOCK()
        try:
            return self._env.reset(**kwargs)
        finally:
            TIMERS.inner += CLOCK() - t0

    def step(self, action: Any) -> Any:
        """The inner ``step``, timed."""
        t0 = CLOCK()
        try:
            return self._env.step(action)
        finally:
            TIMERS.inner += CLOCK() - t0

    def __getattr__(self, name: str) -> Any:
        if name == "_env":
            raise AttributeError(name)
        return getattr(self._env, name)


def load_note() -> str:
    """Return the 1-minute load average and the CPU count, for the record."""
    return f"load average {os.getloadavg()[0]:.2f} on {os.cpu_count()} CPUs"


def random_steps(env: Any, steps: int, seed: int = 0) -> dict[str, float]:
    """Run ``steps`` random masked-valid steps; return counts and the split of the env seconds.

    Only the env's calls (masks, step, reset) are timed. Keys: ``steps``, ``episodes``,
    ``total``, ``generation``, ``env`` (generation excluded), ``wrapper`` (seconds).
    """
    rng = np.random.default_rng(seed)
    offsets = np.concatenate([[0], np.cumsum(env.action_space.nvec)]).tolist()
    draws = rng.random((steps, len(offsets) - 1))
    env.reset(seed=seed)
    TIMERS.reset()
    episodes = 0
    spent = 0.0
    for k in range(steps):
        t0 = CLOCK()
        mask = env.action_masks()
        spent += CLOCK() - t0
        action = []
        for d in range(len(offsets) - 1):
            valid = np.flatnonzero(mask[offsets[d]:offsets[d + 1]])
            action.append(int(valid[int(draws[k, d] * len(valid))]))
        t0 = CLOCK()
        _, _, term, trunc, _ = env.step(action)
        if term or trunc:
            episodes += 1
            env.reset()
        spent += CLOCK() - t0
    gen, inner = TIMERS.generation, TIMERS.inner
    return {"steps": steps, "episodes": episodes, "total": spent, "generation": gen,
            "env": inner - gen, "wrapper": spent - inner}


def make_env(suite: str, level: int, **kwargs: Any) -> Any:
    """Return the discrete env of a suite (the classic one with its registered defaults).

    The inner :class:`~m3gym.env.M3BenchEnv` is behind a :class:`TimedEnv` proxy.
    """
    if suite == "classic":
        env = make_discrete_env(**{**CLASSIC_DISCRETE_KWARGS, **kwargs})
    else:
        env = make_discrete_env(level=level, max_steps=4, **kwargs)
    env.env = TimedEnv(env.env)
    return env


def wrapper_overhead(env: Any, repeats: int = 2000) -> float:
    """Return the wrapper's cost per step in ms on a fixed state: masks + observation."""
    env.reset(seed=0)
    start = CLOCK()
    for _ in range(repeats):
        env.env.unwrapped  # noqa: B018 - the lookup a step makes
        env.action_masks()
        env.observation()
    return (CLOCK() - start) / repeats * 1000


def median_of(runs: list[dict[str, float]], key: str) -> float:
    """Return the median over runs of ``key`` in ms per step."""
    return statistics.median(r[key] / r["steps"] * 1000 for r in runs)


def main(argv: list[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--suite", choices=("classic", "m3bench"), default="classic")
    parser.add_argument("--steps", type=int, default=2000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--level", type=int, default=1)
    parser.add_argument("--profile", action="store_true")
    parser.add_argument("--smoke", action="store_true",
                        help="a few steps of every setting, small pools (CI: it runs, no numbers)")
    args = parser.parse_args(argv)
    if args.smoke:
        args.steps, args.repeats = 30, 1
    env_module.make_task = timed_make_task
    if args.suite == "classic":
        kw = CLASSIC_DISCRETE_KWARGS
        print(f"M3Bench-Classic-Discrete (obs {kw['obs_size']}, max_steps {kw['max_steps']}, "
              f"answer_at_end {kw['answer_at_end']}), random masked-valid actions, "
              f"{args.steps} steps x {args.repeats} runs ({load_note()})")
        settings = CLASSIC_SETTINGS
    else:
        print(f"M3Bench-L{args.level}-Discrete, obs 96, max_steps 4, random masked-valid "
              f"actions, {args.steps} steps x {args.repeats} runs ({load_note()})")
        settings = M3BENCH_SETTINGS
    print(f"{'setting':<34}{'steps/s':>9}{'eps/s':>8}{'ms/step':>9}   = {'generation':>10} "
          f"{'env':>8} {'wrapper':>8}  (ms/step; steps/s without generation)")
    for name, kwargs in settings.items():
        if args.smoke and "task_pool" in kwargs:
            kwargs = {**kwargs, "task_pool": 16, "cache_size": 16}
        env = make_env(args.suite, args.level, **kwargs)
        if "task_pool" in kwargs:  # warm the pool cache: every pool task generated once
            for k in range(int(kwargs["task_pool"])):
                env.pool_task(k)
        random_steps(env, min(200, args.steps))
        runs = [random_steps(env, args.steps, seed=1 + r) for r in range(args.repeats)]
        rates = sorted(r["steps"] / r["total"] for r in runs)
        eps = statistics.median(r["episodes"] / r["total"] for r in runs)
        ms = median_of(runs, "total")
        gen, inner, wrap = (median_of(runs, k) for k in ("generation", "env", "wrapper"))
        no_gen = statistics.median(r["steps"] / (r["total"] - r["generation"]) for r in runs)
        print(f"{name:<34}{statistics.median(rates):9.0f}{eps:8.0f}{ms:9.3f}   = {gen:10.3f} "
              f"{inner:8.3f} {wrap:8.3f}  ({no_gen:.0f} steps/s without generation; "
              f"runs {rates[0]:.0f}-{rates[-1]:.0f})")
        env.close()
    env = make_env(args.suite, args.level, task_pool=8)
    overhead = wrapper_overhead(env, 200 if args.smoke else 2000)
    print(f"{'wrapper alone (mask + obs, fixed state)':<43}{overhead:8.3f} ms/step")
    print(f"(finished at {load_note()})")
    if args.profile and not args.smoke:
        env = make_env(args.suite, args.level)
        random_steps(env, 200)
        prof = cProfile.Profile()
        prof.enable()
        random_steps(env, args.steps, seed=2)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
