"""Grid periods (m3gym.agents.heuristic.grid): rows, columns and objects of a pattern."""

from __future__ import annotations

import cv2
import numpy as np

from m3gym.agents.heuristic.grid import count_runs, grid_shape


def test_grid_shape_counts_rows_and_columns() -> None:
    img = np.zeros((300, 500), np.uint8)
    for r in range(4):
        for c in range(7):
            img[20 + r * 70:60 + r * 70, 15 + c * 70:45 + c * 70] = 255
    assert grid_shape(img) == (4, 7, 28)
    assert grid_shape(255 - img) == (4, 7, 28)  # the objects are the alike blobs either way
    assert count_runs(np.array([0, 1, 1, 0, 1, 0, 0, 1], np.float32)) == 3


def test_grid_shape_ignores_surroundings_and_survives_a_roll() -> None:
    """A border-touching bench, a label's thin strokes and a 3° roll leave 3 x 5 countable."""

    img = np.zeros((400, 600), np.uint8)
    img[:, :40] = 255  # the bench at the left edge
    cv2.line(img, (60, 360), (200, 360), 255, 2)  # a printed line under the grid
    rot = cv2.getRotationMatrix2D((300.0, 200.0), 3.0, 1.0)
    for r in range(3):
        for c in range(5):
            x, y = rot @ np.array([150.0 + c * 80, 100.0 + r * 90, 1.0])
            cv2.circle(img, (int(round(x)), int(round(y))), 22, 255, -1)
    assert grid_shape(img) == (3, 5, 15)
