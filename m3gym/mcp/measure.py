"""Reply sizes and memory of ``m3gym mcp``, measured through the official MCP client (in memory).

``python -m m3gym.mcp.measure --seeds 200`` prints, per env, the largest ``start_episode`` reply
and the largest 4-crop ``parallel_calls`` reply as sent (bytes of the JSON-RPC message, what the
client's 1 MiB server-sent-event limit applies to), beside what the same images would take as
PNG at view resolution (the encoding before replies were sized); ``--rss-episodes N`` then plays
N short episodes and prints the server process's resident memory; ``--threads 64`` plays them
from 64 threads against the episode table (concurrent sessions). Needs the ``mcp`` extra.
"""

from __future__ import annotations

import argparse
import base64
import json
import resource
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from m3gym.codec import png_bytes
from m3gym.mcp import CLIENT_EVENT_LIMIT

CROPS: tuple[list[int], ...] = ([0, 0, 500, 500], [500, 0, 1000, 500], [0, 500, 500, 1000],
                                [500, 500, 1000, 1000])
"""The four quadrant crops of the parallel-crop measurement (zoom 2, on Image 0)."""


@dataclass
class Largest:
    """The largest reply seen for one env and one call."""

    sent: int = 0
    sent_seed: int = -1
    png: int = 0
    png_seed: int = -1
    over_limit_png: int = 0
    over_limit_sent: int = 0
    count: int = 0
    downscaled: int = 0
    seeds: list[int] = field(default_factory=list)

    def add(self, seed: int, sent: int, png: int, downscaled: bool) -> None:
        """Count one reply (``sent`` bytes as sent; ``png`` bytes as view-size PNG)."""
        self.count += 1
        self.downscaled += int(downscaled)
        self.over_limit_png += int(png > CLIENT_EVENT_LIMIT)
        self.over_limit_sent += int(sent > CLIENT_EVENT_LIMIT)
        if sent > self.sent:
            self.sent, self.sent_seed = sent, seed
        if png > self.png:
            self.png, self.png_seed = png, seed


def png_reply_bytes(result: Any, views: Sequence[np.ndarray]) -> int:
    """Return the bytes ``result`` would take with its images as PNG at view resolution."""
    from m3gym.mcp.server import reply_bytes

    base = reply_bytes(result) - sum(len(c.data) for c in result.content if c.type == "image")
    for view in views:
        base += len(base64.b64encode(png_bytes(view)))
    return base


def _views(table: Any, episode_id: str, indices: Sequence[int]) -> list[np.ndarray]:
    env = table._live[episode_id].rec.env.unwrapped
    return [env.view(int(i)) for i in indices]


async def measure_env(client: Any, table: Any, env_id: str, seeds: Sequence[int],
                      crops_too: bool = True) -> tuple[Largest, Largest]:
    """Return the largest start_episode and 4-crop parallel_calls replies over ``seeds``."""
    from m3gym.mcp.server import reply_bytes

    start, crops = Largest(), Largest()
    for seed in seeds:
        res = await client.call_tool("start_episode", {"env_id": env_id, "seed": seed})
        data = res.structured_content
        eid = data["episode_id"]
        start.add(seed, reply_bytes(res),
                  png_reply_bytes(res, _views(table, eid, data["image_indices"])),
                  "sent as" in res.content[0].text)
        if not crops_too:
            await client.call_tool("answer", {"episode_id": eid, "text": "x"})
            continue
        res = await client.call_tool("parallel_calls", {"episode_id": eid, "calls": [
            {"name": "crop", "arguments": {"image_index": 0, "bbox_2d": box, "zoom_scale": 2}}
            for box in CROPS]})
        new = res.structured_content["new_images"]
        crops.add(seed, reply_bytes(res), png_reply_bytes(res, _views(table, eid, new)),
                  "sent as" in res.content[0].text)
        await client.call_tool("answer", {"episode_id": eid, "text": "x"})
    return start, crops


def rss_mb() -> float:
    """Return this process's resident memory now, in MB (from /proc; peak where it is absent)."""
    try:
        with open("/proc/self/status") as fh:
            for line in fh:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


