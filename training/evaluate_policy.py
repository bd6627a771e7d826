"""Evaluate a saved SB3 policy (or a baseline) on held-out m3gym episodes.

Usage::

    python training/evaluate_policy.py --model runs/l1/final_model.zip --episodes 200
    python training/evaluate_policy.py --baseline random --config configs/train/maskable_ppo_l1.yaml

The env config comes from ``config.yaml`` beside the model (or ``--config``). Episodes are drawn
sequentially from a held-out task pool starting at ``--pool-offset`` (default ``10**9``, outside
the training seeds). Writes ``episodes.jsonl`` (one line per episode: task, correctness, reward,
length, decoded actions, m3gym metrics) and ``summary.json`` (accuracy overall and per family,
mean reward/length, mean metrics) to ``--out``.

Baselines: ``random`` samples uniformly among masked-valid actions; ``no_tool`` answers at once
with a uniformly random valid choice (the chance floor).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_sb3 import algo_class, load_config, make_vec_env, run_episodes, summarize  # noqa: E402


class MaskedRandomPolicy:
    """A baseline with SB3's ``predict`` signature: uniform over masked-valid components.

    With ``answer_only`` it always picks tool 0 (``answer``): the no-tool chance floor.
    """

    def __init__(self, nvec: Sequence[int], seed: int = 0, answer_only: bool = False) -> None:
        self.nvec = np.asarray(nvec)
        self.offsets = np.concatenate([[0], np.cumsum(self.nvec)])
        self.rng = np.random.default_rng(seed)
        self.answer_only = answer_only

    def predict(self, obs: Any, state: Any = None, episode_start: Any = None,
                deterministic: bool = False, action_masks: np.ndarray | None = None
                ) -> tuple[np.ndarray, None]:
        """Return one action per env row of ``action_masks``."""
        if action_masks is None:
            raise ValueError("MaskedRandomPolicy needs action masks")
        masks = np.atleast_2d(action_masks)
        actions = np.zeros((masks.shape[0], len(self.nvec)), dtype=np.int64)
        for row, mask in enumerate(masks):
            for d in range(len(self.nvec)):
                valid = np.flatnonzero(mask[self.offsets[d]:self.offsets[d + 1]])
                actions[row, d] = valid[int(self.rng.integers(len(valid)))]
            if self.answer_only:
                actions[row, 0] = 0
        return actions, None


def evaluate(cfg: dict[str, Any], model: Any, algo: str, episodes: int, pool_offset: int,
             out: Path, seed: int = 0, deterministic: bool = True) -> dict[str, Any]:
    """Run ``episodes`` held-out episodes; write episodes.jsonl and summary.json; return summary."""
    venv = make_vec_env(cfg, 1, seed, {"task_pool": episodes, "pool_offset": pool_offset,
                                       "pool_order": "sequential", "cache_size": 8})
    venv.seed(seed)
    rows = run_episodes(model, venv, episodes, algo, deterministic=deterministic)
    venv.close()
    out.mkdir(parents=True, exist_ok=True)
    with open(out / "episodes.jsonl", "w") as fh:
        for row in rows:
            fh.write(json.dumps(row, default=str) + "\n")
    summary = {"pool_offset": pool_offset, "algo": algo, **summarize(rows)}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--model", help="saved model .zip (config.yaml beside it is used)")
    parser.add_argument("--baseline", choices=["random", "no_tool"], help="evaluate a baseline")
    parser.add_argument("--config", help="training config (default: config.yaml beside --model)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--episodes", type=int, default=100)
    parser.add_argument("--pool-offset", type=int, default=1_000_000_000)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--stochastic", action="store_true", help="sample instead of argmax")
    parser.add_argument("--out", help="output folder (default: <model dir>/eval)")
    args = parser.parse_args(argv)
    if (args.model is None) == (args.baseline is None):
        parser.error("give exactly one of --model and --baseline")
    config_path = args.config
    if config_path is None and args.model:
        config_path = str(Path(args.model).parent / "config.yaml")
    cfg = load_config(config_path, args.set)
    if args.model:
        algo = cfg["algo"]
        model = algo_class(algo).load(args.model, device="cpu")
        out = Path(args.out or Path(args.model).parent / "eval")
    else:
        venv = make_vec_env(cfg, 1, args.seed)
        nvec = venv.action_space.nvec
        venv.close()
        algo = "maskable_ppo"  # baselines consume masks
        model = MaskedRandomPolicy(nvec, args.seed, answer_only=args.baseline == "no_tool")
        out = Path(args.out or f"runs/baseline_{args.baseline}")
    summary = evaluate(cfg, model, algo, args.episodes, args.pool_offset, out, args.seed,
                       deterministic=not args.stochastic)
    print(json.dumps({k: v for k, v in summary.items() if k != "metrics"}, indent=2))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
