"""The reward audit's policies and presets: which policies play, how each is built, its chance.

The reference agents and the blind library (:mod:`m3gym.audit.blind`) by name
(:func:`policy_names`, :func:`build_policy`), which of them answer a random choice and are
chance-adjusted (:func:`is_chance_adjusted`, :func:`chance_accuracy`), and the reward presets the
audit runs (:func:`reward_presets`, :func:`preset_spec`). :mod:`m3gym.audit.reward_audit`
describes the audit.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from typing import Any

import numpy as np

from m3gym.agents.base import Agent, OracleAgent, RandomAgent, make_agent
from m3gym.audit.blind import (
    BLIND_POLICIES,
    blind_shape,
    make_blind_policy,
    random_answer,
    with_answer,
)
from m3gym.scoring.answer import answer_is_correct
from m3gym.spec import Task

REFERENCE_POLICIES: tuple[str, ...] = ("oracle", "oracle_random_answer", "heuristic", "random")
"""The reference agents every audit runs, in table order."""

RANDOM_ANSWER_REFERENCES: frozenset[str] = frozenset({"random", "oracle_random_answer"})
"""References whose answer is a uniformly random choice (their answer term is chance-adjusted)."""


def reward_presets() -> list[str]:
    """Return the name of every reward preset YAML in ``m3gym/configs/reward/`` (sorted)."""
    folder = resources.files("m3gym").joinpath("configs/reward")
    return sorted(p.name[:-5] for p in folder.iterdir() if p.name.endswith(".yaml"))


def preset_spec(name: str) -> str:
    """Return what ``gym.make(..., reward=...)`` takes for preset ``name`` (name or YAML path)."""
    from m3gym.reward import PRESETS

    if name in PRESETS:
        return name
    path = resources.files("m3gym").joinpath(f"configs/reward/{name}.yaml")
    if not path.is_file():
        raise ValueError(f"unknown reward preset {name!r}; available: {reward_presets()}")
    return str(path)


class OracleCallsRandomAnswer(OracleAgent):
    """Replays the reference calls exactly, then answers a uniformly random choice.

    Its return (chance-adjusted) is what correct *process* alone is worth under a preset.
    """

    name = "oracle_random_answer"
    forced_answer: str | None = None

    def __init__(self, seed: int = 0) -> None:
        super().__init__()
        self.rng = np.random.default_rng(seed)
        self._choices: tuple[str, ...] = ()

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Start replaying; remember the choices."""
        super().reset(observation, info)
        self._choices = tuple(info.get("choices") or ())

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Return the next reference step, then a random answer."""
        if self.task is not None and self._step >= len(self.task.reference):
            return with_answer(random_answer(self.rng, self._choices), self.forced_answer)
        return super().act(observation, info)


class AuditRandomAgent(RandomAgent):
    """The random agent, whose answer text the audit may replace (``forced_answer``).

    Its calls and its rng stream are the random agent's; only the answer text is swapped, which
    is how the audit measures its expected return over the random choice.
    """

    forced_answer: str | None = None

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Return the random agent's action (with the forced answer text, if any)."""
        return with_answer(super().act(observation, info), self.forced_answer)


def policy_names() -> list[str]:
    """Return every policy the audit runs: the references, then the blind library."""
    return [*REFERENCE_POLICIES, *BLIND_POLICIES]


def is_blind(name: str) -> bool:
    """Return whether ``name`` is a blind policy (held to the blind targets)."""
    return name in BLIND_POLICIES


def is_chance_adjusted(name: str) -> bool:
    """Return whether policy ``name`` answers at random (its answer term is chance-adjusted)."""
    return is_blind(name) or name in RANDOM_ANSWER_REFERENCES


def build_policy(name: str, seed: int, task_source: Callable[[], Task]) -> Agent:
    """Return policy ``name``; ``task_source`` gives the env's current task (read at reset).

    Blind policies receive only :func:`m3gym.audit.blind.blind_shape` of that task.
    """
    if name in BLIND_POLICIES:
        return make_blind_policy(name, seed, lambda: blind_shape(task_source()))
    if name == "oracle_random_answer":
        return OracleCallsRandomAnswer(seed)
    if name == "random":
        return AuditRandomAgent(seed=seed)
    if name in ("oracle", "heuristic"):
        return make_agent(name, seed=seed)
    raise ValueError(f"unknown audit policy {name!r}; available: {', '.join(policy_names())}")


def chance_accuracy(task: Task) -> float:
    """Return the probability that a uniformly random choice of ``task`` is judged correct."""
    if not task.choices:
        return 0.0
    return sum(answer_is_correct(c, task.answer) for c in task.choices) / len(task.choices)
