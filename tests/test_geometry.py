"""m3gym.geometry: the one 0–1000 box mapping, box growth, IoU and the affine helpers."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.geometry import (
    EDGE_EPS,
    apply_affine,
    bbox1000_edges,
    bbox1000_spans_a_pixel,
    bbox1000_to_box,
    box_iou,
    box_to_bbox1000,
    compose_affine,
    exact_bbox1000,
    grow_box,
    mapped_extent,
    rotated_size,
    rotation_affine,
)
from m3gym.tools.base import ToolError
from m3gym.tools.visual import crop_pixel_box

sides = st.integers(1, 5000)


@st.composite
def image_and_box(draw: st.DrawFn, step: float = 1.0) -> tuple[int, int, tuple[float, ...]]:
    """An image size and a pixel box of positive size inside it, on a grid of ``step`` px."""
    w, h = draw(sides), draw(sides)
    units_w, units_h = int(w / step), int(h / step)
    x0 = draw(st.integers(0, units_w - 1))
    x1 = draw(st.integers(x0 + 1, units_w))
    y0 = draw(st.integers(0, units_h - 1))
    y1 = draw(st.integers(y0 + 1, units_h))
    box = (x0 * step, y0 * step, min(w, x1 * step), min(h, y1 * step))
    return w, h, box


def contains(outer: tuple[float, ...], inner: tuple[float, ...]) -> bool:
    return (outer[0] <= inner[0] and outer[1] <= inner[1]
            and outer[2] >= inner[2] and outer[3] >= inner[3])


@settings(max_examples=400, deadline=None)
@given(image_and_box())
def test_pixel_box_round_trip_through_bbox1000_contains_it(case) -> None:
    w, h, box = case
    bbox = box_to_bbox1000(box, w, h)
    assert all(isinstance(v, int) and 0 <= v <= 1000 for v in bbox)
    back = bbox1000_to_box(bbox, w, h)
    assert contains(back, box), (box, bbox, back)
    # the crop tool takes the same box and accepts it
    assert crop_pixel_box([float(v) for v in bbox], w, h) == back


@settings(max_examples=200, deadline=None)
@given(image_and_box(step=0.25))
def test_fractional_pixel_boxes_round_trip_too(case) -> None:
    w, h, box = case
    back = bbox1000_to_box(box_to_bbox1000(box, w, h), w, h)
    assert contains(back, box), (box, back)


def test_float_noise_does_not_cut_the_last_pixel() -> None:
    # 290 / 1000 * 100 = 28.999...: the round trip must still reach pixel edge 29
    assert 290 / 1000 * 100 < 29
    bbox = box_to_bbox1000((10, 10, 29, 29), 100, 100)
    assert bbox1000_to_box(bbox, 100, 100)[2:] >= (29, 29)


@settings(max_examples=300, deadline=None)
@given(sides, sides, st.lists(st.floats(0, 1000, allow_nan=False), min_size=4, max_size=4))
def test_bbox1000_to_box_rounds_outward_by_less_than_a_pixel(w, h, values) -> None:
    x0, x1 = sorted(values[:2])
    y0, y1 = sorted(values[2:])
    bbox = [x0, y0, x1, y1]
    fx0, fy0, fx1, fy1 = bbox1000_edges(bbox, w, h)
    px0, py0, px1, py1 = bbox1000_to_box(bbox, w, h)
    assert fx0 - 1 < px0 <= fx0 + EDGE_EPS and fy0 - 1 < py0 <= fy0 + EDGE_EPS
    assert fx1 - EDGE_EPS <= px1 < fx1 + 1 and fy1 - EDGE_EPS <= py1 < fy1 + 1
    assert 0 <= px0 and 0 <= py0 and px1 <= w and py1 <= h


def test_bbox1000_to_box_by_hand() -> None:
    # 100 x 50 image: x edges 12.5 -> 12 (down) and 37.5 -> 38 (up); y 5 -> 5, 20.2 -> 21
    assert bbox1000_to_box([125, 100, 375, 404], 100, 50) == (12, 5, 38, 21)
    # an edge a hair off an integer counts as that integer: 66.666... * 15 / 1000 = 1.0000000000000002
    assert bbox1000_edges([0, 0, 1000 / 15, 1000], 15, 15)[2] > 1
    assert bbox1000_to_box([1000 / 15, 0, 1000 / 15 * 2, 1000], 15, 15) == (1, 0, 2, 15)


@settings(max_examples=300, deadline=None)
@given(image_and_box())
def test_exact_bbox1000_maps_back_to_the_same_pixels(case) -> None:
    w, h, box = case
    pixels = tuple(int(v) for v in box)
    bbox = exact_bbox1000(pixels, w, h)
    assert bbox1000_spans_a_pixel(bbox, w, h)
    assert bbox1000_to_box(bbox, w, h) == pixels


def test_crop_tool_refuses_a_box_under_one_pixel() -> None:
    assert not bbox1000_spans_a_pixel([0, 0, 1, 1000], 100, 100)  # 0.1 px wide
    with pytest.raises(ToolError, match="at least 1 pixel"):
        crop_pixel_box([0, 0, 1, 1000], 100, 100)


@settings(max_examples=200, deadline=None)
@given(image_and_box(), st.floats(0, 50), st.floats(0, 50))
def test_grow_box_contains_the_box_and_stays_in_the_image(case, margin, margin_y) -> None:
    w, h, box = case
    grown = grow_box(box, margin, w, h)
    assert contains(grown, box) and grown[0] >= 0 and grown[1] >= 0
    assert grown[2] <= w and grown[3] <= h
    assert grown[0] >= math.floor(box[0] - margin) and grown[2] <= math.ceil(box[2] + margin)
    tall = grow_box(box, margin, w, h, margin_y=margin_y)
    assert tall[::2] == grown[::2]
    assert tall[1] == max(0, math.floor(box[1] - margin_y))


def test_box_iou_by_hand() -> None:
    assert box_iou((0, 0, 2, 2), (1, 1, 3, 3)) == pytest.approx(1 / 7)
    assert box_iou((0, 0, 1, 1), (1, 0, 2, 1)) == 0.0
    assert box_iou((0, 0, 1, 1), (0, 0, 1, 1)) == 1.0
    assert box_iou((5, 5, 5, 5), (5, 5, 5, 5)) == 1.0  # identical degenerate boxes


@settings(max_examples=100, deadline=None)
@given(st.lists(st.floats(-5, 5, allow_nan=False), min_size=12, max_size=12),
       st.lists(st.floats(-100, 100, allow_nan=False), min_size=2, max_size=2))
def test_compose_affine_applies_inner_then_outer(values, point) -> None:
    outer = np.array(values[:6]).reshape(2, 3)
    inner = np.array(values[6:]).reshape(2, 3)
    composed = compose_affine(outer, inner)
    assert not composed.flags.writeable
    np.testing.assert_allclose(apply_affine(composed, [point]),
                               apply_affine(outer, apply_affine(inner, [point])),
                               rtol=1e-9, atol=1e-6)


def test_mapped_extent_of_a_quarter_turn() -> None:
    turn = rotation_affine(90.0, 40, 20, 20, 40)  # counter-clockwise: (x, y) -> (y, 40 - x)
    assert mapped_extent(turn, (0, 0, 10, 5)) == (0.0, 30.0, 5.0, 40.0)


@settings(max_examples=300, deadline=None)
@given(st.integers(1, 600), st.integers(1, 600),
       st.one_of(st.floats(-720, 720, allow_nan=False), st.sampled_from([0, 90, 180, 270, -90,
                                                                         30, 45, 360, 450])))
def test_rotated_size_is_pillows_expanded_canvas(width: int, height: int, angle: float) -> None:
    """The rotate tool's canvas is the reference toolbox's (Pillow ``rotate(expand=True)``), so
    code mode's Pillow rotate and the tool make images of one shape."""
    from PIL import Image

    expected = Image.new("L", (width, height)).rotate(angle, expand=True).size
    assert rotated_size(angle, width, height) == expected


def test_rotated_size_by_hand() -> None:
    # 2487 x 1748 at 30 degrees: the extent is 3027.8 px wide but straddles pixel edges on both
    # sides, so Pillow's canvas (ceil of the right, floor of the left) is 3029
    assert rotated_size(30, 2487, 1748) == (3029, 2758)
    assert rotated_size(90, 2487, 1748) == (1748, 2487)
    assert rotated_size(-180, 5, 7) == (5, 7)
