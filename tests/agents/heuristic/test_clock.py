"""The clock (m3gym.agents.heuristic.clock): hands read on a rendered, tilted clock."""

from __future__ import annotations

import cv2
import pytest

from m3gym.agents.heuristic import clock, dials
from m3gym.tasks.families import _scene_common as c2
from m3gym.tasks.families.clock_reading import clock_strokes


@pytest.mark.parametrize(("hour", "minute", "tilt"), [(9, 24, 0.0), (2, 49, 90.0),
                                                      (12, 5, -135.0), (6, 31, 40.0)])
def test_clock_hands_read_a_rendered_tilted_clock(hour: int, minute: int, tilt: float) -> None:
    radius, size = 190.0, 420
    dial = c2.render_dial(size, radius, (245, 245, 240), (90, 90, 90), radius / 10,
                          clock_strokes(hour, minute, radius, (30, 30, 40), (20, 10, 10)), tilt,
                          (60, 140, 70), marker=(0.0, (206, 40, 40)), cap=(20, 10, 10))
    rgb = dial.rgb
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    guess = dials.Circle(size / 2 + 6, size / 2 - 5, radius * 0.9)
    found = dials.tick_radius(gray, dials.tick_centre(gray, dials.tick_radius(gray, guess, 0.78)), 0.78)
    hands = clock.clock_hands(rgb, found)
    assert hands is not None
    assert clock.clock_time(*hands) == (hour, minute)
