"""The clock_reading family: a small clock face read after a crop."""

from __future__ import annotations

import numpy as np

from m3gym.tasks.families.clock_reading import format_time, time_choices, time_variants


def test_time_helpers() -> None:
    assert format_time(3, 7) == "3:07"
    assert time_variants(3, 7) == ("03:07", "15:07")
    assert time_variants(12, 5) == ("0:05", "00:05")
    rng = np.random.default_rng(0)
    choices = time_choices(rng, 11, 58)
    assert "11:58" in choices and len(set(choices)) == 6
