"""Benchmark ``env.reset()`` per level and per family on fresh task seeds, and profile families.

Run: python benchmarks/bench_reset.py [--seeds N] [--family-seeds N] [--families a,b]
                                      [--baseline-tree DIR] [--json PATH] [--smoke]
                                      [--scenes photo]
     python benchmarks/bench_reset.py --profile FAMILY [--seeds N]
     python benchmarks/bench_reset.py --image-search [--entities N]
     python benchmarks/bench_reset.py --floor [--seeds N] [--families a,b]

The default run prints, for every level (``L1``, ``L2``, ``L3``, ``Classic``) and then for every
family, the mean / median / p95 / p99 / max wall time of a full ``M3BenchEnv.reset()`` and the
median CPU time and ``make_task`` time (the rest of a reset is the env's own work), and the p99
and max of the CPU time: on a shared machine (load average above the CPU count) the wall times
of every family inflate alike, so the budget (reset p99 <= 100 ms) is read off the CPU p99 and
against a fast family measured in the same run. Every reset
draws a fresh training task seed from the env's generator (no task is reused; there is no task
pool); one reset per env is made first and not counted (world build, font loading). The machine's
load average is printed before and after: other processes inflate wall times.

``--baseline-tree DIR`` (a ``git worktree add DIR <commit>`` of an older commit) runs the same
measurement on that tree's ``m3gym`` in a subprocess in the same run, on the same seeds, and
prints the ratio of medians (baseline / this tree); ``--json PATH`` writes the raw numbers.
``--smoke`` is a fast run (a few resets per level and family, no thresholds) for CI.
``--scenes photo`` measures the families' photographic scenes (``M3BenchEnv(scenes=...)``).
``--profile FAMILY`` prints the top cProfile entries of ``make_task`` for that family (set
``OPENBLAS_NUM_THREADS=1``). ``--image-search`` measures reverse-image-search top-1 accuracy over
``N`` entities for each perturbation type (and the median latency), since ``logo_lookup`` runs
that search at reset.

``--floor`` prints, per level (and per family with ``--families``), the size of the tasks' input
images and the time of the two whole-image steps every photographed page goes through — one
JPEG round trip and one perspective warp of the same size — on those very images (median per
task and p99 over tasks, OpenCV's default threads and one thread), next to the same two steps on
one view-sized (768 x 768) image: the least a fresh reset of that level (or family) can cost
while its pages keep their size and their camera.
"""

from __future__ import annotations

import argparse
import cProfile
import json
import os
import pstats
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import cv2
import numpy as np

ROOT = Path(__file__).resolve().parents[1]


def _tree_from_argv(argv: list[str]) -> Path:
    """Return the source tree named by ``--tree DIR`` in ``argv`` (default: this checkout)."""
    for i, a in enumerate(argv[:-1]):
        if a == "--tree":
            return Path(argv[i + 1]).resolve()
    return ROOT


sys.path.insert(0, str(_tree_from_argv(sys.argv)))  # import m3gym from the measured tree

from m3gym.env import M3BenchEnv  # noqa: E402
from m3gym.tasks import registry as _registry  # noqa: E402
from m3gym.tasks import render as R  # noqa: E402
from m3gym.tasks.registry import family_names, get_family, make_task  # noqa: E402
from m3gym.web import build_world  # noqa: E402

GROUPS: tuple[tuple[str, dict[str, Any]], ...] = (
    ("L1", {"level": 1}), ("L2", {"level": 2}), ("L3", {"level": 3}),
    ("Classic", {"level": 1, "suite": "classic"}),
)
"""The env groups a run measures: name and ``M3BenchEnv`` keyword arguments."""


