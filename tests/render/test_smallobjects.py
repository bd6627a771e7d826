"""Small objects (m3gym.tasks.render.smallobjects): a car stays one colour blob; bay lines are
the pixels of one ``cv2.line`` each."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.agents.heuristic.counting import count_colour_blobs
from m3gym.tasks.render import smallobjects


def test_car_keeps_one_colour_blob() -> None:
    img = np.full((40, 60, 3), 80, np.uint8)
    smallobjects.draw_car(img, 10, 10, 15, 9, (206, 40, 40))
    assert count_colour_blobs(img, "red", 0.5 * 1.7 * 25, 1.6 * 1.7 * 100) == 1


def parking_lines_reference(img, rng, bounds, spacing, length, paint) -> None:
    """The original: one ``cv2.line`` and one scalar draw per bay line."""
    x0, y0, x1, y1 = bounds
    y = y0 + int(rng.integers(0, length))
    while y < y1:
        x = x0 + int(rng.integers(0, spacing))
        while x < x1:
            wear = float(rng.uniform(0.67, 1.0))
            shade = tuple(min(255, max(0, int(round(c * wear)))) for c in paint)
            cv2.line(img, (x, y), (x, min(y1, y + length)), shade, 2)
            x += spacing
        y += int(length * 2.2)


@settings(max_examples=150, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), h=st.integers(1, 90), w=st.integers(1, 120),
       bounds=st.tuples(st.integers(-10, 40), st.integers(-10, 40), st.integers(-5, 140),
                        st.integers(-5, 110)),
       spacing=st.integers(3, 30), length=st.integers(1, 30),
       paint=st.tuples(*[st.integers(0, 255)] * 3))
def test_parking_lines_equal_one_cv2_line_per_bay(seed, h, w, bounds, spacing, length, paint):
    base = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    fast, slow = base.copy(), base.copy()
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    smallobjects.draw_parking_lines(fast, a, bounds, spacing, length, paint)
    parking_lines_reference(slow, b, bounds, spacing, length, paint)
    np.testing.assert_array_equal(fast, slow)
    assert a.random() == b.random()  # the same draws were consumed


def test_parking_lines_refuse_a_spacing_at_which_lines_touch() -> None:
    with pytest.raises(ValueError, match="spacing"):
        smallobjects.draw_parking_lines(np.zeros((9, 9, 3), np.uint8), np.random.default_rng(0),
                                        (0, 0, 9, 9), 2, 4, (200, 200, 200))
