"""The README's example family passes check_family (so the example cannot rot)."""

from __future__ import annotations

from m3gym.tasks.registry import family_names, make_task
from m3gym.testing import check_family, registered


def test_example_family_passes_check_family() -> None:
    from examples.example_family import SerialPlateFamily

    with registered(SerialPlateFamily):
        assert "serial_plate" in family_names(level=1)
        check_family("serial_plate", quick=True)  # cross-process included: the child imports it
        easy, hard = make_task("serial_plate", 3, difficulty=0.0), \
            make_task("serial_plate", 3, difficulty=1.0)
        assert easy.evidence[0].glyph_height > hard.evidence[0].glyph_height
    assert "serial_plate" not in family_names(level=1)
