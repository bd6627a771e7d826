"""Train a stable-baselines3 policy on the discrete m3gym wrapper.

Usage::

    python training/train_sb3.py --config configs/train/maskable_ppo_l1.yaml \
        --set total_timesteps=20000 --set env.kwargs.reward=sparse --progress-bar

Algorithms: ``maskable_ppo`` (sb3-contrib, default; uses the wrapper's action masks), ``ppo`` and
``recurrent_ppo`` (sb3-contrib). Training envs are vectorized (``vec_env: dummy|subproc``);
evaluation runs on held-out task seeds (``eval.pool_offset``, outside the training pool) and logs
``eval/accuracy``, ``eval/mean_reward`` and the mean of every numeric m3gym metric. Logs go to
TensorBoard and CSV in ``out_dir``; checkpoints to ``out_dir/checkpoints``; the final model
(``final_model.zip``) and the resolved config (``config.yaml``) are saved side by side.

``curriculum:`` (optional) draws each training episode's ``(family, difficulty)`` from a
:class:`m3gym.curriculum.Curriculum` (the key holds its arguments; ``families`` default to the
env's; ``state: path`` restores a saved state). The curriculum lives in the learner process
(:func:`make_curriculum_callback`): it reads the episode-end infos, updates the sampler and pushes
its state to the training envs (also under ``SubprocVecEnv``) after every rollout; its state is
saved next to each checkpoint (``checkpoints/curriculum_<steps>_steps.json``) and as
``curriculum.json`` at the end. Evaluation ignores the curriculum (held-out pool).

``bc:`` (optional) warm-starts the policy by behaviour cloning of the env's oracle
(``training/bc.py``); ``init_model: path`` instead starts from the parameters of a saved model of
the same algorithm and architecture (e.g. one warm start shared by every cell of an ablation,
``training/reward_ablation.py``). Either way the starting policy is evaluated once at 0 steps.
"""

from __future__ import annotations

import argparse
import copy
import json
import sys
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
if str(REPO_ROOT) not in sys.path:  # run from a checkout without `pip install -e .`
    sys.path.insert(0, str(REPO_ROOT))

DEFAULT_CONFIG: dict[str, Any] = {
    "algo": "maskable_ppo",
    "env": {"id": "M3Bench-L1-Discrete", "kwargs": {}},
    "n_envs": 2,
    "vec_env": "dummy",
    "total_timesteps": 100_000,
    "seed": 0,
    "policy": "MultiInputPolicy",
    "policy_kwargs": {},
    "algo_kwargs": {},
    "eval": {"freq": 10_000, "n_episodes": 50, "pool_offset": 1_000_000_000},
    "checkpoint_freq": 50_000,
    "progress_bar": False,
    "torch_threads": 0,
    "out_dir": "runs/sb3",
    "curriculum": None,
    "bc": None,
    "init_model": None,
}
"""Defaults every config is merged over (see ``configs/train/*.yaml``)."""

ALGOS = ("maskable_ppo", "ppo", "recurrent_ppo")


def deep_merge(base: dict[str, Any], over: dict[str, Any]) -> dict[str, Any]:
    """Return ``base`` updated recursively by ``over`` (neither is modified)."""
    out = copy.deepcopy(base)
    for key, value in over.items():
        if isinstance(value, dict) and isinstance(out.get(key), dict):
            out[key] = deep_merge(out[key], value)
        else:
            out[key] = copy.deepcopy(value)
    return out


def apply_overrides(cfg: dict[str, Any], overrides: Sequence[str]) -> dict[str, Any]:
    """Return ``cfg`` with ``key.sub=value`` overrides applied (values parsed as YAML)."""
    cfg = copy.deepcopy(cfg)
    for item in overrides:
        if "=" not in item:
            raise ValueError(f"--set expects key=value, got {item!r}")
        key, raw = item.split("=", 1)
        node = cfg
        parts = key.strip().split(".")
        for part in parts[:-1]:
            node = node.setdefault(part, {})
        node[parts[-1]] = yaml.safe_load(raw)
    return cfg


def load_config(path: str | Path | None, overrides: Sequence[str] = ()) -> dict[str, Any]:
    """Return the config: defaults, then the YAML file, then the overrides."""
    cfg = copy.deepcopy(DEFAULT_CONFIG)
    if path is not None:
        cfg = deep_merge(cfg, yaml.safe_load(Path(path).read_text()) or {})
    cfg = apply_overrides(cfg, overrides)
    if cfg["algo"] not in ALGOS:
        raise ValueError(f"algo must be one of {ALGOS}, got {cfg['algo']!r}")
    return cfg


