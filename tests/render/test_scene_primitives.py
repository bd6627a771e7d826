"""Drawing primitives of the object scenes (m3gym.tasks.render.scene_primitives)."""

from __future__ import annotations

import numpy as np

from m3gym.tasks.render import scene_primitives as P


def test_shade_scales_and_clips() -> None:
    assert P.shade((100, 200, 20), 1.5) == (150, 255, 30)
    assert P.shade((100, 200, 20), 0.5) == (50, 100, 10)


def test_vertical_gradient_runs_from_top_to_bottom() -> None:
    g = P.vertical_gradient(5, 3, (0, 0, 0), (200, 100, 40))
    assert g.shape == (5, 3, 3) and g.dtype == np.uint8
    assert g[0, 0].tolist() == [0, 0, 0] and g[-1, 2].tolist() == [200, 100, 40]
    assert (g[:, 0] == g[:, 2]).all()  # every column alike


def test_quad_inner_box_lies_inside_a_skewed_quad() -> None:
    quad = np.array([[10.2, 20.0], [50.0, 21.5], [49.0, 60.0], [11.0, 58.7]])
    assert P.quad_inner_box(quad, 2) == (13, 24, 47, 56)  # ceil(11 + 2), floor(58.7 - 2)


def test_paste_tilted_copies_exactly_without_tilt() -> None:
    img = np.zeros((40, 40, 3), np.uint8)
    patch = np.arange(10 * 8 * 3, dtype=np.uint8).reshape(10, 8, 3)
    ink = np.zeros((10, 8), bool)
    ink[2:4, 3:5] = True
    box, mask = P.paste_tilted(img, patch, ink, (20.0, 15.0), 0.0)
    assert box == (16, 10, 24, 20)
    assert (img[10:20, 16:24] == patch).all() and (mask == ink).all()


def test_paste_tilted_keeps_the_ink_inside_the_turned_patch() -> None:
    img = np.zeros((60, 60, 3), np.uint8)
    patch = np.full((12, 20, 3), 255, np.uint8)
    ink = np.ones((12, 20), bool)
    box, mask = P.paste_tilted(img, patch, ink, (30.0, 30.0), 30.0)
    assert mask.shape == (box[3] - box[1], box[2] - box[0])
    assert 0.6 * ink.sum() < mask.sum() <= ink.sum()
    region = img[box[1]:box[3], box[0]:box[2]]
    assert (region[mask] == 255).all()
