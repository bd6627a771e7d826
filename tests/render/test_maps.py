"""Map drawing (m3gym.tasks.render.maps): the legend measures what it draws."""

from __future__ import annotations

import numpy as np

from m3gym.tasks.render import maps


def test_legend_size_matches_drawing() -> None:
    entries = (("area", (150, 200, 140), "Park"), ("dot", (214, 36, 36), "Pin"))
    size = maps.legend_size(entries, 8.0)
    img = np.zeros((80, 300, 3), np.uint8)
    box = maps.draw_legend(img, (5, 6), entries, 8.0, (40, 40, 48))
    assert (box[2] - box[0], box[3] - box[1]) == size
    assert img[6 + 1, 5 + 1].tolist() == [250, 250, 248]
