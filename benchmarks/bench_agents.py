"""Benchmark the reference agents: accuracy per level and family, mean calls, seconds per episode.

Run: python benchmarks/bench_agents.py [--episodes N] [--levels 1,2,3] [--per-family]
                                       [--agents oracle,random,heuristic,heuristic-notools]

Each level runs ``N`` episodes with task seeds ``10**9 + k`` (the frozen-test range, disjoint
from training), families drawn round-robin so every family of the level is covered. The
heuristic agent reports which OCR backend it used (``tesseract`` or the built-in ``glyph``
matcher).
"""

from __future__ import annotations

import argparse
import sys
import time
from collections import defaultdict
from pathlib import Path

import gymnasium as gym

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import m3gym  # noqa: E402,F401
from m3gym.agents import make_agent  # noqa: E402
from m3gym.agents.ocr import ocr_backend  # noqa: E402
from m3gym.rollout import run_episode  # noqa: E402
from m3gym.tasks.registry import family_names  # noqa: E402

TEST_SEED_BASE = 1_000_000_000


def build_agent(name: str, seed: int):
    """Return the agent for a benchmark column (``heuristic-notools`` = no-tools ablation)."""
    if name == "heuristic-notools":
        return make_agent("heuristic", seed=seed, use_tools=False)
    return make_agent(name, seed=seed)


def bench(agent_name: str, level: int, episodes: int) -> dict[str, object]:
    """Return accuracy, per-family accuracy, mean calls and seconds/episode for one cell."""
    env = gym.make(f"M3Bench-L{level}")
    agent = build_agent(agent_name, seed=level)
    families = family_names(level)
    per_family: dict[str, list[bool]] = defaultdict(list)
    fam_calls: dict[str, list[int]] = defaultdict(list)
    fam_secs: dict[str, list[float]] = defaultdict(list)
    calls = 0
    t0 = time.perf_counter()
    for k in range(episodes):
        family = families[k % len(families)]
        t1 = time.perf_counter()
        r = run_episode(env, agent, seed=k, options={"family": family,
                                                     "task_seed": TEST_SEED_BASE + k})
        fam_secs[family].append(time.perf_counter() - t1)
        per_family[family].append(bool(r.final_info.get("answer_correct")))
        n_calls = int(r.final_info.get("metrics", {}).get("calls", 0))
        fam_calls[family].append(n_calls)
        calls += n_calls
    seconds = (time.perf_counter() - t0) / episodes
    correct = sum(sum(v) for v in per_family.values())
    detail = {f: (sum(v) / len(v), sum(fam_calls[f]) / len(v), sum(fam_secs[f]) / len(v))
              for f, v in sorted(per_family.items())}
    return {"acc": correct / episodes, "calls": calls / episodes, "s_per_ep": seconds,
            "families": {f: sum(v) / len(v) for f, v in sorted(per_family.items())},
            "detail": detail}


def main() -> None:
    """Parse arguments and print one table row per (agent, level) plus per-family accuracy."""
    ap = argparse.ArgumentParser(description=__doc__)
    ap.add_argument("--episodes", type=int, default=30)
    ap.add_argument("--levels", default="1,2,3")
    ap.add_argument("--agents", default="oracle,random,heuristic,heuristic-notools")
    ap.add_argument("--per-family", action="store_true",
                    help="also print accuracy, mean calls and s/episode per family")
    args = ap.parse_args()
    print(f"OCR backend: {ocr_backend()}")
    print(f"{'agent':<18} {'level':>5} {'acc':>6} {'calls':>6} {'s/ep':>6}  per family")
    details: list[tuple[str, int, dict[str, tuple[float, float, float]]]] = []
    for name in args.agents.split(","):
        for level in (int(x) for x in args.levels.split(",")):
            row = bench(name, level, args.episodes)
            fams = " ".join(f"{f}={a:.2f}" for f, a in row["families"].items())  # type: ignore[union-attr]
            print(f"{name:<18} {level:>5} {row['acc']:>6.2f} {row['calls']:>6.1f} "
                  f"{row['s_per_ep']:>6.2f}  {fams}", flush=True)
            details.append((name, level, row["detail"]))  # type: ignore[arg-type]
    if args.per_family:
        print(f"\n{'agent':<18} {'family':<20} {'acc':>6} {'calls':>6} {'s/ep':>6}")
        for name, _level, detail in details:
            for fam, (acc, n_calls, secs) in detail.items():
                print(f"{name:<18} {fam:<20} {acc:>6.2f} {n_calls:>6.1f} {secs:>6.2f}")


if __name__ == "__main__":
    main()
