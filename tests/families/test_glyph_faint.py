"""The glyph_faint classic family: a faint glyph, legible after a contrast operation."""

from __future__ import annotations

import gymnasium as gym

from m3gym.scoring.checkpoints import measure_evidence
from m3gym.tasks.families._glyph_common import CLASSIC_VIEW
from m3gym.tasks.registry import make_task


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
