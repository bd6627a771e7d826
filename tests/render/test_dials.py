"""Dial drawing (m3gym.tasks.render.dials): bezel shading and drop shadows."""

from __future__ import annotations

import numpy as np
import pytest

from m3gym.tasks.render import dials


def test_bezel_shading_is_neutral_at_zero_and_lit_top_left() -> None:
    assert np.array_equal(dials.bezel_shading(40, 18.0, 3.0, 0.0), np.ones((40, 40), np.float32))
    s = dials.bezel_shading(40, 18.0, 3.0, 0.4)
    # outer half of the rim: brighter towards the top-left light, darker bottom-right
    assert s[7, 7] > 1.0 > s[32, 32]
    assert s[20, 20] == pytest.approx(1.0)  # the face's centre is untouched
    assert s[0, 0] == 1.0  # outside the dial


def test_drop_shadow_darkens_only_below_right() -> None:
    img = np.full((60, 60, 3), 200, np.uint8)
    dials.drop_shadow(img, (30.0, 30.0), 10.0, (3.0, 4.0), 1.5, 0.5)
    assert img[34, 33, 0] == 100  # inside the shifted disk: 200 * (1 - 0.5)
    assert img[5, 5, 0] == 200
