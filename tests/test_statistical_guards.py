"""Statistical guards with bounds derived from the sample: blind agents stay at or under chance,
hedges never score, and the heuristic agent keeps an accuracy floor on L2 and L3."""

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import m3gym
from m3gym.agents import ocr
from m3gym.agents.heuristic import HeuristicAgent
from m3gym.eval.significance import (
    binomial_floor,
    critical_count,
    poisson_binomial_pmf,
    power,
    upper_tail,
)
from m3gym.rollout import run_episode
from m3gym.tasks.registry import family_names

FAMILIES = m3gym.family_names(suite=None)
ALPHA = 1e-3


# ------------------------------------------------------------------ the exact tests themselves
def test_poisson_binomial_by_hand():
    assert np.allclose(poisson_binomial_pmf([0.5, 0.5]), [0.25, 0.5, 0.25])
    assert np.allclose(poisson_binomial_pmf([0.2, 0.5]), [0.4, 0.5, 0.1])
    assert np.allclose(poisson_binomial_pmf([]), [1.0])
    assert upper_tail([0.5] * 3, 2) == pytest.approx(0.5)
    assert upper_tail([0.5] * 3, 0) == 1.0
    assert upper_tail([0.5] * 3, 4) == 0.0
    # Binomial(10, 1/2): P(S >= 9) = 11/1024 <= 0.05 < P(S >= 8) = 56/1024
    assert critical_count([0.5] * 10, 0.05) == 9
    assert critical_count([0.5] * 10, 0.0107) == 10
    assert critical_count([0.5] * 3, 1e-9) == 4  # nothing is significant: beyond the support
    assert power([0.5] * 10, [0.5] * 10, 0.05) == pytest.approx(11 / 1024)
    assert power([0.5] * 10, [1.0] * 10, 0.05) == pytest.approx(1.0)
    assert binomial_floor(64, 100, 2.0) == pytest.approx(0.64 - 2 * 0.048)
    for bad in ([1.5], [-0.1], [[0.5]]):
        with pytest.raises(ValueError):
            poisson_binomial_pmf(bad)
    with pytest.raises(ValueError):
        critical_count([0.5], 0.0)
    with pytest.raises(ValueError):
        binomial_floor(3, 2, 1.0)


# ------------------------------------------------------------------ blind agents
class BlindAgent:
    """Never looks at the images and is *not* uniform over the choices by construction.

    Each episode it makes a few random schema-valid tool calls (from the env's action space),
    then answers with one strategy drawn per episode: the first, the last, the longest or the
    shortest choice, a random digit string, or free text. No strategy can beat chance unless
    the choices or the env leak the answer.
    """

    name = "blind"
    STRATEGIES = ("first", "last", "longest", "shortest", "digits", "text")

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self._space = None
        self._choices: tuple[str, ...] = ()
        self._calls_left = 0
        self._strategy = "first"

    def bind_space(self, space: Any) -> None:
        self._space = space
        space.seed(int(self.rng.integers(2**31)))

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        self._choices = tuple(info.get("choices") or ())
        self._calls_left = int(self.rng.integers(0, 4))
        self._strategy = self.STRATEGIES[int(self.rng.integers(len(self.STRATEGIES)))]

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        if self._calls_left > 0 and self._space is not None:
            self._calls_left -= 1
            return self._space.sample()
        return {"name": "answer", "arguments": {"text": self._answer()}}

    def _answer(self) -> str:
        c = self._choices
        s = self._strategy
        if s == "first" and c:
            return c[0]
        if s == "last" and c:
            return c[-1]
        if s == "longest" and c:
            return max(c, key=len)
        if s == "shortest" and c:
            return min(c, key=len)
        if s == "digits":
            return str(int(self.rng.integers(0, 100)))
        return "".join(self.rng.choice(list("ABCDEFGH0123456789 :-x"), size=6))


class HedgingAgent:
    """Answers every choice at once (``"a or b or c"``) or two of them — a hedge, never correct."""

    name = "hedge"

    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self._choices: tuple[str, ...] = ()

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        self._choices = tuple(info.get("choices") or ())

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        c = list(self._choices)
        if self.rng.random() < 0.5 and len(c) > 2:
            c = [c[i] for i in self.rng.choice(len(c), size=2, replace=False)]
        sep = (" or ", ", ", " ", " / ")[int(self.rng.integers(4))]
        return {"name": "answer", "arguments": {"text": sep.join(c)}}


def _play(agent_factory, episodes_per_family: int):
    """Return (successes, chance probabilities) over every family, fixed seeds."""
    successes, chance = 0, []
    for f_index, family in enumerate(FAMILIES):
        env = gym.make(m3gym.family_env_id(family))
        for k in range(episodes_per_family):
            agent = agent_factory(1000 * f_index + k)
            res = run_episode(env, agent, seed=k)
            choices = env.unwrapped.task.choices
            assert choices, family
            successes += int(bool(res.final_info.get("answer_correct", False)))
            chance.append(1.0 / len(choices))
    return successes, chance


def test_blind_agent_does_not_beat_chance():
    successes, chance = _play(BlindAgent, 12)
    n = len(chance)
    bound = critical_count(chance, ALPHA)
    # the bound can fail: an agent right at twice chance (capped at 1) is caught almost surely
    assert power(chance, [min(1.0, 2 * p) for p in chance], ALPHA) > 0.99, n
    assert successes < bound, (successes, bound, n, sum(chance))


def test_hedges_never_score():
    successes, chance = _play(HedgingAgent, 6)
    assert len(chance) == 6 * len(FAMILIES)
    assert successes == 0


# ------------------------------------------------------------------ heuristic accuracy floors
# Measured on exactly these samples (tesseract 5.3.0, heuristic agent seed 0, task seeds
# 7000..): L2 45/84 (seven families since the realism work; 41/60 over five before), L3 30/48. Floors sit three binomial standard errors under the measurement,
# and must stay above chance (mean 1/len(choices) over the sample).
HEURISTIC_SAMPLES = {2: (12, 45), 3: (8, 30)}


@pytest.mark.skipif(not ocr.tesseract_available(), reason="tesseract not installed")
@pytest.mark.parametrize("level", [2, 3])
def test_heuristic_accuracy_floor(level):
    per_family, measured = HEURISTIC_SAMPLES[level]
    env = gym.make(f"M3Bench-L{level}")
    agent = HeuristicAgent()
    correct, chance = 0, []
    for family in family_names(level):
        for k in range(per_family):
            r = run_episode(env, agent, seed=0,
                            options={"family": family, "task_seed": 7000 + k})
            correct += bool(r.final_info["answer_correct"])
            chance.append(1.0 / len(env.unwrapped.task.choices))
    n = len(chance)
    floor = binomial_floor(measured, n, 3.0)
    assert floor * n > critical_count(chance, ALPHA)  # the floor itself is well above chance
    assert correct / n >= floor, (correct, n, floor)
