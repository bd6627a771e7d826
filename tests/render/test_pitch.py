"""Pitch drawing (m3gym.tasks.render.pitch): the markings."""

from __future__ import annotations

import pytest

from m3gym.tasks.render import pitch


def test_pitch_markings_are_symmetric() -> None:
    x0, y0, x1, y1, sx, sy = pitch.pitch_markings((100, 50, 1100, 650))
    assert (x0 + x1) / 2 == 600.0 and (y0 + y1) / 2 == 350.0
    assert sx == pytest.approx((x1 - x0) / 105.0) and sy == pytest.approx((y1 - y0) / 68.0)
