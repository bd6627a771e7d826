"""Pitch drawing (m3gym.tasks.render.pitch): markings, and players the heuristic counts."""

from __future__ import annotations

import numpy as np
import pytest

from m3gym.agents.heuristic import lookup
from m3gym.tasks.render import pitch


def test_pitch_markings_are_symmetric() -> None:
    x0, y0, x1, y1, sx, sy = pitch.pitch_markings((100, 50, 1100, 650))
    assert (x0 + x1) / 2 == 600.0 and (y0 + y1) / 2 == 350.0
    assert sx == pytest.approx((x1 - x0) / 105.0) and sy == pytest.approx((y1 - y0) / 68.0)


@pytest.mark.parametrize("kit", ["red", "white", "black", "yellow"])
@pytest.mark.parametrize("size", [18, 22, 25])
def test_shirt_counter_counts_drawn_players(kit: str, size: int) -> None:
    rng = np.random.default_rng(size)
    img = np.full((300, 500, 3), (62, 128, 58), np.uint8)
    for x, y in [(20, 20), (80, 40), (200, 150), (400, 220), (300, 60)]:
        pitch.draw_player(img, x, y, size, lookup.KIT_RGB[kit], rng)
    assert lookup.shirt_count(img, kit, 1.0) == 5
