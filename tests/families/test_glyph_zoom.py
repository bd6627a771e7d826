"""The glyph_zoom classic family: a small glyph in one quadrant, legible after the right crop."""

from __future__ import annotations

import gymnasium as gym

from m3gym.scoring.checkpoints import measure_evidence
from m3gym.tasks.families._glyph_common import CLASSIC_VIEW, grid_cell


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
