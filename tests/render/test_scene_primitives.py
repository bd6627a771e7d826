"""Drawing primitives of the object scenes (m3gym.tasks.render.scene_primitives)."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

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


def vertical_gradient_reference(h: int, w: int, top, bottom) -> np.ndarray:
    """The original: one column broadcast to the whole patch."""
    t = np.linspace(0.0, 1.0, max(h, 1), dtype=np.float32)[:, None, None]
    a, b = np.asarray(top, np.float32), np.asarray(bottom, np.float32)
    col = (a * (1 - t) + b * t + 0.5).astype(np.uint8)
    return np.ascontiguousarray(np.broadcast_to(col, (h, w, 3)))


COLOURS = st.tuples(*[st.floats(0.0, 255.0)] * 3)


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 300), st.integers(0, 300), COLOURS, COLOURS)
def test_vertical_gradient_equals_broadcasting_its_column(h, w, top, bottom) -> None:
    assert np.array_equal(P.vertical_gradient(h, w, top, bottom),
                          vertical_gradient_reference(h, w, top, bottom))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.tuples(*[st.integers(-40, 260)] * 4), COLOURS, COLOURS)
def test_fill_gradient_equals_pasting_the_broadcast_patch(seed, box, top, bottom) -> None:
    img = np.random.default_rng(seed).integers(0, 256, (120, 220, 3), dtype=np.uint8)
    slow = img.copy()
    x0, y0, x1, y1 = max(0, box[0]), max(0, box[1]), min(220, box[2]), min(120, box[3])
    if x1 > x0 and y1 > y0:
        slow[y0:y1, x0:x1] = vertical_gradient_reference(y1 - y0, x1 - x0, top, bottom)
    P.fill_gradient(img, box, top, bottom)
    assert np.array_equal(img, slow)


@settings(max_examples=200, deadline=None)
@given(st.tuples(*[st.one_of(st.integers(0, 255), st.floats(-50.0, 400.0))] * 3),
       st.floats(-2.0, 3.0))
def test_shade_equals_clipping_with_numpy(color, factor) -> None:
    expected = tuple(int(np.clip(c * factor, 0, 255)) for c in color)
    assert P.shade(color, factor) == expected
    assert P.shade(np.asarray(color, np.float32), factor) == tuple(
        int(np.clip(c * factor, 0, 255)) for c in np.asarray(color, np.float32))
