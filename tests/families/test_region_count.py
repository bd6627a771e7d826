"""The region_count family: count the objects of one colour inside a marked zone."""

from __future__ import annotations

from m3gym.tasks.registry import make_task


def test_seed_0_by_hand() -> None:
    """Seed 0: seven yellow cars in the cyan dashed parking zone."""
    t = make_task("region_count", 0)
    assert t.answer.value == "7" and t.metadata["target"] == "yellow"
    assert "yellow cars" in t.question and "cyan dashed parking zone" in t.question
    assert t.choices == ("10", "8", "6", "9", "11", "7")
    assert [[c.name for c in step] for step in t.reference] == [["crop"], ["autocontrast"]]


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
