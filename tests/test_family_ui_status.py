"""ui_status: look-alike versions and counts, what each kind of question marks, Level 1."""

from __future__ import annotations

import numpy as np
import pytest

from m3gym.tasks.families import _document_common as dc
from m3gym.tasks.families.ui_status import UiStatus, version_text
from m3gym.tasks.registry import make_task


def test_version_text() -> None:
    assert version_text((4, 12, 3)) == "4.12.3"


def test_round_choices_share_the_tens() -> None:
    assert sorted(dc.round_choices(np.random.default_rng(0), 45)) == [
        "40", "43", "45", "46", "48", "49"]
    with pytest.raises(ValueError):
        dc.round_choices(np.random.default_rng(0), 47)
    rng = np.random.default_rng(1)
    assert all(dc.round_value(rng, 10, 99) % 10 in dc.ROUND_DIGITS for _ in range(50))


def test_one_crop_reads_the_marked_value() -> None:
    kinds = set()
    for task in (make_task("ui_status", seed) for seed in range(12)):
        kinds.add(task.metadata["kind"])
        assert task.level == 1 and [c.name for c in task.reference_calls] == ["crop"]
        ev = task.evidence[0]
        if task.metadata["kind"] == "battery":
            assert ev.text == f"{task.answer.value}%"
        elif task.metadata["kind"] == "version":
            assert ev.text == task.answer.value
            assert {c.rsplit(".", 1)[0] for c in task.choices} == {
                task.answer.value.rsplit(".", 1)[0]}
        assert task.answer.value not in task.question
    assert len(kinds) >= 3


def test_difficulty_and_validate() -> None:
    easy, hard = UiStatus.difficulty_knobs(0.0), UiStatus.difficulty_knobs(1.0)
    assert easy["glyph_range"][0] > hard["glyph_range"][1] and easy["apps"][1] < hard["apps"][0]
    with pytest.raises(ValueError):
        UiStatus(badges=(5, 5), apps=(3, 4)).validate()
