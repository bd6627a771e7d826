"""Small objects (m3gym.tasks.render.smallobjects): a car stays one colour blob."""

from __future__ import annotations

import numpy as np

from m3gym.agents.heuristic.counting import count_colour_blobs
from m3gym.tasks.render import smallobjects


def test_car_keeps_one_colour_blob() -> None:
    img = np.full((40, 60, 3), 80, np.uint8)
    smallobjects.draw_car(img, 10, 10, 15, 9, (206, 40, 40))
    assert count_colour_blobs(img, "red", 0.5 * 1.7 * 25, 1.6 * 1.7 * 100) == 1
