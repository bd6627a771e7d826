"""One seed rule: the same ``(env_id, seed)`` names the same task through every entry point.

Two words, each with one meaning everywhere (docs/environments.md, "One seed rule"):

* ``seed`` is the reset seed: ``gym.make(env_id).reset(seed=seed)``; the env draws the family and
  the task seed from it. MCP ``start_episode(seed=)``, a dataset row ``{"env_id", "seed"}`` (TRL,
  verl, prompt datasets, answer lookup) and the discrete wrapper give that very task.
* ``task_seed`` is the family's own seed: a row ``{"env_id", "task_seed"[, "family"]}``, MCP
  ``start_episode(task_seed=[, family=])``, ``reset(options={"task_seed"[, "family"]})`` and
  ``make_task(family, task_seed)`` (what ``m3gym eval`` and the frozen splits name) agree.

An issue-42 probe found "seed 0" naming two tasks (the MCP and reset path vs the row path); the
first adapter built on both scored 0 on every episode. Each case here compares task hashes.
"""

from __future__ import annotations

import gymnasium as gym
import pytest

import m3gym  # noqa: F401  (registers the ids)
from m3gym.integrations.datasets import answer_spec
from m3gym.integrations.export import compute_score
from m3gym.integrations.session import EpisodeSession, task_ref
from m3gym.integrations.trl import environment_factory
from m3gym.mcp.episode_table import EpisodeTable
from m3gym.tasks.registry import make_task

ENV_IDS = ("M3Bench-L1", "M3Bench-L2", "M3Bench-L3", "M3Bench-Classic", "M3Bench-TinyText")
SEEDS = (0, 7)


def _reset_hash(env_id: str, seed: int, options: dict | None = None) -> str:
    env = gym.make(env_id, disable_env_checker=True)
    try:
        env.reset(seed=seed, options=options)
        return env.unwrapped.task.content_hash()
    finally:
        env.close()


def _session_hash(row: dict) -> str:
    session = EpisodeSession(task_ref(row).env_id)
    session.start(row)
    return session.task.content_hash()


def _mcp_hash(env_id: str, **kwargs) -> str:
    table = EpisodeTable()
    try:
        episode_id, _, _ = table.start(env_id, **kwargs)
        return table._live[episode_id].rec.env.unwrapped.task.content_hash()
    finally:
        table.close()


def _trl_hash(row: dict) -> str:
    env = environment_factory(row["env_id"])()
    env.reset(**row)
    return env.session.task.content_hash()


@pytest.mark.parametrize("env_id", ENV_IDS)
@pytest.mark.parametrize("seed", SEEDS)
def test_a_reset_seed_names_one_task_everywhere(env_id: str, seed: int) -> None:
    expected = _reset_hash(env_id, seed)
    row = {"env_id": env_id, "seed": seed}
    assert _session_hash(row) == expected, "dataset row {env_id, seed} (EpisodeSession)"
    assert _session_hash({"extra_info": row}) == expected, "verl row (extra_info)"
    assert _trl_hash(row) == expected, "TRL environment_factory"
    assert _mcp_hash(env_id, seed=seed) == expected, "MCP start_episode(seed=)"
    discrete = gym.make(f"{env_id}-Discrete", disable_env_checker=True) \
        if f"{m3gym.resolve_env_id(env_id + '-Discrete')}" in gym.registry else None
    if discrete is not None:
        discrete.reset(seed=seed)
        assert discrete.unwrapped.task.content_hash() == expected, "the discrete wrapper"
        discrete.close()
    env = gym.make(env_id, disable_env_checker=True)
    env.reset(seed=seed)
    answer = env.unwrapped.task.answer
    assert answer_spec(row) == answer, "answer lookup of a row"
    # verl's reward function scores with the task the row names, not the row's ground_truth
    assert compute_score("m3gym", f"<answer>{answer.value}</answer>", "not it", row) == 1.0
    env.close()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_a_task_seed_names_one_task_everywhere(env_id: str) -> None:
    task_seed = 5
    expected = _reset_hash(env_id, task_seed, {"task_seed": task_seed})
    row = {"env_id": env_id, "task_seed": task_seed}
    assert task_ref(row).seed == task_seed
    assert _session_hash(row) == expected
    assert _trl_hash(row) == expected
    assert _mcp_hash(env_id, task_seed=task_seed) == expected
    # with the family named, every path is make_task(family, task_seed) (eval, frozen splits)
    env = gym.make(env_id, disable_env_checker=True)
    family = env.unwrapped.families[-1]
    env.close()
    named = make_task(family, task_seed).content_hash()
    assert _reset_hash(env_id, 0, {"family": family, "task_seed": task_seed}) == named
    assert _session_hash({**row, "family": family}) == named
    assert _session_hash({"env_id": env_id, "task_id": f"{family}/{task_seed}"}) == named
    assert _mcp_hash(env_id, task_seed=task_seed, family=family) == named


def test_the_two_words_name_different_tasks_and_a_row_may_not_mix_them() -> None:
    """Seed 0 and task seed 0 are two tasks: the words keep them apart, and a row says which."""
    assert _reset_hash("M3Bench-L1", 0) != _reset_hash("M3Bench-L1", 0, {"task_seed": 0})
    for bad in ({"seed": 0, "task_seed": 0}, {"seed": 0, "family": "tiny_text"},
                {"seed": 0, "task_id": "tiny_text/0"}):
        with pytest.raises(ValueError, match="not both"):
            task_ref({"env_id": "M3Bench-L1", **bad})
    for bad_seed in (-1, "x", True, 1.5):
        with pytest.raises(ValueError, match="'seed'"):
            task_ref({"env_id": "M3Bench-L1", "seed": bad_seed})
