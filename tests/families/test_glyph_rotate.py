"""The glyph_rotate classic family: a turned glyph, legible after the inverse rotation."""

from __future__ import annotations

import gymnasium as gym

from m3gym.scoring.checkpoints import measure_evidence
from m3gym.tasks.families._glyph_common import CLASSIC_VIEW


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
