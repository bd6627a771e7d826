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
from m3gym.scoring.checkpoints import measure_evidence
from m3gym.tasks.families._glyph_common import CLASSIC_VIEW, GLYPHS, grid_cell
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
    assert m3gym.CLASSIC_ENV_ID == "M3Bench-Classic-v3" and m3gym.CLASSIC_ENV_ID in m3gym.env_ids()
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


def test_zoom_quadrant_crop_is_legible_full_crop_is_not() -> None:
    env = gym.make("M3Bench-GlyphZoom").unwrapped
    for seed in range(20):
        env.reset(seed=seed)
        cell = env.task.metadata["cell"]
        r, c = divmod(cell, 3)
        side = env.task.images[0].shape[0]
        half = side // 2
        x0, y0, x1, y1 = grid_cell(cell, side)
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        qx, qy = int(cx >= half), int(cy >= half)
        quad = [qx * 500, qy * 500, qx * 500 + 500, qy * 500 + 500]
        tag = env.task.metadata["tag_box"]
        inside = (tag[0] >= qx * half and tag[2] <= qx * half + half
                  and tag[1] >= qy * half and tag[3] <= qy * half + half)
        _, _, _, _, info = env.step([
            {"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [0, 0, 1000, 1000]}},
            {"name": "crop", "arguments": {"image_index": 0, "bbox_2d": quad}},
        ])
        ev = env.task.evidence[0]
        assert not measure_evidence(env.state[1], ev, CLASSIC_VIEW).passed
        assert measure_evidence(env.state[2], ev, CLASSIC_VIEW).passed == inside


def test_rotate_wrong_angle_fails_right_one_passes() -> None:
    env = gym.make("M3Bench-GlyphRotate").unwrapped
    for seed in range(20):
        env.reset(seed=seed)
        task = env.task
        ref = task.reference[0][0]
        wrong = ({"name": "rotate", "arguments": {"image_index": 0, "angle": 45}}
                 if ref.name == "flip" else
                 {"name": "rotate", "arguments": {"image_index": 0,
                                                  "angle": ref.arguments["angle"] + 90}})
        env.step([wrong, {"name": ref.name, "arguments": dict(ref.arguments)}])
        ev = task.evidence[0]
        assert not measure_evidence(env.state[1], ev, CLASSIC_VIEW).passed
        assert measure_evidence(env.state[2], ev, CLASSIC_VIEW).passed, seed


def test_faint_ink_invisible_then_restored() -> None:
    for seed in range(20):
        task = make_task("glyph_faint", seed)
        assert task.metadata["ink_contrast"] < task.evidence[0].min_contrast / 2
    env = gym.make("M3Bench-GlyphFaint").unwrapped
    env.reset(seed=3)
    env.step({"name": "invert", "arguments": {"image_index": 0}})
    env.step({"name": "autocontrast", "arguments": {"image_index": 0, "cutoff": 1.0}})
    ev = env.task.evidence[0]
    assert not measure_evidence(env.state[1], ev, CLASSIC_VIEW).passed
    view = measure_evidence(env.state[2], ev, CLASSIC_VIEW)
    assert view.passed and view.contrast >= ev.min_contrast


@pytest.mark.parametrize("family, bad", [
    ("glyph_zoom", {"glyph_max": 26.0}),        # legible without a crop
    ("glyph_zoom", {"glyph_min": 4.0, "glyph_max": 5.0}),  # illegible even in a quadrant
    ("glyph_zoom", {"side": 100}),
    ("glyph_rotate", {"glyph_min": 10.0}),      # illegible once upright
    ("glyph_rotate", {"transforms": ("rot45",)}),
    ("glyph_faint", {"ink_contrast": (20.0, 25.0)}),  # visible without a tool
    ("glyph_faint", {"span": (30.0, 40.0), "shading": (3.0, 4.0)}),  # not restorable
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
