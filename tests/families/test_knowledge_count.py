"""The knowledge_count family: look up a team's kit colour, then count its players on the field."""

from __future__ import annotations

from m3gym.tasks.registry import make_task


def test_seed_0_by_hand() -> None:
    """Seed 0: the Titufar Falls Bisons wear purple; eight purple players are on the field."""
    t = make_task("knowledge_count", 0)
    assert t.question == "Count the Titufar Falls Bisons players visible on the field."
    assert t.answer.value == "8"
    assert t.metadata["kit_colour"] == "purple"
    assert t.metadata["colours"] == ["purple", "blue", "black"]
    assert t.metadata["counts"] == [8, 4, 3]
    assert [[c.name for c in step] for step in t.reference] == [
        ["web_search"], ["fetch_webpage"], ["crop", "crop"]]
    assert [ev.id for ev in t.evidence] == ["left_half", "right_half"]


def test_answer_counts_the_looked_up_kit_colour() -> None:
    for seed in range(10):
        t = make_task("knowledge_count", seed)
        m = t.metadata
        assert m["colours"][0] == m["kit_colour"]  # the team's own kit comes first
        assert t.answer.value == str(m["counts"][0])
        assert m["kit_colour"] not in t.question  # the colour must be looked up
        assert t.answer.value in t.choices and len(t.choices) == 6
        left, right = (ev.box for ev in t.evidence)
        assert left[2] == right[0]  # the two crops split the field between them
