"""The tiny_faint_text family: a tiny, faded label read after one zoomed crop."""

from __future__ import annotations

from m3gym.scoring.checkpoints import measure_evidence
from m3gym.tasks.registry import make_task
from tests.family_helpers import replay


def test_seed_0_by_hand() -> None:
    """Seed 0, checked by eye on the rendered image: the BATCH code of a green-tab label."""
    t = make_task("tiny_faint_text", 0)
    assert t.answer.value == "M77-H4H"
    assert t.choices == ("M77-H5H", "M77-H4N", "M77-H5N", "M77-H9H", "M77-H4H", "M77-H9N")
    assert t.metadata["target_field"] == "BATCH" and t.metadata["rotated"] is False
    assert [[c.name for c in step] for step in t.reference] == [["crop"]]
    (ev,) = t.evidence
    assert ev.text == "M77-H4H" and ev.box == (405.0, 330.0, 477.0, 348.0)
    assert "top-left" in t.question and "green tab" in t.question


def test_answer_is_the_drawn_code_among_same_shaped_lookalikes() -> None:
    for seed in range(12):
        t = make_task("tiny_faint_text", seed)
        (ev,) = t.evidence
        assert ev.text == t.answer.value and ev.angle == 0.0
        assert f"{t.metadata['target_field']} code" in t.question
        shape = ["-" if ch == "-" else "d" if ch.isdigit() else "a" for ch in t.answer.value]
        for choice in t.choices:
            assert ["-" if ch == "-" else "d" if ch.isdigit() else "a" for ch in choice] == shape
        # faded ink (far under fresh ink's ~200 levels), legible once zoomed: one crop, no
        # contrast op and no rotation in the reference
        assert 56.0 <= t.metadata["ink_contrast"] <= 120.0
        assert [[c.name for c in s] for s in t.reference] == [["crop"]]


def test_the_crop_alone_shows_the_code_and_the_view_does_not() -> None:
    for difficulty in (0.0, 1.0):
        for seed in range(6):
            t = make_task("tiny_faint_text", seed, difficulty=difficulty)
            state, _ = replay(t)
            (ev,) = t.evidence
            assert not measure_evidence(state[0], ev).passed
            assert measure_evidence(state[1], ev).passed, (difficulty, seed)
