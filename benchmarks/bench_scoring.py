"""Scoring throughput.

Alignment part: ``align`` + ``m3_score`` + ``overthink_score`` on N reference-replay traces and N
random traces (random references of 1–4 steps with 1–3 calls each; random traces perturb a replay
of the same or another reference: dropped, failed, jittered and regrouped calls).

    python benchmarks/bench_scoring.py --episodes 10000
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from m3gym.scoring.alignment import NON_IMAGE_TOOLS, align
from m3gym.scoring.m3 import m3_score
from m3gym.scoring.overthink import overthink_score
from m3gym.spec import RefCall
from m3gym.trace import CallRecord

VISUAL = ("crop", "rotate", "grayscale", "flip")
WORDS = ("acme", "founder", "logo", "river", "museum", "year", "plaque", "signal")


def random_reference(rng: np.random.Generator, n_inputs: int) -> tuple[tuple[RefCall, ...], ...]:
    steps: list[tuple[RefCall, ...]] = []
    n_images, producer, ids, searches = n_inputs, {}, [], []
    for _ in range(int(rng.integers(1, 5))):
        step: list[RefCall] = []
        visible = n_images
        for _ in range(int(rng.integers(1, 4))):
            cid = f"r{len(ids) + len(step)}"
            kind = str(rng.choice(["visual", "visual", "web_search", "fetch_webpage",
                                   "download_image", "image_search"]))
            img = int(rng.integers(0, visible))
            deps: tuple[str, ...] = (producer[img],) if img in producer else ()
            args: dict[str, Any] = {"image_index": img}
            name = kind
            if kind == "visual":
                name = str(rng.choice(VISUAL))
                if name == "crop":
                    x, y = np.sort(rng.integers(0, 1000, 2)), np.sort(rng.integers(0, 1000, 2))
                    args["bbox_2d"] = [int(x[0]), int(y[0]), int(x[1]) + 1, int(y[1]) + 1]
                elif name == "rotate":
                    args["angle"] = int(rng.choice([90, 180, 270, 15]))
                elif name == "flip":
                    args["direction"] = str(rng.choice(["horizontal", "vertical", "both"]))
            elif kind == "web_search":
                deps = (str(rng.choice(ids)),) if ids and rng.random() < 0.5 else ()
                args = {"query": " ".join(rng.choice(WORDS, 3).tolist())}
            elif kind == "fetch_webpage":
                deps = (searches[-1],) if searches else ()
                args = {"url": f"https://wiki.local/{rng.choice(WORDS)}"}
            elif kind == "download_image":
                deps, args = (), {"url": f"https://img.local/{rng.choice(WORDS)}.png"}
            step.append(RefCall(cid, name, args, deps))
            if name not in NON_IMAGE_TOOLS:
                producer[n_images] = cid
                n_images += 1
        ids.extend(c.id for c in step)
        searches.extend(c.id for c in step if c.name == "web_search")
        steps.append(tuple(step))
    return tuple(steps)


def replay(reference: tuple[tuple[RefCall, ...], ...], n_inputs: int) -> list[list[CallRecord]]:
    trace, next_image, n = [], n_inputs, 0
    for s, step in enumerate(reference):
        calls = []
        for r in step:
            out = None
            if r.name not in NON_IMAGE_TOOLS:
                out, next_image = next_image, next_image + 1
            args = dict(r.arguments)
            calls.append(CallRecord(s, f"c{n}", r.name, r.name, args, True, output_index=out,
                                    input_index=args.get("image_index")))
            n += 1
        trace.append(calls)
    return trace


def perturbed(trace: list[list[CallRecord]], rng: np.random.Generator) -> list[list[CallRecord]]:
    out: list[list[CallRecord]] = [[] for _ in range(len(trace) + 2)]
    for c in (c for step in trace for c in step):
        if rng.random() < 0.15:
            continue
        args = dict(c.arguments)
        if "bbox_2d" in args and rng.random() < 0.5:
            args["bbox_2d"] = [min(1000, v + int(rng.integers(0, 150))) for v in args["bbox_2d"]]
        if "query" in args and rng.random() < 0.5:
            args["query"] = " ".join(rng.choice(WORDS, 2).tolist())
        step = min(len(out) - 1, max(0, c.step + int(rng.integers(-1, 2))))
        out[step].append(CallRecord(step, c.call_id, c.name, c.name, args, rng.random() > 0.1,
                                    output_index=c.output_index,
                                    input_index=args.get("image_index")))
    return [s for s in out if s]


def score(reference: Any, n_inputs: int, trace: list[list[CallRecord]]) -> float:
    al = align(reference, n_inputs, trace)
    m3 = m3_score(reference, n_inputs, trace, al)
    return m3.total - overthink_score(reference, trace)


def bench_alignment(episodes: int, seed: int) -> dict[str, float]:
    """Return episodes/s of alignment + M3 + overthink on replay and on random traces."""
    rng = np.random.default_rng(seed)
    n_in = [int(rng.integers(1, 3)) for _ in range(episodes)]
    refs = [random_reference(rng, n) for n in n_in]
    replays = [replay(ref, n) for ref, n in zip(refs, n_in)]
    randoms = [perturbed(replay(refs[i] if rng.random() < 0.7 else
                                random_reference(rng, n_in[i]), n_in[i]), rng)
               for i in range(episodes)]
    out = {}
    for label, traces in (("replay", replays), ("random", randoms)):
        t0, c0 = time.perf_counter(), time.process_time()
        total = 0.0
        for ref, n, trace in zip(refs, n_in, traces):
            total += score(ref, n, trace)
        dt, cpu = time.perf_counter() - t0, time.process_time() - c0
        out[label] = episodes / dt
        print(f"alignment+M3+OT  {label:7s} {episodes:6d} episodes  wall {dt:6.2f} s "
              f"{episodes / dt:7.0f}/s  cpu {cpu:6.2f} s {episodes / cpu:7.0f}/s  "
              f"(mean M3-OT {total / episodes:.3f})")
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--episodes", type=int, default=10_000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    bench_alignment(args.episodes, args.seed)


if __name__ == "__main__":
    main()
