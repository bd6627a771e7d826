"""The glyph_rotate classic family: a small turned digit card, legible as it lies after a crop."""

from __future__ import annotations

import gymnasium as gym

from m3gym.scoring.checkpoints import measure_evidence
from m3gym.tasks.families._glyph_common import CLASSIC_VIEW, grid_cell
from m3gym.tasks.render import box_to_bbox1000


def test_crop_shows_the_turned_digit_and_a_rotation_does_not() -> None:
    env = gym.make("M3Bench-GlyphRotate").unwrapped
    for seed in range(20):
        env.reset(seed=seed)
        task = env.task
        ref = task.reference[0][0]
        assert ref.name == "crop"
        ev = task.evidence[0]
        assert ev.angle == 0 and not ev.mirrored  # read as it lies
        side = task.images[0].shape[0]
        cell = {"image_index": 0, "bbox_2d": box_to_bbox1000(
            grid_cell(task.metadata["cell"], side), side, side), "zoom_scale": 1.0}
        env.step([{"name": "rotate", "arguments": {"image_index": 0, "angle": 90}},
                  {"name": "crop", "arguments": dict(ref.arguments)},
                  {"name": "crop", "arguments": cell}])
        assert not measure_evidence(env.state[0], ev, CLASSIC_VIEW).passed
        assert not measure_evidence(env.state[1], ev, CLASSIC_VIEW).passed  # turned, still tiny
        assert measure_evidence(env.state[2], ev, CLASSIC_VIEW).passed, seed
        assert measure_evidence(env.state[3], ev, CLASSIC_VIEW).passed, seed  # the wrapper's cell
