"""ui_status: look-alike versions and counts, what each kind of question marks, Level 1."""

from __future__ import annotations

import numpy as np
import pytest

from m3gym.tasks.families import _document_common as dc
from m3gym.tasks.families.ui_status import UiStatusFamily, version_text
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
    for task in (make_task("ui_status", seed) for seed in range(16)):
        kinds.add(task.metadata["kind"])
        assert task.level == 1 and [c.name for c in task.reference_calls] == ["crop"]
        ev = task.evidence[0]
        if task.metadata["kind"] == "battery":
            assert ev.text == f"{task.answer.value}%"
        elif task.metadata["kind"] == "version":
            assert ev.text == task.answer.value
            # the options share the major and the minor's tens; the minor's last digit and the
            # patch are closed digits
            major, minor, _ = task.answer.value.split(".")
            assert {c.split(".")[0] for c in task.choices} == {major}
            assert {c.split(".")[1][:-1] for c in task.choices} == {minor[:-1]}
            assert all(c.split(".")[1][-1] in "068" and c.split(".")[2] in "068"
                       for c in task.choices) and len(set(task.choices)) == 6
        elif task.metadata["kind"] == "badge":
            # four digits; the options differ only in the middle two (closed digits)
            assert len(task.answer.value) == 4 and len(set(task.choices)) == 6
            assert {c[0] + c[-1] for c in task.choices} == {task.answer.value[0]
                                                           + task.answer.value[-1]}
            assert all(c[1] in "068" and c[2] in "068" for c in task.choices)
        assert task.answer.value not in task.question
    assert kinds == {"battery", "setting", "version", "badge"}


def test_difficulty_and_validate() -> None:
    easy, hard = UiStatusFamily.difficulty_knobs(0.0), UiStatusFamily.difficulty_knobs(1.0)
    assert easy["glyph_range"][0] > hard["glyph_range"][1] and easy["apps"][1] < hard["apps"][0]
    with pytest.raises(ValueError):
        UiStatusFamily(badges=(5, 5), apps=(3, 4)).validate()


def test_battery_icon_shows_only_the_tens() -> None:
    # a battery question's options share their tens, so the icon must not tell them apart
    from m3gym.tasks.render import ui

    def icon(level: int) -> np.ndarray:
        img = np.full((40, 60, 3), 246, np.uint8)
        ui.battery_icon(img, 5, 5, 14.0, level)
        return img

    assert all(np.array_equal(icon(60), icon(level)) for level in (63, 65, 66, 68, 69))
    assert not np.array_equal(icon(60), icon(70))
    assert icon(90).astype(int).sum() < icon(30).astype(int).sum()  # more dark fill
