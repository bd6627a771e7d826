"""Benchmark ``m3gym eval`` on Ray against local worker processes on this machine.

Run: python benchmarks/bench_ray.py [--episodes N] [--agents oracle,heuristic] [--cpus 2]

For each agent: the same run (``N`` test-split episodes per level, L1-L3) with ``--workers CPUS``
local processes and with ``--backend ray`` on a local Ray cluster of ``CPUS`` CPUs (started once,
not timed; its start-up time is printed apart). Prints episodes/s of both, and Ray's overhead per
episode: (Ray wall - local wall) / episodes, plus the round trip of an empty Ray task. Needs the
``ray`` extra.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ray  # noqa: E402

from m3gym.distributed import RayBackend  # noqa: E402
from m3gym.distributed.eval import ONE_THREAD_ENV  # noqa: E402
from m3gym.eval.runner import EvalConfig, run_eval  # noqa: E402


def timed_run(cfg: EvalConfig, backend: RayBackend | None) -> float:
    """Return the wall seconds of one run into a fresh folder."""
    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        run_eval(cfg, Path(tmp) / "run", backend=backend)
        return time.perf_counter() - t0


def empty_task_round_trip(n: int = 200) -> float:
    """Return the mean seconds of ``n`` empty Ray tasks run one after another."""

    @ray.remote(num_cpus=1)
    def nothing() -> int:
        return 0

    ray.get(nothing.remote())
    t0 = time.perf_counter()
    for _ in range(n):
        ray.get(nothing.remote())
    return (time.perf_counter() - t0) / n


def main() -> None:
    """Run the benchmark and print a Markdown table."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=20, help="episodes per level")
    parser.add_argument("--agents", default="oracle,heuristic")
    parser.add_argument("--cpus", type=int, default=2)
    args = parser.parse_args()
    t0 = time.perf_counter()
    ray.init(num_cpus=args.cpus, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": dict(ONE_THREAD_ENV)})
    print(f"ray.init (local cluster, {args.cpus} CPUs): {time.perf_counter() - t0:.1f} s")
    print(f"empty Ray task round trip: {empty_task_round_trip() * 1e3:.2f} ms")
    envs = ("M3Bench-L1", "M3Bench-L2", "M3Bench-L3")
    n = args.episodes * len(envs)
    print(f"\n| agent | episodes | local --workers {args.cpus} ep/s | Ray ep/s | "
          "Ray overhead ms/episode |")
    print("|---|---|---|---|---|")
    for agent in args.agents.split(","):
        cfg = EvalConfig(envs=envs, agent=agent, episodes=args.episodes, workers=args.cpus)
        timed_run(EvalConfig(envs=envs[:1], agent=agent, episodes=2), RayBackend())  # warm
        local = timed_run(cfg, None)
        remote = timed_run(cfg, RayBackend())
        print(f"| {agent} | {n} | {n / local:.2f} | {n / remote:.2f} | "
              f"{(remote - local) / n * 1e3:+.0f} |", flush=True)
    ray.shutdown()


if __name__ == "__main__":
    main()
