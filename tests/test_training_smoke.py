"""Smoke test of the SB3 training scripts: a 2,000-step MaskablePPO run trains, saves, loads and
evaluates; config loading and overrides; the baseline policies."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("sb3_contrib")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "training"))

from evaluate_policy import MaskedRandomPolicy, evaluate  # noqa: E402
from train_sb3 import algo_class, load_config, train  # noqa: E402

SMALL_ENV = {
    "family": "faint_text", "family_config": {"width": 640, "height": 480},
    "obs_size": 48, "task_pool": 16, "cache_size": 16, "zoom": "view", "max_steps": 3,
    "reward": "process",
}


def test_load_config_overrides(tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text("algo: ppo\nenv: {id: M3Bench-L1-Discrete, kwargs: {obs_size: 64}}\n")
    cfg = load_config(path, ["env.kwargs.reward=sparse", "total_timesteps=123",
                             "algo_kwargs.n_steps=16"])
    assert cfg["algo"] == "ppo" and cfg["total_timesteps"] == 123
    assert cfg["env"]["kwargs"] == {"obs_size": 64, "reward": "sparse"}
    assert cfg["algo_kwargs"]["n_steps"] == 16 and cfg["eval"]["n_episodes"] == 50
    with pytest.raises(ValueError):
        load_config(None, ["algo=dqn"])
    with pytest.raises(ValueError):
        load_config(None, ["no_equals_sign"])


def test_masked_random_policy_respects_masks() -> None:
    nvec = [3, 2, 4]
    mask = np.array([[0, 1, 1, 1, 0, 0, 0, 1, 0]], bool)
    pol = MaskedRandomPolicy(nvec, seed=1)
    for _ in range(20):
        action, _ = pol.predict(None, action_masks=mask)
        assert action[0, 0] in (1, 2) and action[0, 1] == 0 and action[0, 2] == 2
    action, _ = MaskedRandomPolicy(nvec, answer_only=True).predict(None, action_masks=mask)
    assert action[0, 0] == 0


def test_maskable_ppo_2000_steps_train_save_load_evaluate(tmp_path: Path) -> None:
    cfg = load_config(None, [
        f"out_dir={tmp_path / 'run'}", "total_timesteps=2000", "n_envs=4", "torch_threads=2",
        "algo_kwargs={n_steps: 125, batch_size: 100, n_epochs: 2}",
        "eval={freq: 1000, n_episodes: 6, pool_offset: 1000000000}", "checkpoint_freq=1000",
    ])
    cfg["env"]["kwargs"] = dict(SMALL_ENV)
    out = train(cfg)
    assert (out / "final_model.zip").exists() and (out / "config.yaml").exists()
    assert (out / "progress.csv").exists() and list(out.glob("events.out.tfevents*"))
    assert list((out / "checkpoints").glob("model_*_steps.zip"))
    history = [json.loads(line) for line in (out / "eval_history.jsonl").read_text().splitlines()]
    assert history and all(h["episodes"] == 6 for h in history)
    model = algo_class("maskable_ppo").load(out / "final_model.zip", device="cpu")
    summary = evaluate(cfg, model, "maskable_ppo", 5, 10**9, tmp_path / "eval")
    lines = (tmp_path / "eval" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 5 and summary["episodes"] == 5
    assert 0.0 <= summary["accuracy"] <= 1.0
    assert json.loads((tmp_path / "eval" / "summary.json").read_text())["episodes"] == 5
    assert all(json.loads(line)["task_id"].startswith("faint_text/") for line in lines)
