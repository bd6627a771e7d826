"""Does a trained classic policy read glyph_zoom's digit once the right cell is cropped for it?

Usage::

    python training/diagnostics/forced_crop.py --run runs/classic_v2_s0 --episodes 60

Plays held-out ``glyph_zoom`` tasks three ways with the run's final model: the policy's own
tool call (``free``), a forced crop of the tag's 3x3 cell, and a forced crop of the quadrant
holding it; the policy answers in each case. On the 500k pure-PPO run (``classic_v2_s0``, which
never crops the right cell itself): free 0.22, forced cell 0.52, forced quadrant 0.13 — reading
transfers from the other families, finding the cell is what is missing.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path

import gymnasium as gym
import numpy as np
import yaml


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    from sb3_contrib import MaskablePPO

    import m3gym.wrappers  # noqa: F401  (registers the discrete ids)

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", required=True)
    parser.add_argument("--episodes", type=int, default=60)
    args = parser.parse_args(argv)
    run = Path(args.run)
    cfg = yaml.safe_load((run / "config.yaml").read_text())
    # the run's own env (its feature layout spans the suite); non-zoom tasks are skipped
    kwargs = dict(cfg["env"]["kwargs"], task_pool=4 * args.episodes,
                  cache_size=4 * args.episodes, pool_offset=10**9, pool_order="sequential")
    if kwargs.get("flat_actions"):
        raise SystemExit("forced crops are written as MultiDiscrete actions: use a run without "
                         "flat_actions")
    env = gym.make(cfg["env"]["id"], **kwargs)
    model = MaskablePPO.load(run / "final_model.zip", device="cpu")
    tools = list(env.get_wrapper_attr("tools"))
    masks = env.get_wrapper_attr("action_masks")
    for mode in ("free", "forced_cell", "forced_quadrant"):
        obs, info = env.reset(seed=0)
        correct = 0
        for _ in range(args.episodes):
            while info["family"] != "glyph_zoom":
                obs, info = env.reset()
            task = env.unwrapped.task
            if mode != "free":
                if mode == "forced_cell":
                    region = 5 + int(task.metadata["cell"])
                else:
                    x0, y0, x1, y1 = task.metadata["tag_box"]
                    half = task.images[0].shape[1] / 2
                    region = 1 + int((x0 + x1) / 2 >= half) + 2 * int((y0 + y1) / 2 >= half)
                obs, *_ = env.step(np.array([tools.index("crop"), 1, region, 0, 0]))
            done = False
            while not done:
                action, _ = model.predict(obs, deterministic=True, action_masks=masks())
                obs, _, term, trunc, info = env.step(action)
                done = term or trunc
            correct += bool(info.get("answer_correct"))
            obs, info = env.reset()
        print(f"{mode}: {correct}/{args.episodes} = {correct / args.episodes:.2f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