async def measure_rss(client: Any, env_ids: Sequence[str], episodes: int
                      ) -> list[tuple[int, float]]:
    """Play short episodes (start, one crop, answer); return (episodes, RSS MB) checkpoints."""
    points = [(0, rss_mb())]
    for n in range(episodes):
        env_id = env_ids[n % len(env_ids)]
        res = await client.call_tool("start_episode", {"env_id": env_id, "seed": 10_000 + n})
        eid = res.structured_content["episode_id"]
        await client.call_tool("crop", {"episode_id": eid, "image_index": 0,
                                        "bbox_2d": [250, 250, 750, 750]})
        await client.call_tool("answer", {"episode_id": eid, "text": "x"})
        if (n + 1) % max(1, episodes // 8) == 0 or n + 1 == episodes:
            points.append((n + 1, rss_mb()))
    return points


def concurrent_rss(env_ids: Sequence[str], threads: int, episodes: int,
                   max_episodes: int = 32) -> list[dict[str, Any]]:
    """Return RSS checkpoints of ``episodes`` episodes played from ``threads`` threads.

    Each is short (start, zoomed crop, answer), played against an
    :class:`~m3gym.mcp.episode_table.EpisodeTable` with memory set up as ``m3gym mcp`` does; each
    checkpoint carries what the table holds (:meth:`EpisodeTable.measure`). A start refused
    because the table is full is retried after 50 ms.
    """
    import threading
    import time

    from m3gym.mcp.episode_table import EpisodeError, EpisodeTable
    from m3gym.mcp.limits import McpLimits
    from m3gym.mcp.memory import limit_heap_retention

    limit_heap_retention()
    table = EpisodeTable(McpLimits(max_episodes=max_episodes))
    points: list[dict[str, Any]] = [{"episodes": 0, "rss_mb": round(rss_mb())}]
    done = [0]
    lock = threading.Lock()
    todo = iter(range(episodes))

    def worker() -> None:
        while True:
            with lock:
                n = next(todo, None)
            if n is None:
                return
            while True:
                try:
                    eid, _, _ = table.start(env_ids[n % len(env_ids)], seed=10_000 + n)
                    break
                except EpisodeError:
                    time.sleep(0.05)
            table.call(eid, [{"name": "crop", "arguments": {
                "image_index": 0, "bbox_2d": [250, 250, 750, 750], "zoom_scale": 2}}])
            table.answer(eid, "x")
            with lock:
                done[0] += 1
                if done[0] % max(1, episodes // 6) == 0 or done[0] == episodes:
                    points.append({"episodes": done[0], "rss_mb": round(rss_mb()),
                                   **table.measure()})

    pool = [threading.Thread(target=worker) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    return points


def main(argv: Sequence[str] | None = None) -> int:
    """Run the measurements and print one JSON line per result."""
    import anyio
    from mcp import Client

    from m3gym.mcp.episode_table import EpisodeTable
    from m3gym.mcp.limits import McpLimits
    from m3gym.mcp.server import build_server

    p = argparse.ArgumentParser(prog="python -m m3gym.mcp.measure", description=__doc__)
    p.add_argument("--envs", nargs="+", default=["M3Bench-L1", "M3Bench-L2", "M3Bench-L3"])
    p.add_argument("--seeds", type=int, default=200, help="seeds 0..N-1 per env")
    p.add_argument("--first-seed", type=int, default=0)
    p.add_argument("--no-crops", action="store_true", help="measure start_episode only")
    p.add_argument("--rss-episodes", type=int, default=0, help="then play N episodes for RSS")
    p.add_argument("--threads", type=int, default=0,
                   help="with --rss-episodes: play them from N threads against the episode "
                        "table directly (concurrent sessions), then stop")
    args = p.parse_args(argv)
    if args.threads:
        for point in concurrent_rss(args.envs, args.threads, args.rss_episodes or 184):
            print(json.dumps(point), flush=True)
        return 0
    table = EpisodeTable(McpLimits())
    server = build_server(table)

    async def run() -> None:
        async with Client(server) as client:
            for env_id in args.envs:
                seeds = range(args.first_seed, args.first_seed + args.seeds)
                start, crops = await measure_env(client, table, env_id, seeds, not args.no_crops)
                for name, got in (("start_episode", start), ("parallel_calls_4_crops", crops)):
                    if not got.count:
                        continue
                    print(json.dumps({"env": env_id, "call": name, "seeds": len(seeds),
                                      "max_sent_bytes": got.sent, "max_sent_seed": got.sent_seed,
                                      "max_png_bytes": got.png, "max_png_seed": got.png_seed,
                                      "png_over_1MiB": got.over_limit_png,
                                      "sent_over_1MiB": got.over_limit_sent,
                                      "re_encoded": got.downscaled}), flush=True)
            if args.rss_episodes:
                points = await measure_rss(client, args.envs, args.rss_episodes)
                print(json.dumps({"rss_mb_after_episodes": points,
                                  "pooled_envs": table.pooled_envs(),
                                  "ended_kept": len(table._ended)}), flush=True)

    anyio.run(run)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