def percentiles(values: list[float]) -> dict[str, float]:
    """Return ``n``, mean, median, p95, p99 and max of ``values`` (milliseconds).

    The mean is what a batch of resets costs per reset (a level mixes fast and slow families,
    so its median can sit anywhere in the gap between them from one run to the next).
    """
    arr = np.asarray(values, np.float64)
    if arr.size == 0:
        return {"n": 0, "mean": float("nan"), "median": float("nan"), "p95": float("nan"),
                "p99": float("nan"), "max": float("nan")}
    return {"n": int(arr.size), "mean": float(arr.mean()), "median": float(np.median(arr)),
            "p95": float(np.percentile(arr, 95)), "p99": float(np.percentile(arr, 99)),
            "max": float(arr.max())}


class _MakeTaskTimer:
    """Wraps ``make_task`` where the env calls it, summing its wall time per reset."""

    def __init__(self) -> None:
        self.total = 0.0
        self._orig = None

    def __enter__(self) -> _MakeTaskTimer:
        import m3gym.env as env_module

        self._module = env_module
        self._orig = env_module.make_task
        orig = self._orig

        def timed(*args: Any, **kwargs: Any) -> Any:
            t = time.perf_counter()
            try:
                return orig(*args, **kwargs)
            finally:
                self.total += time.perf_counter() - t

        env_module.make_task = timed
        return self

    def __exit__(self, *exc: object) -> None:
        self._module.make_task = self._orig


def time_resets(env_kwargs: dict[str, Any], n: int, seed: int) -> list[dict[str, Any]]:
    """Return one record per reset of ``M3BenchEnv(**env_kwargs)``: wall, cpu, make_task ms."""
    env = M3BenchEnv(**env_kwargs)
    env.reset(seed=10_000_000 + seed)  # warm-up, not counted
    out = []
    with _MakeTaskTimer() as mt:
        for i in range(n):
            mt.total = 0.0
            c, w = time.process_time(), time.perf_counter()
            _, info = env.reset(seed=seed * 100_003 + i)
            wall = 1e3 * (time.perf_counter() - w)
            out.append({"family": info.get("family", env.task.family), "wall": wall,
                        "cpu": 1e3 * (time.process_time() - c), "make_task": 1e3 * mt.total})
    env.close()
    return out


def measure(groups: list[str], families: list[str], seeds: int, family_seeds: int,
            scenes: str | None = None) -> dict[str, Any]:
    """Return the raw reset records of every level group and family (see :func:`time_resets`).

    ``scenes`` (e.g. ``"photo"``) is passed to every env (families without photo scenes ignore
    it or are skipped when the env refuses it).
    """
    kwargs = dict(GROUPS)
    extra: dict[str, Any] = {"scenes": scenes} if scenes else {}
    res: dict[str, Any] = {"groups": {}, "families": {}}
    for g in groups:
        res["groups"][g] = time_resets({**kwargs[g], **extra}, seeds, 1 + list(kwargs).index(g))
    for k, name in enumerate(families):
        try:
            res["families"][name] = time_resets({"family": name, **extra}, family_seeds, 100 + k)
        except (TypeError, ValueError) as err:  # a family without photo scenes
            if not scenes:
                raise
            print(f"{name}: skipped ({err})", file=sys.stderr)
    return res


def _summary(records: list[dict[str, Any]]) -> dict[str, Any]:
    """Return the wall percentiles, median / p99 / max CPU and median make_task ms of records."""
    out = percentiles([r["wall"] for r in records])
    cpu = percentiles([r["cpu"] for r in records])
    out["cpu"] = cpu["median"]
    out["cpu_p99"], out["cpu_max"] = cpu["p99"], cpu["max"]
    out["make_task"] = (statistics.median(r["make_task"] for r in records) if records
                        else float("nan"))
    return out


