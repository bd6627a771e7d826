"""Time ``env.reset()`` of two source trees interleaved, reset by reset, on the same seeds.

Run: python benchmarks/bench_reset_ab.py BASE_TREE [NEW_TREE] --families a,b [--seeds N]

``BASE_TREE`` (e.g. ``git worktree add /tmp/base <commit>``) and ``NEW_TREE`` (default: this
checkout) each run in a worker process of their own that imports that tree's ``m3gym`` and keeps
one ``M3BenchEnv(family=...)`` per family (one warm-up reset each, not counted). The driver sends
every seed to both workers in turn, alternating which goes first, so a background load that
comes and goes inflates both trees alike: on a shared machine the ratios are what to read. It
prints, per family, the median / p95 / p99 / max wall time and the median and p99 CPU time of
each tree, the ratios base / new of the median and the p99, and the load average.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def worker(tree: str) -> None:
    """Serve ``family seed`` lines on stdin with ``wall_ms cpu_ms`` of one reset each."""
    sys.path.insert(0, tree)
    from m3gym.env import M3BenchEnv

    envs: dict[str, M3BenchEnv] = {}
    print("ready", flush=True)
    for line in sys.stdin:
        family, seed = line.split()
        env = envs.get(family)
        if env is None:
            env = envs[family] = M3BenchEnv(family=family)
            env.reset(seed=10_000_007)  # world build, fonts: not counted
        c, w = time.process_time(), time.perf_counter()
        env.reset(seed=int(seed))
        print(f"{1e3 * (time.perf_counter() - w):.3f} "
              f"{1e3 * (time.process_time() - c):.3f}", flush=True)


def summary(rows: np.ndarray) -> str:
    """Return the wall and CPU percentiles of ``rows`` (``(n, 2)``: wall, cpu ms) as text."""
    wall, cpu = rows[:, 0], rows[:, 1]
    return (f"med {np.median(wall):7.1f} p95 {np.percentile(wall, 95):7.1f} "
            f"p99 {np.percentile(wall, 99):7.1f} max {wall.max():7.1f} "
            f"cpu med {np.median(cpu):7.1f} cpu p99 {np.percentile(cpu, 99):7.1f}")


def main() -> None:
    """Start both workers and print the interleaved table."""
    if len(sys.argv) > 2 and sys.argv[1] == "--worker":
        worker(sys.argv[2])
        return
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("base", help="the baseline source tree (a git worktree)")
    ap.add_argument("new", nargs="?", default=str(ROOT), help="the measured tree (this checkout)")
    ap.add_argument("--families", required=True, help="comma-separated families")
    ap.add_argument("--seeds", type=int, default=60, help="resets per family and tree (60)")
    ap.add_argument("--first-seed", type=int, default=7_000_000,
                    help="training seed of the first reset (7000000)")
    args = ap.parse_args()
    env = dict(os.environ, OPENBLAS_NUM_THREADS=os.environ.get("OPENBLAS_NUM_THREADS", "1"))
    procs = {name: subprocess.Popen([sys.executable, __file__, "--worker", tree],
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
                                    env=env, cwd=tree)
             for name, tree in (("base", args.base), ("new", args.new))}
    for p in procs.values():
        if p.stdout is None or p.stdout.readline().strip() != "ready":
            raise SystemExit("a worker did not start")
    print(f"load average before: {' '.join(f'{v:.2f}' for v in os.getloadavg())} "
          f"on {os.cpu_count()} CPUs; {args.seeds} resets per family and tree (ms)")
    families = args.families.split(",")
    for k, family in enumerate(families):
        rows: dict[str, list[tuple[float, float]]] = {"base": [], "new": []}
        for i in range(args.seeds):
            seed = args.first_seed + 1000 * k + i
            for name in (("base", "new") if i % 2 == 0 else ("new", "base")):
                p = procs[name]
                assert p.stdin is not None and p.stdout is not None
                p.stdin.write(f"{family} {seed}\n")
                p.stdin.flush()
                wall, cpu = map(float, p.stdout.readline().split())
                rows[name].append((wall, cpu))
        b, n = np.array(rows["base"]), np.array(rows["new"])
        print(f"{family:<18} base {summary(b)}")
        print(f"{'':<18} new  {summary(n)}  median x{np.median(b[:, 0]) / np.median(n[:, 0]):.2f}"
              f"  p99 x{np.percentile(b[:, 0], 99) / np.percentile(n[:, 0], 99):.2f}  load "
              f"{os.getloadavg()[0]:.2f}", flush=True)
    for p in procs.values():
        if p.stdin is not None:
            p.stdin.close()
        p.wait()
    print(f"load average after: {' '.join(f'{v:.2f}' for v in os.getloadavg())}")


if __name__ == "__main__":
    main()
