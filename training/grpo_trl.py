"""GRPO fine-tuning of a VLM on m3gym with TRL's ``environment_factory`` (needs ``.[trl]``).

Usage::

    python training/grpo_trl.py --config configs/train/grpo_trl_tiny.yaml [--set grpo.max_steps=8]

The config names the model (``tiny``: the offline tiny Qwen3-VL of
:mod:`m3gym.integrations.tiny_vlm`; else a local path or hub name loaded with
``AutoModelForImageTextToText`` + ``AutoProcessor``), the env (id, reward preset, ``gym.make``
arguments), the prompt dataset and the ``GRPOConfig`` arguments. The reward is the env's episode
return (``get_reward``, weight 1); the per-term columns (accuracy, S, V, M3, overthink, safety)
are logged with weight 0 and printed after every logged step.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Any

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO_ROOT))


def load_config(path: str, overrides: list[str]) -> dict[str, Any]:
    """Read the YAML config and apply ``a.b=value`` overrides (values parsed as YAML)."""
    cfg = yaml.safe_load(Path(path).read_text()) or {}
    for item in overrides:
        key, sep, raw = item.partition("=")
        if not sep:
            raise SystemExit(f"--set expects key=value, got {item!r}")
        node = cfg
        parts = key.split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = yaml.safe_load(raw)
    return cfg


def load_model(name: str, seed: int) -> tuple[Any, Any]:
    """Return ``(model, processor)``: the offline tiny VLM or a pretrained one."""
    if name == "tiny":
        from m3gym.integrations.tiny_vlm import build_tiny_vlm

        tiny = build_tiny_vlm(seed=seed)
        return tiny.model, tiny.processor
    from transformers import AutoModelForImageTextToText, AutoProcessor

    return AutoModelForImageTextToText.from_pretrained(name), AutoProcessor.from_pretrained(name)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", required=True)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    args = parser.parse_args(argv)
    cfg = load_config(args.config, args.set)
    os.environ.setdefault("TRL_EXPERIMENTAL_SILENCE", "1")

    from transformers import TrainerCallback
    from trl import GRPOConfig, GRPOTrainer

    from m3gym.integrations.datasets import prompt_dataset
    from m3gym.integrations.trl import environment_factory, logging_weights, reward_functions

    seed = int(cfg.get("seed", 0))
    env = dict(cfg.get("env") or {})
    env_id, reward = env.get("id", "M3Bench-L1"), env.get("reward", "m3")
    env_kwargs = dict(env.get("kwargs") or {})
    data = dict(cfg.get("dataset") or {})
    t0 = time.perf_counter()
    dataset = prompt_dataset(env_id, data.get("n", 64), split=data.get("split", "train"),
                             seed=data.get("seed", seed), images=data.get("images", True),
                             max_tool_calls=env_kwargs.get("max_tool_calls", 15),
                             max_rounds=env_kwargs.get("max_rounds", 15),
                             **{k: v for k, v in env_kwargs.items()
                                if k not in ("max_tool_calls", "max_rounds")})
    model, processor = load_model(str(cfg.get("model", "tiny")), seed)
    terms = reward_functions(cfg.get("reward_terms") or ["acc", "S", "V", "m3", "OT", "safety"])
    out_dir = Path(cfg.get("out_dir", "runs/grpo_trl"))
    grpo = dict(cfg.get("grpo") or {})
    config = GRPOConfig(output_dir=str(out_dir), seed=seed,
                        reward_weights=logging_weights(terms), **grpo)

    class PrintRewards(TrainerCallback):
        """Print the per-term reward columns of every logged step."""

        def on_log(self, args: Any, state: Any, control: Any, logs: Any = None, **kw: Any) -> None:
            if not logs or "reward" not in logs:
                return
            cols = {k.split("/")[1]: v for k, v in logs.items()
                    if k.startswith("rewards/") and k.endswith("/mean")}
            text = "  ".join(f"{k}={v:.3f}" for k, v in cols.items())
            print(f"step {state.global_step}: reward={logs['reward']:.3f}  {text}  "
                  f"tool_calls/rollout={logs.get('tools/call_frequency', 0):.2f}  "
                  f"step_time={logs.get('step_time', float('nan')):.2f}s", flush=True)

    trainer = GRPOTrainer(model=model, processing_class=processor, reward_funcs=terms,
                          train_dataset=dataset, args=config, callbacks=[PrintRewards()],
                          environment_factory=environment_factory(env_id, reward=reward,
                                                                  **env_kwargs))
    t1 = time.perf_counter()
    trainer.train()
    t2 = time.perf_counter()
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    (out_dir / "log_history.json").write_text(json.dumps(trainer.state.log_history, indent=1))
    print(f"setup {t1 - t0:.1f}s, train {t2 - t1:.1f}s for {trainer.state.global_step} steps "
          f"({(t2 - t1) / max(1, trainer.state.global_step):.2f}s/step); wrote {out_dir}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
