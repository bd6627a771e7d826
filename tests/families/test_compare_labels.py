"""The compare_labels family: which of two small labelled gauges reads higher (parallel crops)."""

from __future__ import annotations

from m3gym.tasks.registry import make_task


def test_seed_0_by_hand() -> None:
    """Seed 0: the gauges read 84 and 79 (the higher one is labelled COOLANT)."""
    t = make_task("compare_labels", 0)
    assert t.answer.value == "COOLANT"
    assert t.choices == ("FAN 2", "COOLANT")
    assert t.metadata["readings"] == [84.0, 79.0]
    assert "FAN 2" in t.question and "COOLANT" in t.question
    assert [[c.name for c in step] for step in t.reference] == [["crop", "crop"]]


def test_the_two_labels_are_the_choices_and_the_readings_differ() -> None:
    for seed in range(12):
        t = make_task("compare_labels", seed)
        assert len(t.choices) == 2 and t.answer.value in t.choices
        assert all(c in t.question for c in t.choices)
        va, vb = t.metadata["readings"]
        assert va != vb
        assert [ev.id for ev in t.evidence] == ["gauge_a", "gauge_b"]
        assert len(t.reference[0]) == 2  # both gauges cropped in one parallel step