def print_table(res: dict[str, Any], base: dict[str, Any] | None) -> None:
    """Print one row per level group and per family (with the baseline ratio when given)."""
    head = (f"{'env':<26}{'n':>4}{'mean':>9}{'median':>9}{'p95':>9}{'p99':>9}{'max':>9}"
            f"{'cpu med':>9}{'cpu p99':>9}{'cpu max':>9}{'make_task':>10}"
            + (f"{'base med':>10}{'wall x':>8}{'base cpu':>10}{'cpu x':>7}" if base else ""))
    print(head)
    print("(ms; wall time unless marked cpu; 'x' columns: baseline median / this tree's median)")
    for section, label in (("groups", "reset "), ("families", "")):
        for name, records in res[section].items():
            s = _summary(records)
            fam = "" if section == "groups" else f" L{get_family(name).level}"
            row = (f"{label + name + fam:<26}{s['n']:>4}{s['mean']:>9.1f}{s['median']:>9.1f}"
                   f"{s['p95']:>9.1f}{s['p99']:>9.1f}{s['max']:>9.1f}{s['cpu']:>9.1f}"
                   f"{s['cpu_p99']:>9.1f}{s['cpu_max']:>9.1f}{s['make_task']:>10.1f}")
            if base and name in base.get(section, {}):
                b = _summary(base[section][name])
                row += (f"{b['median']:>10.1f}{b['median'] / max(s['median'], 1e-9):>8.2f}"
                        f"{b['cpu']:>10.1f}{b['cpu'] / max(s['cpu'], 1e-9):>7.2f}")
            print(row)


def run_baseline(tree: Path, argv: list[str]) -> dict[str, Any]:
    """Run this script's measurement on ``tree``'s ``m3gym`` in a subprocess; return its records."""
    if not (tree / "m3gym" / "__init__.py").is_file():
        raise SystemExit(f"--baseline-tree {tree}: no m3gym package there")
    out = Path(os.environ.get("TMPDIR", "/tmp")) / f"bench_reset_base_{os.getpid()}.json"
    cmd = [sys.executable, str(Path(__file__).resolve()), "--tree", str(tree), "--json",
           str(out), "--quiet", *argv]
    subprocess.run(cmd, check=True, cwd=tree)
    return json.loads(out.read_text())


def load_line() -> str:
    """Return the 1, 5 and 15 minute load averages and the CPU count as text."""
    one, five, fifteen = os.getloadavg()
    return f"load average {one:.2f} {five:.2f} {fifteen:.2f} on {os.cpu_count()} CPUs"


# ------------------------------------------------------------------ image search robustness


def _resize(img: np.ndarray, n: int) -> np.ndarray:
    """Return ``img`` resized to ``n`` x ``n`` (area when shrinking, cubic when enlarging)."""
    return cv2.resize(img, (n, n), interpolation=cv2.INTER_AREA if n < img.shape[0]
                      else cv2.INTER_CUBIC)


def _surround(rng: np.random.Generator, logo: np.ndarray, margins: tuple[int, int, int, int]
              ) -> np.ndarray:
    """Return ``logo`` pasted into a random background with ``(top, bottom, left, right)``."""
    top, bottom, left, right = margins
    n = logo.shape[0]
    h, w = n + top + bottom, n + left + right
    if rng.random() < 0.5:  # blurred noise (the unit tests' background)
        bg = cv2.GaussianBlur(rng.integers(0, 256, (h, w, 3), dtype=np.uint8), (0, 0), 5)
    else:  # a scene texture
        bg = R.background(rng, h, w)
    bg[top:top + n, left:left + n] = logo
    return bg


def _photometric(rng: np.random.Generator, img: np.ndarray) -> np.ndarray:
    """Return ``img`` with contrast x0.6-1.3 and brightness +-30."""
    return cv2.convertScaleAbs(img, alpha=rng.uniform(0.6, 1.3), beta=rng.uniform(-30, 30))


