"""Planning a run: which tasks each env is evaluated on, and every episode's reset seed.

An episode is identified by ``<env>.<family>.<task_seed>``; its reset seed (env and agent) is
derived from the run seed and the task seed only (:func:`episode_seed`), so results do not
depend on the order episodes run in or on the number of workers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from typing import Any

import gymnasium as gym
import numpy as np

from m3gym.eval.config import EpisodeSpec, EvalConfig


def env_scope(env_id: str) -> tuple[int | None, list[str]]:
    """Return the level (or ``None``) and the task families an env id draws from."""
    from m3gym import registration
    from m3gym.env import level_families

    resolved = registration.resolve_env_id(env_id)
    if resolved not in gym.registry:
        known = ", ".join(registration.env_ids())
        raise ValueError(f"unknown env {env_id!r}; known: {known}")
    kwargs = dict(gym.registry[resolved].kwargs or {})
    family = kwargs.get("family")
    families, _ = level_families(kwargs.get("level"), family, kwargs.get("family_weights"),
                                 kwargs.get("suite", "m3bench"))
    if family is not None:
        from m3gym.tasks.registry import get_family

        return int(get_family(family).level), families
    return kwargs.get("level"), families


def episode_seed(run_seed: int, task_seed: int) -> int:
    """Return the reset seed of an episode: a function of the run seed and task seed only."""
    return int(np.random.SeedSequence([int(run_seed), int(task_seed)]).generate_state(1)[0])


def _train_draws(env_id: str, families: Sequence[str], n: int, seed: int) -> list[tuple[str, int]]:
    """Return ``n`` distinct ``(family, task_seed)`` training draws of an env (seeded per env)."""
    from m3gym.tasks.registry import TRAIN_SEED_LIMIT

    key = [int(b) for b in env_id.encode("utf-8")]
    rng = np.random.default_rng(np.random.SeedSequence(entropy=int(seed), spawn_key=key))
    out: list[tuple[str, int]] = []
    seen: set[tuple[str, int]] = set()
    while len(out) < n:
        pair = (families[int(rng.integers(len(families)))], int(rng.integers(0, TRAIN_SEED_LIMIT)))
        if pair not in seen:
            seen.add(pair)
            out.append(pair)
    return out


def env_tasks(env_id: str, split: str, n: int, seed: int,
              manifest: dict[str, Any] | None = None) -> list[tuple[str, int]]:
    """Return the first ``n`` ``(family, task_seed)`` pairs an env is evaluated on.

    Frozen splits take their tasks from ``manifest`` (default: the package's).
    """
    from m3gym.eval.splits import FROZEN_SPLITS, level_seed_base, split_entries
    from m3gym.tasks.registry import get_family

    level, families = env_scope(env_id)
    if split == "train":
        return _train_draws(env_id, families, n, seed)
    if split not in FROZEN_SPLITS:
        raise ValueError(f"unknown split {split!r}; use train, {', '.join(FROZEN_SPLITS)}")
    if any(get_family(f).suite != "m3bench" for f in families):
        # the classic-RL suite is not in the hash manifest: its held-out tasks follow the rule
        # of the frozen splits (round-robin over families, seeds from the split's base, >= 1e9)
        base = level_seed_base(split, level or 1)
        return [(families[i % len(families)], base + i) for i in range(n)]
    per_level = [[(e.family, e.task_seed) for e in split_entries(split, lv, manifest)
                  if e.family in families] for lv in ([level] if level else [1, 2, 3])]
    width = max((len(p) for p in per_level), default=0)
    pool = [p[i] for i in range(width) for p in per_level if i < len(p)]  # interleave levels
    if n > len(pool):
        raise ValueError(f"split {split!r} has {len(pool)} tasks for {env_id}; "
                         f"--episodes {n} is more")
    return pool[:n]


def plan_episodes(cfg: EvalConfig) -> list[EpisodeSpec]:
    """Return every episode of a run, in a fixed order (envs in the given order)."""
    if cfg.episodes < 1 or cfg.samples < 1:
        raise ValueError("--episodes and --samples must be >= 1")
    from m3gym.eval.passk import sample_seed

    specs: list[EpisodeSpec] = []
    manifest = cfg.manifest_data() if cfg.manifest else None
    for env_id in cfg.envs:
        level, _ = env_scope(env_id)
        for family, task_seed in env_tasks(env_id, cfg.split, cfg.episodes, cfg.seed, manifest):
            for j in range(cfg.samples):  # sample 0 keeps the single-sample id and seed
                specs.append(EpisodeSpec(
                    index=len(specs), episode_id=f"{env_id}.{family}.{task_seed}"
                    + (f".s{j}" if j else ""), env_id=env_id, level=level, family=family,
                    task_seed=task_seed, seed=sample_seed(episode_seed(cfg.seed, task_seed), j)))
    ids = [s.episode_id for s in specs]
    if len(set(ids)) != len(ids):
        raise ValueError("the same env is listed twice")
    return specs


def with_split_env_args(cfg: EvalConfig) -> EvalConfig:
    """Return ``cfg`` with its split's scene settings in ``env_args`` (``test-photo``: photos).

    A split built with a config (:data:`~m3gym.eval.splits.SPLIT_CONFIGS`) is evaluated with it,
    whether or not ``--env-arg`` repeats it; a contradicting ``scenes``/``backgrounds`` raises
    ``ValueError``.
    """
    from m3gym.eval.splits import split_config

    wanted = split_config(cfg.split)
    if not wanted:
        return cfg
    given = dict(cfg.env_args)
    clash = [k for k in ("scenes", "backgrounds") if k in given and given[k] != wanted.get(k)]
    if clash:
        raise ValueError(f"split {cfg.split!r} is built with {wanted}: drop --env-arg "
                         f"{', '.join(clash)} (it would evaluate other tasks than the frozen ones)")
    return replace(cfg, env_args={**given, **wanted})
