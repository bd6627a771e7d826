"""The glyph_faint classic family: a digit the 96 px view rounds away, shown by a stretch."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

from m3gym.scoring.checkpoints import measure_evidence
from m3gym.tasks.families._glyph_common import CLASSIC_VIEW
from m3gym.tasks.registry import get_family, make_task
from m3gym.view import to_view


def test_digit_is_not_in_the_view() -> None:
    for seed in range(20):
        task = make_task("glyph_faint", seed)
        img = task.images[0]
        x0, y0, x1, y1 = (int(v) for v in task.evidence[0].box)
        k = task.metadata["block_factor"]
        assert k == 3 and img.shape[:2] == (288, 288)
        full = img[y0:y1, x0:x1].astype(int)
        assert all(int(full[..., c].max() - full[..., c].min()) == 2 for c in range(3))
        view = to_view(img, CLASSIC_VIEW)[-(-y0 // k):y1 // k, -(-x0 // k):x1 // k]
        assert all(int(view[..., c].min()) == int(view[..., c].max()) for c in range(3))


def test_autocontrast_restores_the_digit_and_invert_does_not() -> None:
    env = gym.make("M3Bench-GlyphFaint").unwrapped
    env.reset(seed=3)
    env.step({"name": "invert", "arguments": {"image_index": 0}})
    env.step({"name": "autocontrast", "arguments": {"image_index": 0, "cutoff": 1.0}})
    ev = env.task.evidence[0]
    assert not measure_evidence(env.state[0], ev, CLASSIC_VIEW).passed
    assert not measure_evidence(env.state[1], ev, CLASSIC_VIEW).passed
    view = measure_evidence(env.state[2], ev, CLASSIC_VIEW)
    assert view.passed and view.contrast >= 1.3 * ev.min_contrast
    assert np.asarray(env.state[2].array).shape == (288, 288, 3)


def test_validate_rejects_wide_ranges_and_small_sides() -> None:
    cls = get_family("glyph_faint")
    with pytest.raises(ValueError, match="restore"):
        cls(levels=(2, 4)).validate()
    with pytest.raises(ValueError):
        cls(side=96, glyph_min=24.0, glyph_max=28.0).validate()
    for d in (0.0, 0.5, 1.0):
        cls(**cls.difficulty_knobs(d)).validate()