def _scene_crop(rng: np.random.Generator, logo: np.ndarray, jitter: tuple[int, int, int, int]
                = (0, 0, 0, 0)) -> np.ndarray:
    """Return a logo_lookup-like query: a 40-60 px logo on a plate in a noisy scene, cropped
    with a 1-5 % margin (plus ``jitter`` px per side) and zoomed like the crop tool."""
    side = int(rng.integers(40, 61))
    h, w = 240, 320
    img = R.background(rng, h, w)
    plate = R.rand_color(rng, 30, 230)
    x, y = int(rng.integers(40, w - side - 40)), int(rng.integers(40, h - side - 40))
    cv2.rectangle(img, (x - 30, y - side // 4), (x + side + 30, y + side + side // 4), plate, -1)
    img[y:y + side, x:x + side] = cv2.resize(logo, (side, side), interpolation=cv2.INTER_AREA)
    img = R.add_sensor_noise(img, rng, float(rng.uniform(0.8, 2.0)))
    m = max(1, int(side * rng.uniform(0.0, 0.05)))
    x0, y0, x1, y1 = x - m - jitter[0], y - m - jitter[1], x + side + m + jitter[2], \
        y + side + m + jitter[3]
    crop = img[y0:y1, x0:x1]
    zoom = float(rng.choice([2.0, 2.5, 3.0]))
    return cv2.resize(crop, (round(crop.shape[1] * zoom), round(crop.shape[0] * zoom)),
                      interpolation=cv2.INTER_LANCZOS4)


def _perturb(kind: str, rng: np.random.Generator, logo: np.ndarray) -> np.ndarray:
    """Return the query of perturbation ``kind`` for ``logo``."""
    n = logo.shape[0]
    if kind == "exact":
        return logo
    if kind == "scale":
        return _resize(logo, max(8, round(n * rng.uniform(0.5, 3.0))))
    if kind == "margin":
        return _surround(rng, logo, tuple(int(rng.uniform(0, 0.2) * n) for _ in range(4)))
    if kind == "offset":
        dx, dy = (int(round(rng.uniform(-0.06, 0.06) * n)) for _ in range(2))
        big = _surround(rng, logo, (n // 4, n // 4, n // 4, n // 4))
        o = n // 4
        return big[o + dy:o + dy + n, o + dx:o + dx + n]
    if kind == "photometric":
        return _photometric(rng, logo)
    if kind == "gray":
        return cv2.cvtColor(logo, cv2.COLOR_RGB2GRAY)
    if kind == "combined":
        s = rng.uniform(0.5, 3.0)
        im = _photometric(rng, _resize(logo, max(8, round(n * s))))
        m = im.shape[0]
        im = _surround(rng, im, tuple(int(rng.uniform(0, 0.2) * m) for _ in range(4)))
        return cv2.cvtColor(im, cv2.COLOR_RGB2GRAY) if rng.random() < 0.5 else im
    if kind == "scene":
        return _scene_crop(rng, logo)
    raise ValueError(kind)


SEARCH_PERTURBATIONS: tuple[str, ...] = ("exact", "scale", "margin", "offset", "photometric",
                                         "gray", "combined", "scene")


def image_search_table(entities: int, seed: int = 0) -> None:
    """Print top-1 accuracy and median latency of ``World.image_search`` per perturbation."""
    world = build_world(0, "train")
    _ = world.logo_descriptors
    idx = np.random.default_rng(seed).choice(len(world), entities, replace=False)
    print(f"{'perturbation':<14}{'top-1':>8}{'top-5':>8}{'wall ms':>9}{'cpu ms':>8}"
          "  (medians per search)")
    for kind in SEARCH_PERTURBATIONS:
        rng = np.random.default_rng([seed, SEARCH_PERTURBATIONS.index(kind)])
        top1 = top5 = 0
        times, cpu = [], []
        for i in idx:
            e = world.entities[int(i)]
            q = _perturb(kind, rng, world.logo(e))
            t, c = time.perf_counter(), time.process_time()
            hits = world.image_search(q, 5)
            times.append(time.perf_counter() - t)
            cpu.append(time.process_time() - c)
            top1 += hits[0].entity == e.key
            top5 += any(h.entity == e.key for h in hits)
        print(f"{kind:<14}{top1 / entities:>8.3f}{top5 / entities:>8.3f}"
              f"{1e3 * statistics.median(times):>9.2f}{1e3 * statistics.median(cpu):>8.2f}")
    # one-pixel stability: the same scene crop with each side moved by -1, 0 or +1 px
    rng = np.random.default_rng([seed, 99])
    stable = 0
    n = min(entities, 100)
    for i in idx[:n]:
        e = world.entities[int(i)]
        state = rng.bit_generator.state
        ok = True
        for jit in ((0, 0, 0, 0), (1, 0, 0, 0), (0, 1, 0, 0), (0, 0, 1, 0), (0, 0, 0, 1),
                    (-1, 0, 0, 0), (0, -1, 0, 0), (0, 0, -1, 0), (0, 0, 0, -1)):
            rng.bit_generator.state = state
            ok &= world.image_search(_scene_crop(rng, world.logo(e), jit), 1)[0].entity == e.key
        stable += ok
    print(f"{'scene +-1 px':<14}{stable / n:>8.3f}   (all 9 crop boxes rank the target first,"
          f" {n} entities)")


_FLOOR_WARP = np.array([[1.0, 0.02, 3.0], [0.01, 1.0, 2.0], [2e-6, 1e-6, 1.0]])
"""A mild perspective, as the camera model's: its cost does not depend on the matrix."""


def camera_floor_ms(images: tuple[np.ndarray, ...], threads: int) -> float:
    """Return the ms of one JPEG round trip (quality 85) plus one perspective warp per image.

    The round trip is the camera model's own (:func:`~m3gym.tasks.render.jpeg_artifacts`); the
    OpenCV thread count is ``threads`` while timing and restored after.
    """
    before = cv2.getNumThreads()
    cv2.setNumThreads(threads)
    try:
        t = time.perf_counter()
        for img in images:
            R.jpeg_artifacts(img, 85)
            cv2.warpPerspective(img, _FLOOR_WARP, (img.shape[1], img.shape[0]))
        return 1e3 * (time.perf_counter() - t)
    finally:
        cv2.setNumThreads(before)


def floor_table(seeds: int, families: list[str] | None = None) -> None:
    """Print each level's (and each of ``families``') input size and camera floor (``--floor``).

    A family's rows are built with :func:`make_task` on the same training seeds as the levels'
    resets; its ``p99 floor`` column is the floor of its largest tasks, the least its reset
    tail can cost while its pages keep their size and their camera.
    """
    threads = cv2.getNumThreads()
    rng = np.random.default_rng(0)
    view = cv2.GaussianBlur(rng.integers(0, 256, (768, 768, 3), dtype=np.uint8), (0, 0), 2.0)
    print(f"camera floor: one JPEG round trip (q85) + one perspective warp per input image "
          f"({load_line()})")
    samples: dict[str, list[tuple[np.ndarray, ...]]] = {}
    for g, kw in GROUPS:
        env = M3BenchEnv(**kw)
        samples[g] = []
        for i in range(seeds):
            env.reset(seed=500_000 + i)
            samples[g].append(tuple(np.ascontiguousarray(im) for im in env.task.images))
        env.close()
    samples["768x768"] = [(view,)] * seeds
    for fam in families or ():
        samples[fam] = [tuple(np.ascontiguousarray(im) for im in make_task(fam, 500_000 + i).images)
                        for i in range(seeds)]
    width = max(10, *(len(g) + 1 for g in samples))
    print(f"{'level':<{width}}{'tasks':>6}{'Mpx/task':>10}{'max Mpx':>9}{'floor ms':>10}"
          f"{'1 thread':>10}{'p99 floor':>10}")
    for g, tasks in samples.items():
        mpx = [sum(im.shape[0] * im.shape[1] for im in imgs) / 1e6 for imgs in tasks]
        multi = [camera_floor_ms(imgs, threads) for imgs in tasks]
        single = [camera_floor_ms(imgs, 1) for imgs in tasks]
        print(f"{g:<{width}}{len(tasks):>6}{statistics.median(mpx):>10.2f}{max(mpx):>9.2f}"
              f"{statistics.median(multi):>10.1f}{statistics.median(single):>10.1f}"
              f"{percentiles(multi)['p99']:>10.1f}")
    print("(medians per task, and the p99 over tasks; the 768x768 row is one view-sized image, "
          "the smallest page that is not shown whole)")


def profile_family(name: str, seeds: int) -> None:
    """Print the top cProfile entries (by own time and cumulative) of ``make_task(name, s)``."""
    make_task(name, 10_000)
    prof = cProfile.Profile()
    prof.enable()
    for s in range(seeds):
        make_task(name, s)
    prof.disable()
    pstats.Stats(prof).sort_stats("tottime").print_stats(25)
    pstats.Stats(prof).sort_stats("cumulative").print_stats(30)


def main() -> None:
    """Print the per-level and per-family reset table (or ``--profile`` / ``--image-search``)."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seeds", type=int, default=40, help="resets per level group (40)")
    ap.add_argument("--family-seeds", type=int, default=30, help="resets per family (30)")
    ap.add_argument("--families", default="", help="comma-separated families (default: all)")
    ap.add_argument("--levels", default="L1,L2,L3,Classic", help="level groups to measure")
    ap.add_argument("--no-families", action="store_true", help="only the level groups")
    ap.add_argument("--smoke", action="store_true", help="a fast run: 3 resets per group/family")
    ap.add_argument("--scenes", default=None,
                    help="scene kind passed to every env (e.g. photo; default: the family's)")
    ap.add_argument("--baseline-tree", type=Path, default=None,
                    help="also measure this source tree (a git worktree) in the same run")
    ap.add_argument("--json", type=Path, default=None, help="write the raw records here")
    ap.add_argument("--tree", type=Path, default=None, help=argparse.SUPPRESS)
    ap.add_argument("--quiet", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--profile", default="")
    ap.add_argument("--image-search", action="store_true")
    ap.add_argument("--entities", type=int, default=300)
    ap.add_argument("--floor", action="store_true",
                    help="print each level's camera floor (JPEG round trip + warp) instead")
    args = ap.parse_args()
    if args.floor:
        floor_table(args.seeds, [f for f in args.families.split(",") if f])
        return
    if args.image_search:
        image_search_table(args.entities)
        return
    if args.profile:
        profile_family(args.profile, args.seeds)
        return
    if args.smoke:
        args.seeds, args.family_seeds = 3, 2
    if args.seeds < 1 or args.family_seeds < 1:
        ap.error("--seeds and --family-seeds must be >= 1")
    known = dict(GROUPS)
    groups = [g for g in args.levels.split(",") if g]
    bad = [g for g in groups if g not in known]
    if bad:
        ap.error(f"unknown level group(s) {bad}; known: {', '.join(known)}")
    families = [] if args.no_families else (
        args.families.split(",") if args.families else family_names(suite=None))
    for f in families:
        get_family(f)  # a precise error for an unknown name
    base = None
    if args.baseline_tree is not None:
        passed = ["--seeds", str(args.seeds), "--family-seeds", str(args.family_seeds),
                  "--levels", ",".join(groups), "--families", ",".join(families)]
        if not families:
            passed.append("--no-families")
        if args.scenes:
            passed += ["--scenes", args.scenes]
        print(f"baseline {args.baseline_tree}: measuring ({load_line()})", flush=True)
        base = run_baseline(args.baseline_tree.resolve(), passed)
    if not args.quiet:
        print(f"m3gym {Path(_registry.__file__).resolve().parents[2]}: before, {load_line()}",
              flush=True)
    res = measure(groups, families, args.seeds, args.family_seeds, args.scenes)
    if args.json:
        args.json.write_text(json.dumps(res))
    if args.quiet:
        return
    print(f"after, {load_line()}")
    print_table(res, base)


if __name__ == "__main__":
    main()
