"""The tiny_faint_text family: a tiny, faded label read after a crop, [a rotation] and autocontrast."""

from __future__ import annotations

from m3gym.tasks.registry import make_task


def test_seed_0_by_hand() -> None:
    """Seed 0, checked by eye on the rendered image: the PN code of a turned cyan-tab label."""
    t = make_task("tiny_faint_text", 0)
    assert t.answer.value == "WK-6H2"
    assert t.choices == ("WK-6H2", "WK-5M2", "WK-6N2", "WK-6M2", "WK-5N2", "WK-5H2")
    assert t.metadata["target_field"] == "PN" and t.metadata["rotated"] is True
    assert [[c.name for c in step] for step in t.reference] == [["crop"], ["rotate"],
                                                                ["autocontrast"]]
    (ev,) = t.evidence
    assert ev.text == "WK-6H2" and ev.box == (626.0, 1717.0, 642.0, 1769.0)


def test_answer_is_the_drawn_code_among_same_shaped_lookalikes() -> None:
    for seed in range(12):
        t = make_task("tiny_faint_text", seed)
        (ev,) = t.evidence
        assert ev.text == t.answer.value
        assert f"{t.metadata['target_field']} code" in t.question
        shape = ["-" if ch == "-" else "d" if ch.isdigit() else "a" for ch in t.answer.value]
        for choice in t.choices:
            assert ["-" if ch == "-" else "d" if ch.isdigit() else "a" for ch in choice] == shape
        # a faded label: its ink only a few gray levels from its plate, a contrast op in the chain
        assert 4.0 <= t.metadata["ink_contrast"] <= 20.0
        assert t.reference[-1][0].name == "autocontrast"
        assert ("rotate" in [c.name for s in t.reference for c in s]) == t.metadata["rotated"]