def make_env_fn(env_id: str, kwargs: dict[str, Any], seed: int) -> Callable[[], gym.Env]:
    """Return a thunk building one monitored env (importable in a fresh subprocess)."""

    def thunk() -> gym.Env:
        from stable_baselines3.common.monitor import Monitor

        import m3gym.wrappers  # noqa: F401  (registers the discrete ids)

        env = gym.make(env_id, **kwargs)
        env.reset(seed=seed)
        return Monitor(env)

    return thunk


def make_vec_env(cfg: dict[str, Any], n_envs: int, seed: int,
                 extra_kwargs: dict[str, Any] | None = None) -> Any:
    """Return the vectorized training (or eval) env of a config."""
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    kwargs = {**cfg["env"].get("kwargs", {}), **(extra_kwargs or {})}
    fns = [make_env_fn(cfg["env"]["id"], kwargs, seed + i) for i in range(n_envs)]
    if cfg.get("vec_env") == "subproc" and n_envs > 1:
        return SubprocVecEnv(fns)
    return DummyVecEnv(fns)


def algo_class(name: str) -> Any:
    """Return the SB3 algorithm class of ``name``."""
    if name == "maskable_ppo":
        from sb3_contrib import MaskablePPO

        return MaskablePPO
    if name == "recurrent_ppo":
        from sb3_contrib import RecurrentPPO

        return RecurrentPPO
    from stable_baselines3 import PPO

    return PPO


def resolve_policy_kwargs(kwargs: dict[str, Any] | None) -> dict[str, Any] | None:
    """Return ``policy_kwargs`` with ``module:Name`` strings of ``*_class`` keys imported.

    YAML cannot hold a class: ``features_extractor_class:
    m3gym.wrappers.extractors:PooledCombinedExtractor`` names it instead.
    """
    if not kwargs:
        return None
    import importlib

    out = dict(kwargs)
    for key, value in kwargs.items():
        if key.endswith("_class") and isinstance(value, str):
            module, sep, name = value.partition(":")
            if not sep:
                raise ValueError(f"policy_kwargs.{key} must be 'module:Name', got {value!r}")
            out[key] = getattr(importlib.import_module(module), name)
    return out


def policy_name(cfg: dict[str, Any]) -> str:
    """Return the policy class name (recurrent PPO needs its LSTM policy)."""
    policy = cfg["policy"]
    if cfg["algo"] == "recurrent_ppo" and "Lstm" not in policy:
        return "MultiInputLstmPolicy"
    return policy


def run_episodes(model: Any, venv: Any, n_episodes: int, algo: str,
                 deterministic: bool = True) -> list[dict[str, Any]]:
    """Run ``n_episodes`` episodes of ``model`` on ``venv``; return one row per episode.

    Rows hold ``task_id``, ``family``, ``correct``, ``reward``, ``length``, ``actions`` (decoded)
    and the env's final ``metrics``. Masks are used for ``maskable_ppo``; the LSTM state is
    carried for ``recurrent_ppo``.
    """
    n = venv.num_envs
    obs = venv.reset()
    state = None
    starts = np.ones(n, dtype=bool)
    ep_reward = np.zeros(n)
    ep_len = np.zeros(n, dtype=int)
    ep_actions: list[list[str]] = [[] for _ in range(n)]
    rows: list[dict[str, Any]] = []
    while len(rows) < n_episodes:
        if algo == "maskable_ppo":
            masks = np.stack(venv.env_method("action_masks"))
            action, state = model.predict(obs, deterministic=deterministic, action_masks=masks)
        elif algo == "recurrent_ppo":
            action, state = model.predict(obs, state=state, episode_start=starts,
                                          deterministic=deterministic)
        else:
            action, _ = model.predict(obs, deterministic=deterministic)
        obs, reward, done, infos = venv.step(action)
        ep_reward += reward
        ep_len += 1
        for i, info in enumerate(infos):
            ep_actions[i].append(info.get("decoded_action", ""))
            if done[i] and len(rows) < n_episodes:
                rows.append({
                    "task_id": info.get("task_id", ""), "family": info.get("family", ""),
                    "correct": bool(info.get("answer_correct", False)),
                    "reward": float(ep_reward[i]), "length": int(ep_len[i]),
                    "actions": ep_actions[i], "metrics": info.get("metrics", {}),
                })
            if done[i]:
                ep_reward[i], ep_len[i], ep_actions[i] = 0.0, 0, []
        starts = np.asarray(done, dtype=bool)
    return rows


