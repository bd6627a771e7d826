"""Heuristic accuracy and reset time of every photo family, flat scenes vs photographic scenes.

Run: python benchmarks/bench_photo_scenes.py [--family NAME ...] [--seeds N] [--repeats R]
                                             [--backgrounds FOLDER] [--json PATH]

For every family with ``photo_scenes`` (or each ``--family``) and the same ``N`` training seeds
(``0 .. N-1``), it prints one table row:

* the heuristic agent's accuracy on the flat tasks and on the photographic variants
  (:func:`m3gym.testing.heuristic_accuracy` with ``config=None`` and ``config={"scenes":
  "photo"}``, the family's default difficulty, OCR ``auto``; the header says which OCR backend
  that resolved to on this machine);
* the median ``make_task`` time (ms) of the flat and of the photo task: every seed is built
  ``R`` times in each scene, flat and photo interleaved, and the median over all those builds is
  taken; the ratio photo / flat is of medians measured in the same run. One flat and one photo
  build per family come first and are not counted (fonts, photo decode cache).

No thresholds: it reports. ``--json PATH`` writes the numbers. The machine's load average is
printed before and after (other processes inflate the times, not the ratios' sign).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from m3gym.agents.ocr import forced_ocr_backend  # noqa: E402
from m3gym.tasks.registry import family_names, get_family, make_task  # noqa: E402
from m3gym.testing import heuristic_accuracy  # noqa: E402

DEFAULT_SEEDS: int = 6
"""Seeds per family by default: 17 families x 2 scenes x 6 episodes of the heuristic agent, plus
the timed builds, take about ten minutes on two busy cores."""
DEFAULT_REPEATS: int = 3
"""Timed ``make_task`` builds per seed and scene."""


def photo_families() -> list[str]:
    """Return every registered family whose ``photo_scenes`` is True."""
    return [f for f in family_names(suite=None) if get_family(f).photo_scenes]


def photo_config(backgrounds: str | None) -> dict[str, Any]:
    """Return the ``make_task`` config of the photographic variant (bundled or a folder)."""
    if backgrounds:
        return {"backgrounds": str(Path(backgrounds).expanduser().resolve())}
    return {"scenes": "photo"}


def build_ms(family: str, seed: int, config: dict[str, Any] | None) -> float:
    """Return the wall time of one ``make_task(family, seed, config)`` in milliseconds."""
    start = time.perf_counter()
    make_task(family, seed, dict(config) if config is not None else None)
    return (time.perf_counter() - start) * 1000.0


def reset_times(family: str, seeds: list[int], photo: dict[str, Any],
                repeats: int) -> tuple[float, float]:
    """Return the median ``make_task`` ms (flat, photo) over ``repeats`` builds of each seed.

    Flat and photo builds alternate so that load drifts hit both alike; one build of each is made
    first and not counted.
    """
    build_ms(family, seeds[0], None)
    build_ms(family, seeds[0], photo)
    flat: list[float] = []
    pics: list[float] = []
    for _ in range(repeats):
        for seed in seeds:
            flat.append(build_ms(family, seed, None))
            pics.append(build_ms(family, seed, photo))
    return statistics.median(flat), statistics.median(pics)


def measure(family: str, seeds: list[int], photo: dict[str, Any],
            repeats: int) -> dict[str, Any]:
    """Return one family's numbers: accuracies flat / photo and median reset ms flat / photo."""
    acc_flat = heuristic_accuracy(family, None, seeds, "auto", config=None)
    acc_photo = heuristic_accuracy(family, None, seeds, "auto", config=photo)
    flat_ms, photo_ms = reset_times(family, seeds, photo, repeats)
    return {"family": family, "seeds": len(seeds), "acc_flat": acc_flat,
            "acc_photo": acc_photo, "reset_ms_flat": flat_ms, "reset_ms_photo": photo_ms,
            "reset_ratio": photo_ms / flat_ms if flat_ms > 0 else float("nan")}


def format_row(r: dict[str, Any]) -> str:
    """Return one Markdown table row of :func:`measure`'s numbers."""
    delta = (r["acc_photo"] - r["acc_flat"]) * 100
    return (f"| {r['family']} | {r['seeds']} | {r['acc_flat']:.2f} | {r['acc_photo']:.2f} | "
            f"{delta:+.0f} | {r['reset_ms_flat']:.1f} | {r['reset_ms_photo']:.1f} | "
            f"{r['reset_ratio']:.2f} |")


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, measure every family, print the table (and write ``--json``)."""
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--family", action="append",
                   help="family (repeatable; default: every family with photo scenes)")
    p.add_argument("--seeds", type=int, default=DEFAULT_SEEDS,
                   help=f"training seeds 0..N-1 per family (default {DEFAULT_SEEDS})")
    p.add_argument("--repeats", type=int, default=DEFAULT_REPEATS,
                   help=f"timed make_task builds per seed and scene (default {DEFAULT_REPEATS})")
    p.add_argument("--backgrounds", default=None, metavar="FOLDER",
                   help="photos to draw the scenes into (default: the bundled set)")
    p.add_argument("--json", default=None, metavar="PATH", help="write the numbers here")
    args = p.parse_args(argv)
    if args.seeds < 1 or args.repeats < 1:
        p.error("--seeds and --repeats must be >= 1")
    families = args.family or photo_families()
    for family in families:
        if not get_family(family).photo_scenes:
            p.error(f"{family} has no photo scenes ({get_family(family).flat_scene_reason})")
    photo = photo_config(args.backgrounds)
    seeds = list(range(args.seeds))
    with forced_ocr_backend("auto") as backend:
        pass
    load0 = os.getloadavg()
    print(f"# Photo scenes vs flat: {len(families)} families, seeds 0..{args.seeds - 1}, "
          f"{args.repeats} timed builds per seed and scene; OCR auto -> {backend}; "
          f"photos: {photo.get('backgrounds', 'bundled')}; load average {load0[0]:.2f}\n")
    print("| family | seeds | heuristic acc flat | heuristic acc photo | delta (points) | "
          "reset ms flat (median) | reset ms photo (median) | photo / flat |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    start = time.perf_counter()
    rows = []
    for family in families:
        r = measure(family, seeds, photo, args.repeats)
        rows.append(r)
        print(format_row(r), flush=True)
    wall = time.perf_counter() - start
    load1 = os.getloadavg()
    print(f"\n{wall:.0f} s; load average {load0[0]:.2f} before, {load1[0]:.2f} after")
    if args.json:
        Path(args.json).write_text(json.dumps({
            "seeds": seeds, "repeats": args.repeats, "ocr": backend,
            "photos": photo.get("backgrounds", "bundled"), "wall_s": wall,
            "load_before": load0[0], "load_after": load1[0], "families": rows}, indent=1))
        print(f"wrote {args.json}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
