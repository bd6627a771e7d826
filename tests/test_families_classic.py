"""Tests of the classic-RL suite: glyph_zoom, glyph_rotate, glyph_faint and their env ids.

The generic guarantees (determinism, task sanity, oracle Acc = S = V = 1 and OT = 0, evidence
illegible at the family's view size and legible after the reference, validate() probes) are
m3gym.testing.check_family's (tests/test_check_family.py, every family).
"""

from __future__ import annotations

from collections import Counter

import gymnasium as gym
import numpy as np
import pytest

import m3gym
from m3gym.tasks.families._glyph_common import CLASSIC_VIEW, GLYPHS
from m3gym.tasks.registry import family_names, get_family, make_task
from m3gym.wrappers import CLASSIC_DISCRETE_ID, CLASSIC_DISCRETE_KWARGS

CLASSIC = ("glyph_faint", "glyph_rotate", "glyph_zoom")


def test_suite_membership_keeps_benchmark_levels_unchanged() -> None:
    assert family_names(1, "classic") == list(CLASSIC)
    assert family_names(1) == ["faint_text", "rotated_text", "tiny_text", "ui_status"]
    assert not set(CLASSIC) & set(family_names())
    assert set(CLASSIC) <= set(family_names(suite=None))
    with pytest.raises(ValueError, match="unknown suite"):
        family_names(suite="atari")


def test_classic_env_ids_and_view_size() -> None:
    assert m3gym.CLASSIC_ENV_ID == "M3Bench-Classic-v4" and m3gym.CLASSIC_ENV_ID in m3gym.env_ids()
    env = gym.make("M3Bench-Classic").unwrapped
    assert env.families == list(CLASSIC) and env.view_size == CLASSIC_VIEW
    assert gym.make("M3Bench-GlyphZoom").unwrapped.view_size == CLASSIC_VIEW
    assert gym.make("M3Bench-L1").unwrapped.view_size == 768
    assert gym.make("M3Bench-Classic", view_size=128).unwrapped.view_size == 128


@pytest.mark.parametrize("family", CLASSIC)
def test_fixed_choices_small_images_and_balanced_answers(family: str) -> None:
    answers = Counter()
    for seed in range(400):
        task = make_task(family, seed)
        assert task.choices == GLYPHS
        assert task.answer.value in GLYPHS
        side = get_family(family).side
        assert task.images[0].shape == (side, side, 3)
        assert task.metadata["suite"] == "classic"
        answers[task.answer.value] += 1
    assert set(answers) == set(GLYPHS)
    # uniform draws: 50 expected per digit, sd 6.6; no digit is a shortcut for a policy
    assert 25 <= min(answers.values()) and max(answers.values()) <= 80, answers


@pytest.mark.parametrize("family, bad", [
    ("glyph_zoom", {"glyph_max": 26.0}),        # legible without a crop
    ("glyph_zoom", {"glyph_min": 4.0, "glyph_max": 5.0}),  # illegible even in a quadrant
    ("glyph_zoom", {"side": 100}),
    ("glyph_rotate", {"glyph_min": 7.0}),       # illegible even in a grid-cell crop
    ("glyph_rotate", {"glyph_max": 24.0}),      # legible without a crop
    ("glyph_rotate", {"transforms": ("rot45",)}),
    ("glyph_faint", {"side": 144, "glyph_min": 30.0, "glyph_max": 40.0}),  # no block to hide in
    ("glyph_faint", {"levels": (2, 4)}),  # not restorable: the stretch divides by 4 levels
    ("glyph_faint", {"glyphs": ("1", "1")}),
])
def test_validate_rejects_inconsistent_configs(family: str, bad: dict) -> None:
    with pytest.raises(ValueError):
        make_task(family, 0, bad)


def test_classic_discrete_defaults() -> None:
    env = gym.make(CLASSIC_DISCRETE_ID, task_pool=4, cache_size=4)
    assert set(env.observation_space.spaces) == {"image", "features"}
    assert env.observation_space["image"].shape == (96, 96, 3)
    assert env.get_wrapper_attr("max_steps") == CLASSIC_DISCRETE_KWARGS["max_steps"]
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    base = env.get_wrapper_attr("env").unwrapped
    assert base.view_size == CLASSIC_VIEW and base.suite == "classic"
    # a 3x3-cell crop of a 288-px image at zoom "view" is exactly the 96-px observation
    obs, *_ = env.step([1, 0, 5, 0, 0])
    assert base.state[1].array.shape[:2] == (96, 96)
    assert np.array_equal(obs["image"], base.state[1].array)


def test_input_measure_cache_matches_fresh_env_and_never_serves_another_task() -> None:
    pooled = gym.make(CLASSIC_DISCRETE_ID, task_pool=2, cache_size=2, pool_order="sequential")
    pooled.reset(seed=0)
    for _ in range(5):  # the two pool tasks, again and again: cached v_true measurements
        _, info = pooled.reset()
        _, _, _, _, fin = pooled.step([0, 0, 0, 0, 3])
        task = pooled.get_wrapper_attr("env").unwrapped.task
        fresh = gym.make(m3gym.family_env_id(task.family)).unwrapped
        fresh.reset(options={"task": task})
        _, _, _, _, ref = fresh.step({"name": "answer", "arguments": {"text": "3"}})
        assert fin["metrics"] == ref["metrics"]


def test_classic_family_classes_declare_suite_and_view() -> None:
    for name in CLASSIC:
        cls = get_family(name)
        assert cls.suite == "classic" and cls.view_size == CLASSIC_VIEW and cls.level == 1