def tool_call_counts(rows: Iterable[dict[str, Any]]) -> dict[str, int]:
    """Return how often each decoded tool call (answers excluded) occurs, most frequent first.

    E.g. ``{"crop(source=latest, region=g11)": 40, ...}``: what a policy actually does per
    family (which region it crops, which angle it rotates by).
    """
    counts: dict[str, int] = {}
    for row in rows:
        for action in row["actions"]:
            if action and not action.startswith("answer"):
                counts[action] = counts.get(action, 0) + 1
    return dict(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def summarize(rows: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Return accuracy, mean reward/length, per-family accuracy and mean numeric metrics."""
    if not rows:
        return {"episodes": 0}
    out: dict[str, Any] = {
        "episodes": len(rows),
        "accuracy": float(np.mean([r["correct"] for r in rows])),
        "mean_reward": float(np.mean([r["reward"] for r in rows])),
        "mean_length": float(np.mean([r["length"] for r in rows])),
    }
    fams = sorted({r["family"] for r in rows})
    out["accuracy_by_family"] = {
        f: float(np.mean([r["correct"] for r in rows if r["family"] == f])) for f in fams}
    out["tool_calls_by_family"] = {f: tool_call_counts(r for r in rows if r["family"] == f)
                                   for f in fams}
    keys = sorted({k for r in rows for k, v in r["metrics"].items()
                   if isinstance(v, (int, float)) and not isinstance(v, bool)})
    out["metrics"] = {k: float(np.mean([r["metrics"][k] for r in rows if k in r["metrics"]]))
                      for k in keys}
    return out


def held_out_venv(cfg: dict[str, Any]) -> Any:
    """Return the one-env held-out evaluation env of ``cfg`` (sequential pool, seeded)."""
    n = int(cfg["eval"]["n_episodes"])
    venv = make_vec_env(cfg, 1, cfg["seed"] + 10_000, {
        "task_pool": n, "pool_offset": int(cfg["eval"]["pool_offset"]),
        "pool_order": "sequential", "cache_size": min(n, 256)})
    venv.seed(cfg["seed"] + 10_000)
    return venv


def record_eval(cfg: dict[str, Any], model: Any, out_dir: Path, timesteps: int,
                **extra: Any) -> dict[str, Any]:
    """Evaluate ``model`` on the held-out pool once; append the entry to ``eval_history.jsonl``."""
    venv = held_out_venv(cfg)
    summary = summarize(run_episodes(model, venv, int(cfg["eval"]["n_episodes"]), cfg["algo"]))
    venv.close()
    entry = {"timesteps": timesteps, **extra, **summary}
    with open(out_dir / "eval_history.jsonl", "a") as fh:
        fh.write(json.dumps(entry) + "\n")
    return entry


def make_eval_callback(cfg: dict[str, Any], out_dir: Path) -> Any:
    """Return a callback evaluating on held-out seeds every ``eval.freq`` env steps."""
    from stable_baselines3.common.callbacks import BaseCallback

    ev = cfg["eval"]

    class HeldOutEval(BaseCallback):
        """Evaluates on a fixed held-out task pool; logs accuracy and metrics; keeps the best."""

        def __init__(self) -> None:
            super().__init__()
            self.venv: Any = None
            self.best = -1.0
            self.last = 0
            self.history: list[dict[str, Any]] = []

        def _on_training_start(self) -> None:
            self.last = self.on_grid(self.num_timesteps)  # a resumed run keeps the eval grid
            lines = (out_dir / "eval_history.jsonl").read_text().splitlines()
            self.best = max((json.loads(line)["accuracy"] for line in lines if line), default=-1.0)
            self.venv = held_out_venv(cfg)

        def evaluate(self) -> None:
            """Run the held-out episodes and log their summary."""
            self.venv.seed(cfg["seed"] + 10_000)
            summary = summarize(run_episodes(self.model, self.venv, int(ev["n_episodes"]),
                                             cfg["algo"]))
            self.logger.record("eval/accuracy", summary["accuracy"])
            self.logger.record("eval/mean_reward", summary["mean_reward"])
            self.logger.record("eval/mean_length", summary["mean_length"])
            for k, v in summary["metrics"].items():
                self.logger.record(f"eval/{k}", v)
            self.logger.dump(self.num_timesteps)
            self.history.append({"timesteps": self.num_timesteps, **summary})
            with open(out_dir / "eval_history.jsonl", "a") as fh:
                fh.write(json.dumps(self.history[-1]) + "\n")
            if summary["accuracy"] > self.best:
                self.best = summary["accuracy"]
                self.model.save(out_dir / "best_model")

        @staticmethod
        def on_grid(steps: int) -> int:
            """Return the last multiple of ``eval.freq`` at or below ``steps``."""
            freq = int(ev["freq"])
            return steps - steps % freq if freq > 0 else steps

        def _on_step(self) -> bool:
            if int(ev["freq"]) > 0 and self.num_timesteps - self.last >= int(ev["freq"]):
                self.last = self.on_grid(self.num_timesteps)
                self.evaluate()
            return True

        def _on_training_end(self) -> None:
            if not self.history or self.history[-1]["timesteps"] != self.num_timesteps:
                self.evaluate()
            self.venv.close()

    return HeldOutEval()


def latest_checkpoint(out_dir: Path) -> tuple[Path, int] | None:
    """Return the newest ``checkpoints/model_<steps>_steps.zip`` of a run and its step count."""
    found = []
    for path in (out_dir / "checkpoints").glob("model_*_steps.zip"):
        steps = path.stem.removeprefix("model_").removesuffix("_steps")
        if steps.isdigit():
            found.append((int(steps), path))
    if not found:
        return None
    steps, path = max(found)
    return path, steps


def make_curriculum_callback(cfg: dict[str, Any], venv: Any, out_dir: Path) -> Any:
    """Return the callback that keeps the curriculum in the learner process.

    The master curriculum is rebuilt from the first training env's state (so it has the env's
    families and any restored state). Each step it folds the finished episodes' outcomes
    (``family``, ``difficulty``, ``answer_correct`` of the final infos) into the master; after
    each rollout it pushes the master's state to every env (``env_method``); at every checkpoint
    (``checkpoint_freq``) and at the end it saves the state as JSON.
    """
    from stable_baselines3.common.callbacks import BaseCallback

    from m3gym.curriculum import Curriculum

    n_envs = int(cfg["n_envs"])
    save_freq = max(1, int(cfg["checkpoint_freq"]) // n_envs) if cfg.get("checkpoint_freq") \
        else 0

    class CurriculumCallback(BaseCallback):
        """Learner-side curriculum: update from outcomes, push to the envs, save with models."""

        def __init__(self) -> None:
            super().__init__()
            self.curriculum = Curriculum.from_state_dict(venv.env_method("curriculum_state")[0])
            self.episodes = 0
            self.successes = 0

        def _on_step(self) -> bool:
            for done, info in zip(self.locals["dones"], self.locals["infos"]):
                if done and info.get("difficulty") is not None and "family" in info:
                    success = bool(info.get("answer_correct"))
                    self.curriculum.update(info["family"], float(info["difficulty"]), success)
                    self.episodes += 1
                    self.successes += success
            if save_freq and self.n_calls % save_freq == 0:
                self.save(out_dir / "checkpoints" / f"curriculum_{self.num_timesteps}_steps.json")
            return True

        def _on_rollout_end(self) -> None:
            self.training_env.env_method("set_curriculum_state", self.curriculum.state_dict())
            rows = self.curriculum.summary()
            self.logger.record("curriculum/episodes", self.episodes)
            self.logger.record("curriculum/success_rate",
                               self.successes / max(1, self.episodes))
            self.logger.record("curriculum/mean_bin",
                               float(sum(r["p"] * r["bin"] for r in rows)))

        def _on_training_end(self) -> None:
            self.save(out_dir / "curriculum.json")

        def save(self, path: Path) -> None:
            """Write the master curriculum's state to ``path``."""
            path.parent.mkdir(parents=True, exist_ok=True)
            self.curriculum.save(path)

    return CurriculumCallback()


def train(cfg: dict[str, Any], resume: bool = False) -> Path:
    """Train per ``cfg``; return the output directory (final model, config, logs).

    ``resume`` continues from the newest checkpoint in ``out_dir/checkpoints`` (the step count,
    the policy and optimizer state; evaluations before it are kept, later ones dropped) and
    starts afresh when there is none.
    """
    import torch
    from stable_baselines3.common.callbacks import CallbackList, CheckpointCallback
    from stable_baselines3.common.logger import configure

    if cfg.get("bc") and cfg.get("init_model"):
        raise ValueError("`bc` and `init_model` are two warm starts; give one")
    if cfg.get("torch_threads"):
        torch.set_num_threads(int(cfg["torch_threads"]))
    out_dir = Path(cfg["out_dir"])
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "config.yaml").write_text(yaml.safe_dump(cfg, sort_keys=False))
    cls = algo_class(cfg["algo"])
    checkpoint = latest_checkpoint(out_dir) if resume else None
    history = out_dir / "eval_history.jsonl"
    if checkpoint is None:
        history.write_text("")
    else:  # keep the evaluations up to the checkpoint (a crash may have logged later ones)
        lines = history.read_text().splitlines() if history.exists() else []
        kept = [line for line in lines if line and json.loads(line)["timesteps"] <= checkpoint[1]]
        history.write_text("".join(line + "\n" for line in kept))
    curriculum = dict(cfg["curriculum"]) if cfg.get("curriculum") else None
    if curriculum and checkpoint:  # the curriculum resumes from the state saved beside the model
        saved = out_dir / "checkpoints" / f"curriculum_{checkpoint[1]}_steps.json"
        if saved.exists():
            curriculum["state"] = str(saved)
    # a resumed run draws fresh env seeds (its first episodes differ from the crashed run's)
    venv = make_vec_env(cfg, int(cfg["n_envs"]),
                        int(cfg["seed"]) + (checkpoint[1] if checkpoint else 0),
                        {"curriculum": curriculum, "curriculum_update": False}
                        if curriculum else None)
    if checkpoint is None:
        model = cls(policy_name(cfg), venv, seed=int(cfg["seed"]), verbose=0,
                    policy_kwargs=resolve_policy_kwargs(cfg.get("policy_kwargs")),
                    **cfg.get("algo_kwargs", {}))
        if cfg.get("bc"):  # behaviour-cloning warm start (training/bc.py) on training tasks
            from bc import warm_start

            demo_env = make_env_fn(cfg["env"]["id"], dict(cfg["env"].get("kwargs", {})),
                                   int(cfg["seed"]) + 7919)()
            report = warm_start(model, demo_env, cfg, out_dir)
            print(f"behaviour cloning: {report['samples']} samples, "
                  f"final {report['history'][-1]}")
            if int(cfg["eval"].get("freq", 0)) > 0:  # what the warm start alone is worth
                record_eval(cfg, model, out_dir, 0, after_bc=True)
        elif cfg.get("init_model"):  # a saved warm start (same algorithm and architecture)
            model.set_parameters(str(cfg["init_model"]), exact_match=True)
            if int(cfg["eval"].get("freq", 0)) > 0:
                record_eval(cfg, model, out_dir, 0, init_model=str(cfg["init_model"]))
    else:
        model = cls.load(checkpoint[0], env=venv)
        print(f"resuming from {checkpoint[0]} at {checkpoint[1]} steps")
    model.set_logger(configure(str(out_dir), ["csv", "tensorboard"]))
    n_envs = int(cfg["n_envs"])
    callbacks = [make_eval_callback(cfg, out_dir)]
    if curriculum:
        callbacks.append(make_curriculum_callback(cfg, venv, out_dir))
    if cfg.get("checkpoint_freq"):
        callbacks.append(CheckpointCallback(max(1, int(cfg["checkpoint_freq"]) // n_envs),
                                            str(out_dir / "checkpoints"), name_prefix="model"))
    start = time.perf_counter()
    remaining = int(cfg["total_timesteps"]) - (checkpoint[1] if checkpoint else 0)
    model.learn(total_timesteps=max(0, remaining), callback=CallbackList(callbacks),
                progress_bar=bool(cfg.get("progress_bar")), reset_num_timesteps=checkpoint is None)
    model.save(out_dir / "final_model")
    (out_dir / "train_info.json").write_text(json.dumps({
        "wall_seconds": time.perf_counter() - start, "timesteps": model.num_timesteps,
        "algo": cfg["algo"]}, indent=2))
    venv.close()
    return out_dir


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", help="YAML config (configs/train/*.yaml)")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE",
                        help="override a config key (dotted, value parsed as YAML)")
    parser.add_argument("--progress-bar", action="store_true", help="show SB3's progress bar")
    parser.add_argument("--resume", action="store_true",
                        help="continue from the newest checkpoint in out_dir/checkpoints")
    args = parser.parse_args(argv)
    cfg = load_config(args.config, args.set)
    if args.progress_bar:
        cfg["progress_bar"] = True
    out = train(cfg, resume=args.resume)
    print(f"saved final model and config in {out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
