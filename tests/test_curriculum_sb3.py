"""training/train_sb3.py with ``curriculum:``: learner-side updates, pushes, saves and restores."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

pytest.importorskip("sb3_contrib")
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "training"))

from train_sb3 import load_config, train  # noqa: E402

from m3gym.curriculum import Curriculum  # noqa: E402
from m3gym.testing import registered  # noqa: E402
from m3gym.wrappers import make_discrete_env  # noqa: E402


def test_train_with_curriculum_saves_state_next_to_checkpoints(tmp_path: Path) -> None:
    from examples.example_family import SerialPlateFamily

    with registered(SerialPlateFamily):
        cfg = load_config(None, [
            f"out_dir={tmp_path / 'run'}", "total_timesteps=256", "n_envs=2", "torch_threads=1",
            "algo_kwargs={n_steps: 64, batch_size: 64, n_epochs: 1}",
            "eval={freq: 0, n_episodes: 2, pool_offset: 1000000000}", "checkpoint_freq=128",
            "curriculum={bins: 3, mode: band, seed: 7}",
        ])
        cfg["env"]["kwargs"] = {"family": "serial_plate", "obs_size": 48, "zoom": "view",
                                "max_steps": 2, "reward": "sparse"}
        out = train(cfg)
        final = Curriculum.load(out / "curriculum.json")
        assert final.families == ("serial_plate",) and final.bins == 3 and final.mode == "band"
        episodes = sum(s.count for s in final.stats.values())
        assert episodes >= 256 // 2 // 2  # every episode lasts at most max_steps = 2 steps
        saved = sorted((out / "checkpoints").glob("curriculum_*_steps.json"))
        models = sorted((out / "checkpoints").glob("model_*_steps.zip"))
        assert [p.stem.split("_")[1] for p in saved] == [p.stem.split("_")[1] for p in models]
        assert len(saved) == 2
        first = Curriculum.load(saved[0])
        assert 0 < sum(s.count for s in first.stats.values()) <= episodes
        # restore: an env built with ``state:`` resumes the saved statistics
        env = make_discrete_env(family="serial_plate",
                                curriculum={"bins": 3, "state": str(out / "curriculum.json")})
        assert env.unwrapped.curriculum_state()["arms"] == final.state_dict()["arms"]
        rows = (out / "progress.csv").read_text().splitlines()
        assert "curriculum/success_rate" in rows[0]
        assert json.loads((out / "train_info.json").read_text())["timesteps"] >= 256


def test_subproc_envs_take_the_learners_state(tmp_path: Path) -> None:
    """Under SubprocVecEnv the learner's curriculum is pushed to every worker after a rollout."""
    from sb3_contrib import MaskablePPO
    from stable_baselines3.common.monitor import Monitor
    from stable_baselines3.common.vec_env import SubprocVecEnv
    from train_sb3 import make_curriculum_callback

    from examples.example_family import SerialPlateFamily

    def thunk():
        return Monitor(make_discrete_env(family="serial_plate", obs_size=48, zoom="view",
                                         max_steps=2, reward="sparse",
                                         curriculum={"bins": 2, "seed": 3},
                                         curriculum_update=False))

    with registered(SerialPlateFamily):
        venv = SubprocVecEnv([thunk, thunk], start_method="fork")  # workers inherit the registry
        try:
            cfg = {"n_envs": 2, "checkpoint_freq": 0}
            callback = make_curriculum_callback(cfg, venv, tmp_path)
            model = MaskablePPO("MultiInputPolicy", venv, n_steps=32, batch_size=32, n_epochs=1,
                                seed=0, device="cpu")
            model.learn(64, callback=callback)
            master = callback.curriculum.state_dict()
            assert sum(a[2]["count"] for a in master["arms"]) == callback.episodes > 0
            for state in venv.env_method("curriculum_state"):
                assert state["arms"] == master["arms"]
        finally:
            venv.close()
        saved = Curriculum.load(tmp_path / "curriculum.json")
        assert saved.state_dict()["arms"] == master["arms"]


def test_curriculum_config_loads() -> None:
    root = Path(__file__).resolve().parents[1]
    cfg = load_config(root / "configs" / "train" / "curriculum_l1.yaml")
    assert "task_pool" not in cfg["env"]["kwargs"]  # a pool and a curriculum exclude each other
    cur = Curriculum(["tiny_text"], **{k: v for k, v in cfg["curriculum"].items()})
    assert cur.mode == "band" and cur.band == (0.3, 0.8) and cur.bins == 5
