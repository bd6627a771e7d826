"""Benchmark task generation: median CPU and wall time of ``make_task`` per family and of
``M3BenchEnv.reset`` per level.

Run: python benchmarks/bench_reset.py [--seeds N] [--families a,b] [--profile FAMILY]
     python benchmarks/bench_reset.py --image-search [--entities N]

CPU time is ``time.process_time`` (all threads of the process); wall time is
``time.perf_counter``. Each family is warmed up once (world build, caches) before timing.
``--profile FAMILY`` prints the top cProfile entries of ``make_task`` for that family.
``--image-search`` measures reverse-image-search top-1 accuracy over ``N`` entities for each
perturbation type (and the median latency), since ``logo_lookup`` runs that search at reset.
"""

from __future__ import annotations

import argparse
import cProfile
import pstats
import statistics
import sys
import time
from pathlib import Path

import cv2
import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from m3gym.env import M3BenchEnv  # noqa: E402
from m3gym.tasks import render as R  # noqa: E402
from m3gym.tasks.registry import family_names, get_family, make_task  # noqa: E402
from m3gym.web import build_world  # noqa: E402


def timed_ms(fn) -> tuple[float, float]:
    """Return ``(cpu_ms, wall_ms)`` of one call of ``fn``."""
    c, w = time.process_time(), time.perf_counter()
    fn()
    return 1e3 * (time.process_time() - c), 1e3 * (time.perf_counter() - w)


def bench_family(name: str, seeds: int) -> tuple[float, float, float]:
    """Return median CPU ms, median wall ms and max wall ms of ``make_task(name, seed)``."""
    make_task(name, 10_000)  # warm-up: worlds, caches
    cpu, wall = zip(*(timed_ms(lambda s=s: make_task(name, s)) for s in range(seeds)))
    return statistics.median(cpu), statistics.median(wall), max(wall)


def bench_env(level: int, seeds: int) -> tuple[float, float]:
    """Return median CPU ms and wall ms of ``M3BenchEnv(level).reset(seed=s)``."""
    env = M3BenchEnv(level=level)
    for name in env.families:
        make_task(name, 10_000)
    cpu, wall = zip(*(timed_ms(lambda s=s: env.reset(seed=s)) for s in range(seeds)))
    return statistics.median(cpu), statistics.median(wall)


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


def main() -> None:
    """Print one table row per family and per level."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--seeds", type=int, default=40)
    ap.add_argument("--families", default="")
    ap.add_argument("--profile", default="")
    ap.add_argument("--no-env", action="store_true")
    ap.add_argument("--image-search", action="store_true")
    ap.add_argument("--entities", type=int, default=300)
    args = ap.parse_args()
    if args.image_search:
        image_search_table(args.entities)
        return
    if args.profile:
        make_task(args.profile, 10_000)
        prof = cProfile.Profile()
        prof.enable()
        for s in range(args.seeds):
            make_task(args.profile, s)
        prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(25)
        return
    names = args.families.split(",") if args.families else family_names()
    print(f"{'family':<24}{'lvl':>4}{'cpu ms':>9}{'wall ms':>9}{'max wall':>10}")
    for name in names:
        cpu, wall, worst = bench_family(name, args.seeds)
        print(f"{name:<24}{get_family(name).level:>4}{cpu:>9.2f}{wall:>9.2f}{worst:>10.2f}")
    if not args.no_env:
        for level in (1, 2, 3):
            cpu, wall = bench_env(level, args.seeds)
            print(f"{'M3BenchEnv.reset L' + str(level):<28}{cpu:>9.2f}{wall:>9.2f}")


if __name__ == "__main__":
    main()
