"""The reward audit's results: one episode's outcome, a policy's episodes, an env's audit.

:class:`EpisodeOutcome` (with :func:`outcome_of`, and :func:`mix_outcomes` for the chance
adjustment described in :mod:`m3gym.audit.reward_audit`), :class:`PolicyResult` and
:class:`EnvAudit`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from m3gym.audit.blind import (
    NO_CHOICE_ANSWER,
)
from m3gym.audit.reward_policies import is_blind, is_chance_adjusted
from m3gym.scoring.answer import answer_is_correct
from m3gym.spec import Task


@dataclass(frozen=True)
class EpisodeOutcome:
    """One episode of one policy: return, its answer term and the final metrics.

    For a chance-adjusted policy every number is the expectation over its random answer
    (:func:`mix_outcomes`), so ``acc`` is the chance of a correct choice.
    """

    seed: int
    ret: float
    answer_reward: float
    answered: bool
    acc: float
    S: float
    V: float
    m3: float
    OT: float
    family: str = ""

    @property
    def non_answer(self) -> float:
        """The return without the answer term."""
        return self.ret - self.answer_reward


def outcome_of(seed: int, total_reward: float, final_info: Mapping[str, Any], answered: bool,
               family: str = "") -> EpisodeOutcome:
    """Return the realized :class:`EpisodeOutcome` of a finished episode."""
    metrics = final_info.get("metrics", {})
    components = final_info.get("reward_components", {})
    return EpisodeOutcome(
        seed=seed, ret=float(total_reward), answer_reward=float(components.get("answer", 0.0)),
        answered=answered, acc=float(metrics.get("acc", 0.0)), S=float(metrics.get("S", 0.0)),
        V=float(metrics.get("V", 0.0)), m3=float(metrics.get("m3", 0.0)),
        OT=float(metrics.get("OT", 0.0)), family=family)


_MIXED = ("ret", "answer_reward", "acc", "S", "V", "m3", "OT")


def mix_outcomes(p: float, right: EpisodeOutcome | None,
                 wrong: EpisodeOutcome | None) -> EpisodeOutcome:
    """Return the expectation of an episode answered correctly with probability ``p``.

    ``right``/``wrong`` are the same episode answered with a correct / a wrong choice; either may
    be ``None`` when its probability is 0.
    """
    if right is None or p <= 0.0:
        if wrong is None:
            raise ValueError("mix_outcomes needs the wrong-answer outcome when p is 0")
        return wrong
    if wrong is None or p >= 1.0:
        return right
    mixed = {k: p * getattr(right, k) + (1.0 - p) * getattr(wrong, k) for k in _MIXED}
    return EpisodeOutcome(seed=wrong.seed, answered=wrong.answered, family=wrong.family, **mixed)


def counterfactual_answers(task: Task) -> tuple[str | None, str | None]:
    """Return a correct and a wrong choice of ``task`` (``None`` where there is none)."""
    choices = task.choices or ()
    right = next((c for c in choices if answer_is_correct(c, task.answer)), None)
    wrong = next((c for c in choices if not answer_is_correct(c, task.answer)), None)
    if not choices:
        wrong = NO_CHOICE_ANSWER
    return right, wrong


@dataclass
class PolicyResult:
    """All episodes of one policy under one env id and preset."""

    name: str
    outcomes: list[EpisodeOutcome]

    @property
    def chance_adjusted(self) -> bool:
        """Whether the answer term is chance-adjusted for this policy."""
        return is_chance_adjusted(self.name)

    def returns(self) -> np.ndarray:
        """Per-episode returns (expected over the random answer when chance-adjusted)."""
        return np.array([o.ret for o in self.outcomes])

    def non_answer(self) -> np.ndarray:
        """Per-episode non-answer rewards."""
        return np.array([o.non_answer for o in self.outcomes])

    def mean(self, attr: str) -> float:
        """Mean of an :class:`EpisodeOutcome` field over the episodes."""
        return float(np.mean([getattr(o, attr) for o in self.outcomes]))


@dataclass
class EnvAudit:
    """Every policy's results for one env id and one reward preset."""

    env_id: str
    preset: str
    seed: int
    results: dict[str, PolicyResult] = field(default_factory=dict)

    @property
    def oracle_return(self) -> float:
        """The oracle's mean return (the 100 % of the table)."""
        return float(self.results["oracle"].returns().mean())

    def percent(self, values: np.ndarray) -> np.ndarray:
        """Return ``values`` as percentages of the oracle's mean return."""
        return 100.0 * values / self.oracle_return

    def rows(self) -> list[dict[str, Any]]:
        """Return one summary dict per policy (table order)."""
        rows = []
        for name, res in self.results.items():
            ret = res.returns()
            rows.append({
                "policy": name, "blind": is_blind(name), "chance_adjusted": res.chance_adjusted,
                "episodes": len(ret), "return": float(ret.mean()),
                "pct_oracle": float(self.percent(ret).mean()),
                "non_answer": float(res.non_answer().mean()), "acc": res.mean("acc"),
                "S": res.mean("S"), "V": res.mean("V"), "m3": res.mean("m3"),
                "OT": res.mean("OT"), "answered": res.mean("answered"),
            })
        return rows
