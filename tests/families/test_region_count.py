"""The region_count family: count the objects of one colour inside a marked zone."""

from __future__ import annotations

from m3gym.tasks.registry import make_task


def test_seed_0_by_hand() -> None:
    """Seed 0: six yellow cars in the cyan dashed parking zone; one zoomed crop."""
    t = make_task("region_count", 0)
    assert t.answer.value == "6" and t.metadata["target"] == "yellow"
    assert "yellow cars" in t.question and "cyan dashed parking zone" in t.question
    assert t.choices == ("6", "11", "10", "8", "9", "7")
    assert [[c.name for c in step] for step in t.reference] == [["crop"]]


def test_choices_are_six_consecutive_counts_around_the_answer() -> None:
    for seed in range(12):
        t = make_task("region_count", seed)
        values = sorted(int(c) for c in t.choices)
        assert values == list(range(values[0], values[0] + 6))
        assert int(t.answer.value) in values
        assert t.metadata["target"] in t.question
        (ev,) = t.evidence
        x0, y0, x1, y1 = ev.box
        h, w = t.images[0].shape[:2]
        assert 0 <= x0 < x1 <= w and 0 <= y0 < y1 <= h
