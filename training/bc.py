"""Behaviour-cloning warm start for the SB3 policies of ``train_sb3.py`` (config key ``bc``).

The discrete wrappers expose the oracle's next action (``expert_action()``: the task's reference
call mapped to the action space, then the right choice). :func:`collect_demos` plays that oracle
on training tasks and records each step's observation, action and mask; :func:`clone` fits the
policy's action head to them by maximum likelihood (the masked log-probability of
``evaluate_actions``), before PPO starts. Config::

    bc: {episodes: 2000, epochs: 4, batch_size: 256, learning_rate: 0.0003,
         min_accuracy: 0.95, max_epochs: 80, extractor_epochs: 12}

``extractor_epochs`` (default 0: off) first fits the policy's features extractor alone, through a
fresh linear head, to the same demos (:func:`pretrain_extractor`); cloning then starts from
features that already read. On benchmark v4's classic suite at 96 px, cloning alone sat on a
loss plateau (1.77, every answer alike) for 15 epochs at learning rate 1e-3, while the unmasked
cross-entropy of this pre-training left it within 3-5 epochs; warm start 0.88-0.90 held-out
(docs/rl-results.md, "Benchmark v4").

A warm start answers "can this observation, network and reward reach the target once the policy
has seen what a useful call looks like", which pure exploration may take millions of steps to
find when the useful call is one region among fourteen and pays only through a correct answer.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np


def collect_demos(env: gym.Env, episodes: int, seed: int = 0
                  ) -> tuple[dict[str, np.ndarray], np.ndarray, np.ndarray]:
    """Return ``(observations, actions, masks)`` of the oracle over ``episodes`` episodes.

    Observations are stacked per key; ``env`` must be a discrete-wrapper env (its
    ``expert_action`` and ``action_masks`` are read through the wrapper chain).
    """
    obs_rows: list[dict[str, np.ndarray]] = []
    actions: list[np.ndarray] = []
    masks: list[np.ndarray] = []
    expert = env.get_wrapper_attr("expert_action")
    action_masks = env.get_wrapper_attr("action_masks")
    for k in range(episodes):
        obs, _ = env.reset(seed=seed + k)
        done = False
        while not done:
            action = expert()
            obs_rows.append(obs)
            actions.append(np.asarray(action))
            masks.append(action_masks())
            obs, _, terminated, truncated, _ = env.step(action)
            done = terminated or truncated
    stacked = {key: np.stack([o[key] for o in obs_rows]) for key in obs_rows[0]}
    return stacked, np.stack(actions), np.stack(masks)


def clone(model: Any, observations: dict[str, np.ndarray], actions: np.ndarray,
          masks: np.ndarray, epochs: int = 4, batch_size: int = 256,
          learning_rate: float = 3e-4, seed: int = 0, min_accuracy: float = 0.0,
          max_epochs: int | None = None) -> list[dict[str, float]]:
    """Fit ``model.policy`` to the demonstrations; return per-epoch loss and action accuracy.

    Minimizes the negative masked log-likelihood of the expert actions with Adam (a fresh
    optimizer, so PPO's own optimizer state starts clean). Accuracy is the share of samples whose
    most likely masked action is the expert's (on the training demos). Trains ``epochs`` epochs,
    then goes on until the accuracy reaches ``min_accuracy`` or ``max_epochs`` are done: the
    loss can sit on a plateau for a seed-dependent number of epochs before the digits are read
    (a fixed 30 epochs left one seed of the classic suite at 0.57).
    """
    max_epochs = max(epochs, int(max_epochs or epochs))
    import torch as th

    policy = model.policy
    policy.set_training_mode(True)
    optimizer = th.optim.Adam(policy.parameters(), lr=learning_rate)
    rng = np.random.default_rng(seed)
    n = len(actions)
    history: list[dict[str, float]] = []
    for epoch in range(max_epochs):
        if epoch >= epochs and history and history[-1]["accuracy"] >= min_accuracy:
            break
        order = rng.permutation(n)
        losses, hits = [], 0
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            obs_t, _ = policy.obs_to_tensor({k: v[idx] for k, v in observations.items()})
            act_t = th.as_tensor(actions[idx], device=policy.device)
            _, log_prob, _ = policy.evaluate_actions(obs_t, act_t, action_masks=masks[idx])
            loss = -log_prob.mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.item()))
            with th.no_grad():
                dist = policy.get_distribution(obs_t, action_masks=masks[idx])
                mode = dist.mode().cpu().numpy().reshape(len(idx), -1)
            hits += int((mode == actions[idx].reshape(len(idx), -1)).all(axis=1).sum())
        history.append({"epoch": epoch + 1, "loss": float(np.mean(losses)),
                        "accuracy": hits / n})
    policy.set_training_mode(False)
    return history


def pretrain_extractor(model: Any, observations: dict[str, np.ndarray], actions: np.ndarray,
                       epochs: int, batch_size: int = 64, learning_rate: float = 1e-3,
                       seed: int = 0) -> list[dict[str, float]]:
    """Fit ``model.policy``'s features extractor to the demos through a fresh linear head.

    Plain cross-entropy of the expert action over every action (the expert's is always
    allowed, so no mask), Adam, PyTorch's default initialization of the head, which is then
    discarded: only the extractor's weights are kept. Returns per-epoch loss and accuracy on the
    demos. This is supervised pre-training of what the policy sees, not of what it does: the
    policy's own heads are fitted afterwards by :func:`clone`.
    """
    import torch as th

    policy = model.policy
    if not isinstance(policy.action_space, gym.spaces.Discrete):
        raise ValueError("extractor pre-training needs a Discrete action space (flat_actions)")
    extractor = policy.features_extractor
    th.manual_seed(seed)
    head = th.nn.Linear(extractor.features_dim, int(policy.action_space.n)).to(policy.device)
    optimizer = th.optim.Adam([*extractor.parameters(), *head.parameters()], lr=learning_rate)
    rng = np.random.default_rng(seed)
    targets = np.asarray(actions).reshape(-1)
    n = len(targets)
    history: list[dict[str, float]] = []
    policy.set_training_mode(True)
    for epoch in range(epochs):
        order = rng.permutation(n)
        losses, hits = [], 0
        for start in range(0, n, batch_size):
            idx = order[start:start + batch_size]
            obs_t, _ = policy.obs_to_tensor({k: v[idx] for k, v in observations.items()})
            logits = head(policy.extract_features(obs_t, extractor))
            target = th.as_tensor(targets[idx], device=policy.device)
            loss = th.nn.functional.cross_entropy(logits, target)
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            losses.append(float(loss.item()))
            hits += int((logits.argmax(1) == target).sum())
        history.append({"epoch": epoch + 1, "loss": float(np.mean(losses)), "accuracy": hits / n})
    policy.set_training_mode(False)
    return history


def warm_start(model: Any, env: gym.Env, cfg: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """Run the ``bc`` section of ``cfg`` on ``model`` with demos played in ``env`` (a training
    env, closed afterwards); write and return ``out_dir/bc.json``."""
    import time

    bc = dict(cfg["bc"])
    start = time.perf_counter()
    obs, actions, masks = collect_demos(env, int(bc.get("episodes", 2000)),
                                        seed=int(cfg["seed"]) * 1_000_003)
    env.close()
    extractor_history = []
    if int(bc.get("extractor_epochs", 0)) > 0:
        extractor_history = pretrain_extractor(
            model, obs, actions, int(bc["extractor_epochs"]),
            learning_rate=float(bc.get("extractor_learning_rate", 1e-3)), seed=int(cfg["seed"]))
    history = clone(model, obs, actions, masks, epochs=int(bc.get("epochs", 4)),
                    batch_size=int(bc.get("batch_size", 256)),
                    learning_rate=float(bc.get("learning_rate", 3e-4)), seed=int(cfg["seed"]),
                    min_accuracy=float(bc.get("min_accuracy", 0.0)),
                    max_epochs=bc.get("max_epochs"))
    report = {"samples": int(len(actions)), "episodes": int(bc.get("episodes", 2000)),
              "extractor_history": extractor_history, "history": history,
              "wall_seconds": time.perf_counter() - start}
    (out_dir / "bc.json").write_text(json.dumps(report, indent=2))
    return report
