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
from train_sb3 import algo_class, latest_checkpoint, load_config, train  # noqa: E402

SMALL_ENV = {
    "family": "faint_text", "family_config": {"width": 1536, "height": 1152},
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
    assert all(set(h["tool_calls_by_family"]) == {"faint_text"} for h in history)

    # resume: drop the last checkpoint's successors, continue to 3,000 steps from 2,000
    assert latest_checkpoint(out) == (out / "checkpoints" / "model_2000_steps.zip", 2000)
    cfg["total_timesteps"] = 3000
    train(cfg, resume=True)
    resumed = [json.loads(line)["timesteps"]
               for line in (out / "eval_history.jsonl").read_text().splitlines()]
    assert resumed[:len(history)] == [h["timesteps"] for h in history]
    assert resumed[-1] == 3000 and resumed == sorted(resumed)
    assert algo_class("maskable_ppo").load(out / "final_model.zip").num_timesteps == 3000


def test_plot_curve_rows_floors_and_files(tmp_path: Path) -> None:
    from plot_curve import curve_rows, floor_value, main, read_history

    run = tmp_path / "run"
    run.mkdir()
    hist = [
        {"timesteps": 2000, "accuracy": 0.5, "mean_length": 2.0, "metrics": {"S": 1.0, "V": 0.5},
         "accuracy_by_family": {"a": 0.25, "b": 0.75}},
        {"timesteps": 1000, "accuracy": 0.25, "mean_length": 3.0, "metrics": {"S": 0.5, "V": 0.0},
         "accuracy_by_family": {"a": 0.0, "b": 0.5}},
    ]
    (run / "eval_history.jsonl").write_text("\n".join(json.dumps(h) for h in hist) + "\n")
    rows = curve_rows(read_history(run))
    assert [r["timesteps"] for r in rows] == [1000, 2000]  # sorted by steps
    assert rows[1] == {"timesteps": 2000, "accuracy": 0.5, "mean_length": 2.0, "S": 1.0,
                       "V": 0.5, "accuracy_a": 0.25, "accuracy_b": 0.75}
    summary = tmp_path / "summary.json"
    summary.write_text(json.dumps({"accuracy": 0.125}))
    assert floor_value(f"random={summary}") == ("random", 0.125)
    assert floor_value(f"best={run}") == ("best", 0.5)
    assert floor_value("chance=0.2") == ("chance", 0.2)
    assert main(["--run", str(run), "--floor", "x=0.1", "--out", str(tmp_path / "c")]) == 0
    assert (tmp_path / "c.png").stat().st_size > 1000
    assert (tmp_path / "c.csv").read_text().splitlines()[0].startswith("timesteps,accuracy")


def test_reward_ablation_plot_only_rebuilds_rows_from_histories(tmp_path: Path) -> None:
    import yaml
    from reward_ablation import curve_stats, main

    out = tmp_path / "abl"
    for preset, base in (("sparse", 0.1), ("process", 0.3)):
        for seed in (0, 1, 2):
            cell = out / f"{preset}_seed{seed}"
            cell.mkdir(parents=True)
            lines = [json.dumps({"timesteps": t, "accuracy": base + 0.1 * k + 0.01 * seed,
                                 "mean_reward": 0.0, "mean_length": 2.0,
                                 "metrics": {"S": base, "V": 0.5}})
                     for k, t in enumerate((1000, 2000))]
            (cell / "eval_history.jsonl").write_text("\n".join(lines) + "\n")
    cfg = tmp_path / "abl.yaml"
    cfg.write_text(yaml.safe_dump({"presets": ["sparse", "process"], "seeds": [0, 1, 2],
                                   "chance": 0.125, "out_dir": str(out), "base": {}}))
    assert main(["--config", str(cfg), "--plot-only"]) == 0
    import csv

    rows = list(csv.DictReader(open(out / "ablation.csv")))
    assert len(rows) == 12 and set(rows[0]) >= {"preset", "seed", "accuracy", "S", "V"}
    steps, mean, lo, hi = curve_stats(rows, "process")
    assert list(steps) == [1000, 2000]
    assert mean == pytest.approx([0.31, 0.41]) and lo == pytest.approx([0.30, 0.40])
    assert hi == pytest.approx([0.32, 0.42])
    assert curve_stats(rows, "sparse", "S")[1] == pytest.approx([0.1, 0.1])
    assert (out / "ablation.png").stat().st_size > 1000
    assert main(["--config", str(cfg), "--plot-only", "--max-steps", "1500"]) == 0
    rows = list(csv.DictReader(open(out / "ablation.csv")))
    assert len(rows) == 6 and {r["timesteps"] for r in rows} == {"1000"}


def test_reward_ablation_threshold_table_by_hand() -> None:
    from reward_ablation import markdown_table, mean_ci, steps_to_reach, threshold_table

    curves = {0: (0.3, 0.55, 0.75), 1: (0.5, 0.6, 0.65), 2: (0.2, 0.3, 0.45)}
    rows = [{"preset": "a", "seed": seed, "timesteps": 1000 * (k + 1), "accuracy": acc}
            for seed, accs in curves.items() for k, acc in enumerate(accs)]
    assert steps_to_reach([r for r in rows if r["seed"] == 0], 0.5) == 2000
    assert steps_to_reach([r for r in rows if r["seed"] == 2], 0.5) is None
    [row] = threshold_table(rows, ["a", "missing"])
    # 50 %: seeds 0 and 1 (2,000 and 1,000 steps): mean 1,500, t(0.975, 1) * 707.1 / sqrt(2)
    assert row["reached_0.5"] == 2 and row["steps_0.5"] == 1500
    assert row["ci_0.5"] == pytest.approx(12.7062 * 500, rel=1e-4)
    # 70 %: seed 0 alone, so no interval
    assert row["reached_0.7"] == 1 and row["steps_0.7"] == 3000 and np.isnan(row["ci_0.7"])
    # final (3,000 steps): 0.75, 0.65, 0.45: mean 0.6167, sd 0.15275, t(0.975, 2) = 4.3027
    assert row["final_steps"] == 3000 and row["final"] == pytest.approx(0.616667, abs=1e-6)
    assert row["final_ci"] == pytest.approx(4.302653 * 0.152753 / 3 ** 0.5, rel=1e-4)
    assert np.isnan(mean_ci([])[0])
    table = markdown_table([row])
    assert "| `a` | 1.5 ± 6.4 (2/3) | 3.0 (1/3) | 0.617 ± 0.379 at 3,000 |" in table


def test_behaviour_cloning_warm_start_then_ppo(tmp_path: Path) -> None:
    cfg = load_config(None, [
        f"out_dir={tmp_path / 'bc'}", "total_timesteps=128", "n_envs=2", "torch_threads=1",
        "env.id=M3Bench-Classic-Discrete",
        "algo_kwargs={n_steps: 64, batch_size: 64, n_epochs: 1}",
        "eval={freq: 128, n_episodes: 4, pool_offset: 1000000000}", "checkpoint_freq=0",
        "bc={episodes: 6, epochs: 1, batch_size: 8, min_accuracy: 0.0, extractor_epochs: 2}",
    ])
    cfg["env"]["kwargs"] = {"obs_size": 48, "task_pool": 8, "cache_size": 8,
                            "flat_actions": True, "tools": ["answer", "crop", "rotate", "flip",
                                                            "autocontrast"]}
    out = train(cfg)
    report = json.loads((out / "bc.json").read_text())
    assert report["samples"] == 12 and len(report["history"]) == 1  # 6 episodes x 2 steps
    assert [h["epoch"] for h in report["extractor_history"]] == [1, 2]
    history = [json.loads(line) for line in (out / "eval_history.jsonl").read_text().splitlines()]
    assert history[0]["timesteps"] == 0 and history[0]["after_bc"] is True
    assert history[-1]["timesteps"] == 128 and all(h["episodes"] == 4 for h in history)


def test_init_model_starts_from_saved_parameters(tmp_path: Path) -> None:
    import torch

    base = [
        "total_timesteps=0", "n_envs=2", "torch_threads=1", "env.id=M3Bench-Classic-Discrete",
        "algo_kwargs={n_steps: 64, batch_size: 64, n_epochs: 1}",
        "eval={freq: 64, n_episodes: 4, pool_offset: 1000000000}", "checkpoint_freq=0",
    ]
    kwargs = {"obs_size": 48, "task_pool": 8, "cache_size": 8, "flat_actions": True,
              "tools": ["answer", "crop", "rotate", "flip", "autocontrast"]}
    warm = load_config(None, [*base, f"out_dir={tmp_path / 'warm'}",
                              "bc={episodes: 6, epochs: 2, batch_size: 8}"])
    warm["env"]["kwargs"] = dict(kwargs)
    train(warm)
    cell = load_config(None, [*base, f"out_dir={tmp_path / 'cell'}", "seed=5",
                              f"init_model={tmp_path / 'warm' / 'final_model.zip'}"])
    cell["env"]["kwargs"] = dict(kwargs)
    train(cell)
    cls = algo_class("maskable_ppo")
    a = cls.load(tmp_path / "warm" / "final_model.zip").policy.state_dict()
    b = cls.load(tmp_path / "cell" / "final_model.zip").policy.state_dict()
    assert a.keys() == b.keys() and all(torch.equal(a[k], b[k]) for k in a)
    entry = json.loads((tmp_path / "cell" / "eval_history.jsonl").open().readline())
    assert entry["timesteps"] == 0 and entry["init_model"].endswith("final_model.zip")
    both = load_config(None, [*base, f"out_dir={tmp_path / 'both'}", "bc={episodes: 2}",
                              f"init_model={tmp_path / 'warm' / 'final_model.zip'}"])
    with pytest.raises(ValueError, match="two warm starts"):
        train(both)


def test_reward_ablation_cells_share_a_warm_start_and_add_variants(tmp_path: Path) -> None:
    from reward_ablation import cell_configs, cell_names

    spec = {"presets": ["sparse", "m3"], "seeds": [0, 1],
            "warm_start": {"bc": {"episodes": 10}},
            "variants": [{"name": "cur", "preset": "process",
                          "set": {"curriculum": {"mode": "band"}}}],
            "base": {"env": {"id": "M3Bench-Classic-Discrete", "kwargs": {"obs_size": 48}},
                     "total_timesteps": 100}}
    cfgs = cell_configs(spec, tmp_path, train_warm_starts=False)
    assert cell_names(spec) == ["sparse", "m3", "cur"]
    assert [(c["cell"], c["seed"]) for c in cfgs] == [
        ("sparse", 0), ("m3", 0), ("cur", 0), ("sparse", 1), ("m3", 1), ("cur", 1)]
    assert [c["env"]["kwargs"]["reward"] for c in cfgs[:3]] == ["sparse", "m3", "process"]
    assert cfgs[2]["curriculum"] == {"mode": "band"} and cfgs[0]["curriculum"] is None
    assert {c["init_model"] for c in cfgs[:3]} == {str(tmp_path / "warm_start_seed0"
                                                       / "final_model.zip")}
    assert cfgs[3]["init_model"].endswith("warm_start_seed1/final_model.zip")
    assert all("bc" not in c or c["bc"] is None for c in cfgs)  # cells load, not re-clone
    assert cfgs[0]["env"]["kwargs"] == {"obs_size": 48, "reward": "sparse"}
    assert cfgs[2]["out_dir"] == str(tmp_path / "cur_seed0")


def test_reward_ablation_curves_interpolate_off_grid_seeds() -> None:
    from reward_ablation import curve_stats, threshold_table

    # seed 1 resumed off the grid: it evaluated at 0, 3000 and 7000 (seed 0 at 0, 4000, 8000)
    rows = [{"preset": "p", "seed": 0, "timesteps": t, "accuracy": a}
            for t, a in ((0, 0.2), (4000, 0.4), (8000, 0.6))]
    rows += [{"preset": "p", "seed": 1, "timesteps": t, "accuracy": a}
             for t, a in ((0, 0.3), (3000, 0.45), (7000, 0.65))]
    steps, mean, lo, hi = curve_stats(rows, "p")
    assert list(steps) == [0, 3000, 4000, 7000]  # up to the last step both seeds cover
    # seed 0 at 3000: 0.2 + 0.75 * 0.2 = 0.35; at 7000: 0.4 + 0.75 * 0.2 = 0.55
    # seed 1 at 4000: 0.45 + 0.25 * 0.2 = 0.5
    assert mean == pytest.approx([0.25, 0.4, 0.45, 0.6])
    assert lo == pytest.approx([0.2, 0.35, 0.4, 0.55]) and hi == pytest.approx([0.3, 0.45, 0.5, 0.65])
    [row] = threshold_table(rows, ["p"])
    assert row["final_steps"] == 7000 and row["final"] == pytest.approx(0.625)  # 0.6 and 0.65


def test_reward_ablation_paired_differences_by_hand() -> None:
    from reward_ablation import paired_markdown, paired_table

    def curve(preset, seed, accs):
        return [{"preset": preset, "seed": seed, "timesteps": 1000 * k, "accuracy": a}
                for k, a in enumerate(accs)]

    rows = (curve("base", 0, (0.2, 0.4, 0.5)) + curve("base", 1, (0.3, 0.3, 0.4))
            + curve("x", 0, (0.2, 0.5, 0.6)) + curve("x", 1, (0.3, 0.4, 0.6)))
    [row] = paired_table(rows, ["base", "x"], "base")
    # final: +0.1 and +0.2 -> mean 0.15, sd 0.0707, t(0.975, 1) = 12.706 -> 12.706 * 0.05
    assert row["seeds"] == 2 and row["final"] == pytest.approx(0.15)
    assert row["final_ci"] == pytest.approx(12.7062 * 0.05, rel=1e-4)
    # mean over the run: seed 0 (0 + 0.1 + 0.1) / 3, seed 1 (0 + 0.1 + 0.2) / 3
    assert row["mean"] == pytest.approx((0.2 / 3 + 0.3 / 3) / 2)
    # their difference 0.0333 has sd 0.0236: 12.706 * 0.0236 / sqrt(2) = 0.212
    assert row["mean_ci"] == pytest.approx(12.7062 * (0.1 / 3) / 2, rel=1e-4)
    assert "| `x` − `base` | 2 | +15.0 ± 63.5 | +8.3 ± 21.2 |" in paired_markdown([row])
