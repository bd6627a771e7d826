"""Choices must not give the answer away to a policy that never looks at the image.

A no-tool policy that sees only the list of choices tries two shortcuts: the *medoid* (the choice
closest, by edit distance, to all the others — near-miss distractors built around the answer
make the answer the medoid) and, for numeric choices, the median. Both must stay near chance.
"""

import os

import numpy as np
import pytest
from rapidfuzz.distance import Levenshtein

import m3gym
from m3gym.scoring.answer import answer_is_correct, parse_number
from m3gym.tasks.registry import make_task

SEEDS = int(os.environ.get("M3GYM_LEAK_SEEDS", "60"))
FAMILIES = m3gym.family_names(suite=None)


def medoid(choices):
    costs = [sum(Levenshtein.distance(a, b) for b in choices) for a in choices]
    return choices[int(np.argmin(costs))]


def median_choice(choices):
    nums = [parse_number(c) for c in choices]
    if any(n is None for n in nums):
        return None
    order = np.argsort(nums, kind="stable")
    return choices[int(order[len(order) // 2])]


@pytest.mark.parametrize("family", FAMILIES)
def test_choice_only_shortcuts_stay_near_chance(family):
    hits = {"medoid": 0, "median": 0}
    chance = 0.0
    n = 0
    for seed in range(SEEDS):
        task = make_task(family, seed)
        if not task.choices:
            continue
        n += 1
        chance += 1 / len(task.choices)
        hits["medoid"] += answer_is_correct(medoid(list(task.choices)), task.answer)
        med = median_choice(list(task.choices))
        hits["median"] += med is not None and answer_is_correct(med, task.answer)
    if n == 0:
        pytest.skip("family without choices")
    p = chance / n
    bound = p + 3 * np.sqrt(p * (1 - p) / n) + 0.05
    for name, h in hits.items():
        assert h / n <= bound, f"{family}: the {name} of the choices is the answer {h}/{n} times (chance {p:.2f})"
