"""The knowledge_count family: look up a team's kit colour, then count its players on the field."""

from __future__ import annotations

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
