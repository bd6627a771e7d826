"""The contributing guide's example family passes check_family (so the example cannot rot)."""

from __future__ import annotations

from pathlib import Path

from m3gym.tasks.registry import family_names, make_task
from m3gym.testing import check_family, registered


def test_example_family_passes_check_family() -> None:
    from examples.example_family import SerialPlateFamily

    with registered(SerialPlateFamily):
        assert "serial_plate" in family_names(level=1)
        # cross-process included (the child imports it), and the leak probes (24 tasks each)
        report = check_family("serial_plate", quick=True)
        assert [p.result.probe for p in report.probes] == ["choices-only", "view-only"]
        assert all(p.passes and p.result.n == 24 for p in report.probes), report.lines()
        assert report.frozen_levels == ()  # a new family: a warning line, not a failure
        # the monotone check reads with Tesseract: without it, skipped with the reason, not raised
        from m3gym.agents.ocr import tesseract_available

        assert bool(report.skipped) != tesseract_available(), report.skipped
        assert all("apt-get install tesseract-ocr" in s for s in report.skipped)
        assert report.warnings[0].startswith("warning: 'serial_plate' is in no level of the "
                                             "frozen 'test' split")
        easy, hard = make_task("serial_plate", 3, difficulty=0.0), \
            make_task("serial_plate", 3, difficulty=1.0)
        assert easy.evidence[0].glyph_height > hard.evidence[0].glyph_height
    assert "serial_plate" not in family_names(level=1)


def test_contributing_guide_lists_the_example_file_verbatim() -> None:
    root = Path(__file__).resolve().parents[1]
    guide = (root / "docs" / "contributing.md").read_text()
    section = guide.split("## Write a new family", 1)[1].split("\n## ", 1)[0]
    listing = section.split("```python\n", 1)[1].split("```", 1)[0]
    source = (root / "examples" / "example_family.py").read_text()
    code = source.split('"""', 2)[2].lstrip("\n")
    assert listing == code
