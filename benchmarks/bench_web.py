"""Benchmark the offline web world: build time and median latency of each retrieval tool.

Run: python benchmarks/bench_web.py
"""

import statistics
import time

import numpy as np

from m3gym.state import ImageState
from m3gym.tools.base import ToolContext
from m3gym.tools.registry import ToolRegistry
from m3gym.tools.web import RETRIEVAL_TOOLS
from m3gym.web import build_world
from m3gym.web.entities import draft_entities
from m3gym.web.world import World, build_pages, finalize, world_rng


def timed(fn):
    t = time.perf_counter()
    out = fn()
    return out, time.perf_counter() - t


def median_ms(fn, n):
    times = []
    for i in range(n):
        t = time.perf_counter()
        fn(i)
        times.append(time.perf_counter() - t)
    return 1e3 * statistics.median(times)


def main():
    def fresh_build():
        rng = world_rng(123, "train")
        entities = tuple(finalize(rng, draft_entities(rng, "train")))
        return World(123, "train", entities, build_pages(rng, entities))

    world, build_s = timed(fresh_build)
    _, logo_s = timed(lambda: world.logo_descriptors)
    print(f"world build: {build_s:.3f} s for {len(world)} entities "
          f"(logo index on first image_search: {logo_s:.3f} s)")
    build_world(123, "train")
    world = build_world(123, "train")
    _ = world.logo_descriptors
    reg = ToolRegistry(RETRIEVAL_TOOLS)
    ents = world.entities
    state = ImageState(max_images=10_000, max_bytes=1 << 34)
    rng = np.random.default_rng(0)
    for e in ents[:50]:
        logo = world.logo(e)
        pad = rng.integers(0, 256, (logo.shape[0] + 40, logo.shape[1] + 30, 3), dtype=np.uint8)
        pad[20:20 + logo.shape[0], 10:10 + logo.shape[1]] = logo
        state.add_root(pad)
    ctx = ToolContext(state=state, visible_images=len(state), world=world, max_downloads=10**9)

    def call(name, args):
        rec = reg.execute(ctx, name, args, 0, "b")
        assert rec.ok, rec.error

    n = 50
    rows = {
        "web_search": median_ms(lambda i: call("web_search",
                                               {"query": world.good_query(ents[i * 7])}), n),
        "image_search": median_ms(lambda i: call("image_search", {"image_index": i}), n),
        "fetch_webpage": median_ms(lambda i: call("fetch_webpage", {"url": ents[i * 7].url}), n),
        "download_image": median_ms(lambda i: call("download_image",
                                                   {"url": ents[i * 7].url}), n),
    }
    for name, ms in rows.items():
        print(f"{name:>15}: median {ms:.3f} ms over {n} calls")


if __name__ == "__main__":
    main()
