"""The knowledge_count family: look up a team's kit colour, then count its players on the field."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.tasks import render as R
from m3gym.tasks.registry import make_task


def test_seed_0_by_hand() -> None:
    """Seed 0: the Titufar Falls Bisons wear purple; four purple players crowd the goal areas."""
    t = make_task("knowledge_count", 0)
    assert t.question == ("In this match photo, how many players inside the goal areas wear "
                          "the kit of the Titufar Falls Bisons?")
    assert t.answer.value == "4"
    assert t.metadata["kit_colour"] == "purple"
    assert t.metadata["colours"] == ["purple", "blue", "black"]
    assert t.metadata["counts"] == [4, 10, 4]
    assert [[c.name for c in step] for step in t.reference] == [
        ["web_search"], ["fetch_webpage"], ["crop", "crop"]]
    assert [ev.id for ev in t.evidence] == ["left_area", "right_area"]


def test_answer_counts_the_looked_up_kit_colour_in_the_goal_areas() -> None:
    for seed in range(10):
        t = make_task("knowledge_count", seed)
        m = t.metadata
        assert m["colours"][0] == m["kit_colour"]  # the team's own kit comes first
        assert t.answer.value == str(m["counts"][0])
        assert m["kit_colour"] not in t.question  # the colour must be looked up
        assert t.answer.value in t.choices and len(t.choices) == 6
        left, right = (ev.box for ev in t.evidence)
        assert left[2] < right[0]  # one goal area at each end
        assert [list(ev.box) for ev in t.evidence] == m["goal_areas"]
        marked = sum(int(ev.mask.any()) for ev in t.evidence)
        assert marked >= 1  # the counted players lie in the goal areas
        for call in t.reference[2]:  # each crop is zoomed onto its area
            assert call.name == "crop" and call.arguments["zoom_scale"] > 1.0


@settings(max_examples=100, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 60), st.integers(1, 60),
       st.lists(st.floats(0.0, 1.0), min_size=4, max_size=4))
def test_evidence_grays_its_area_as_graying_the_whole_scene_does(seed, h, w, corners) -> None:
    """The family grays only the goal areas of the scene; the whole scene grayed gives the same."""
    rng = np.random.default_rng(seed)
    scene = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    x0, x1 = sorted(int(c * (w - 1)) for c in corners[::2])
    y0, y1 = sorted(int(c * (h - 1)) for c in corners[1::2])
    x1, y1 = max(x1, x0 + 1), max(y1, y0 + 1)  # a goal area is never empty
    mask = rng.random((y1 - y0, x1 - x0)) < 0.3
    fast = R.region_evidence("area", scene, (x0, y0, x1, y1), mask, text=None, glyph_height=9.0)
    whole = R.region_evidence("area", R.to_gray(scene), (x0, y0, x1, y1), mask, text=None,
                              glyph_height=9.0)
    assert np.array_equal(fast.clean, whole.clean) and fast.clean.dtype == whole.clean.dtype
