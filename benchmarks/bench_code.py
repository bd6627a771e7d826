"""Benchmark code mode: cell round trips on a warm sandbox worker, worker start and reset.

Run: python benchmarks/bench_code.py [--n 300] [--isolation auto|none|bwrap|all]

For each isolation it reports the distribution (p50 / p90 / p99 / max, milliseconds) of

* ``worker``: a trivial cell (``x = 1``) sent straight to a warm worker and answered;
* ``env.step``: the same cell as a ``run_python`` step of a code-mode env (parsing, sandbox
  round trip, scoring of the step, observation);
* ``traced crop``: a cell that slices Image 0 (1500x2374 px), resizes it x2 and saves it: pixels
  fetched, the lineage verified by a replay, a canonical ``crop`` call recorded and scored;
* ``start`` (a new worker, ready to run) and ``reset`` (between episodes), fewer samples.

The target is a trivial round trip ≤ 20 ms on a warm worker.
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from m3gym.env import M3BenchEnv  # noqa: E402
from m3gym.sandbox import SandboxLimits, SandboxWorker, bwrap_works  # noqa: E402


def summary(samples: list[float]) -> str:
    """Return ``p50 / p90 / p99 / max`` of seconds, in milliseconds."""
    ms = np.asarray(samples) * 1000
    p50, p90, p99 = np.percentile(ms, [50, 90, 99])
    return (f"n={len(ms):4d}  p50 {p50:7.2f}  p90 {p90:7.2f}  p99 {p99:7.2f}  "
            f"max {ms.max():7.2f}  mean {statistics.fmean(ms):7.2f} ms")


def timed(fn, n: int) -> list[float]:
    """Return ``n`` wall-clock durations of ``fn()`` (after 5 warm-up calls)."""
    for _ in range(5):
        fn()
    out = []
    for _ in range(n):
        t = time.perf_counter()
        fn()
        out.append(time.perf_counter() - t)
    return out


def bench(isolation: str, n: int) -> None:
    """Print the distributions for one isolation."""
    print(f"isolation={isolation}")
    starts = []
    for _ in range(5):
        t = time.perf_counter()
        worker = SandboxWorker({}, SandboxLimits(), isolation)  # type: ignore[arg-type]
        starts.append(time.perf_counter() - t)
        worker.kill()
    worker = SandboxWorker({}, SandboxLimits(), isolation)  # type: ignore[arg-type]

    def refuse(msg, arrays):
        return {"ok": False, "error": "no images here"}, ()

    print("  worker       ", summary(timed(lambda: worker.run("x = 1", 1, refuse), n)))
    print("  reset        ", summary(timed(worker.reset, max(10, n // 10))))
    worker.kill()
    print("  start        ", summary(starts))
    env = M3BenchEnv(family="tiny_text", interface="code", max_rounds=10**6,
                     max_tool_calls=10**6, sandbox={"isolation": isolation})
    env.reset(seed=0)
    step = {"name": "run_python", "arguments": {"code": "x = 1"}}
    print("  env.step     ", summary(timed(lambda: env.step(step), n)))
    h, w = env.state[0].array.shape[:2]
    crop = {"name": "run_python", "arguments": {"code": (
        f"save(cv2.resize(images[0][{h // 4}:{h // 2}, {w // 4}:{w // 2}], None, fx=2, fy=2, "
        "interpolation=cv2.INTER_LANCZOS4))")}}

    samples = []
    for _ in range(max(20, n // 10)):
        env.reset(seed=0)  # same task: the crop is recorded afresh each time
        t = time.perf_counter()
        env.step(crop)
        samples.append(time.perf_counter() - t)
    print("  traced crop  ", summary(samples))
    env.close()


def main() -> None:
    """Parse arguments and run the benchmark."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=300)
    parser.add_argument("--isolation", default="all", choices=("auto", "none", "bwrap", "all"))
    args = parser.parse_args()
    if args.isolation == "all":
        isolations = ["none"] + (["bwrap"] if bwrap_works() else [])
    else:
        isolations = [args.isolation]
    for isolation in isolations:
        bench(isolation, args.n)


if __name__ == "__main__":
    main()
