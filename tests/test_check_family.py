"""check_family on every registered family, and on broken toy families (so the checker can fail)."""

from __future__ import annotations

import importlib
import os
import re

import pytest

from m3gym.agents import ocr
from m3gym.tasks.registry import family_names, get_family
from m3gym.testing import (
    DOCSTRING_SECTIONS,
    MONOTONE_OCR,
    FamilyCheckError,
    bad_config_probes,
    check_cross_process,
    check_cross_process_triples,
    check_family,
    check_monotone,
    check_probes,
    docstring_sections,
    frozen_split_levels,
    probe_bound,
    registered,
)

FAMILIES = family_names(suite=None)


@pytest.fixture(autouse=True)
def no_registry_leak():
    """No test of this module leaves a family registered (level envs draw from the registry)."""
    before = family_names(suite=None)
    yield
    assert family_names(suite=None) == before
MONOTONE_EPISODES = int(os.environ.get("M3GYM_MONOTONE_EPISODES", "6"))
"""Heuristic episodes per end of the difficulty range (the heuristic dominates the test's time)."""


@pytest.mark.parametrize("family", FAMILIES)
def test_check_family(family: str) -> None:
    """Every registered family (all suites) keeps every guarantee (quick sample) but monotonicity."""
    check_family(family, quick=True, cross_process=False, monotone_episodes=0, probes=0)


@pytest.mark.skipif(not ocr.tesseract_available(),
                    reason="the difficulty-monotone check measures the heuristic agent with "
                           "Tesseract OCR (MONOTONE_OCR), which is not installed "
                           "(apt-get install tesseract-ocr)")
@pytest.mark.parametrize("family", FAMILIES)
def test_difficulty_is_monotone(family: str) -> None:
    """The heuristic (reading with Tesseract) does not do better at difficulty 1 than at 0."""
    assert MONOTONE_OCR == "tesseract"
    check_monotone(family, range(MONOTONE_EPISODES))


def test_monotone_check_refuses_an_absent_backend(monkeypatch, tmp_path) -> None:
    """Without Tesseract the check says so; it never silently measures another reader."""
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ocr.OcrUnavailable, match="apt-get install tesseract-ocr"):
        check_monotone("tiny_text", range(2))


def test_check_family_skips_the_monotone_check_without_tesseract(monkeypatch, tmp_path) -> None:
    """An absent optional reader never fails check_family: the check is skipped, and said so."""
    monkeypatch.setenv("PATH", str(tmp_path))
    report = check_family("glyph_zoom", seeds=[0], cross_process=False, monotone_episodes=2,
                          probes=0)
    assert len(report.skipped) == 1
    assert report.skipped[0].startswith("monotone difficulty: the tesseract OCR backend")
    assert "apt-get install tesseract-ocr" in report.skipped[0]
    lines = report.lines()
    assert lines[0] == "glyph_zoom: every check run passed (1 skipped)"
    assert f"skipped: {report.skipped[0]}" in lines
    # nothing asked of the reader: nothing skipped
    quiet = check_family("glyph_zoom", seeds=[0], cross_process=False, monotone_episodes=0,
                         probes=0)
    assert quiet.skipped == () and quiet.lines()[0] == "glyph_zoom: every check passed"


def test_forced_backend_is_what_the_agent_reads_with(monkeypatch, tmp_path) -> None:
    with ocr.forced_ocr_backend("glyph") as backend:
        assert backend == "glyph" == ocr.ocr_backend()
    monkeypatch.setenv(ocr.OCR_ENV, "glyph")
    assert ocr.ocr_backend() == "glyph"
    monkeypatch.setenv(ocr.OCR_ENV, "bogus")
    with pytest.raises(ValueError, match="M3GYM_OCR"):
        ocr.ocr_backend()
    monkeypatch.setenv(ocr.OCR_ENV, "tesseract")
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(ocr.OcrUnavailable):
        ocr.ocr_backend()


def test_every_family_is_deterministic_across_processes() -> None:
    """One fresh interpreter rebuilds seed 0 of every family (at difficulty 1 where knobbed)."""
    triples: list[tuple[str, int, float | None]] = [(f, 0, None) for f in FAMILIES]
    for f in FAMILIES:
        try:
            get_family(f).difficulty_knobs(1.0)
        except NotImplementedError:
            continue  # test_check_family reports the missing knobs
        triples.append((f, 1, 1.0))
    check_cross_process_triples(triples)


# ------------------------------------------------------------------------------ toy families


@pytest.fixture(scope="module")
def toys():
    """The toy families, registered for this module only."""
    module = importlib.import_module("tests.toy_families")
    with registered(*module.ALL):
        yield module


def _fails(name: str, check: str, **kwargs) -> str:
    kwargs = {"seeds": [0], "cross_process": False, "monotone_episodes": 0, "probes": 0,
              **kwargs}
    with pytest.raises(FamilyCheckError) as err:
        check_family(name, **kwargs)
    message = str(err.value)
    assert message.startswith(f"check_family({name!r}) [{check}]"), message
    return message


def test_nondeterministic_family_fails(toys) -> None:
    assert "two builds of the same task differ" in _fails("toy_nondeterministic", "determinism")
    assert "question differs" in _fails("toy_nondeterministic", "determinism")


def test_hash_seeded_family_fails_only_across_processes(toys) -> None:
    check_family("toy_hash_seeded", seeds=[0], cross_process=False, monotone_episodes=0,
                 probes=0)
    with pytest.raises(FamilyCheckError, match=r"\[determinism\].*fresh process"):
        check_cross_process(["toy_hash_seeded"], seeds=(0,))


def test_bad_oracle_fails(toys) -> None:
    message = _fails("toy_bad_oracle", "oracle")
    assert "'acc': 1.0" in message and "'S': 0.0" in message


def test_missing_docstring_section_fails(toys) -> None:
    assert "lacks section(s) ['Difficulty']" in _fails("toy_missing_doc", "docstring")


def test_lax_validate_fails(toys) -> None:
    message = _fails("toy_lax_validate", "validate")
    assert "(**{'width': -1}).validate() accepted a bad config (negative width)" in message


def test_missing_knobs_fail(toys) -> None:
    assert "difficulty_knobs is not implemented" in _fails("toy_no_knobs", "difficulty")


def test_duplicate_choices_fail(toys) -> None:
    assert "duplicate choices" in _fails("toy_duplicate_choices", "choices")


def test_seed_that_changes_nothing_fails(toys) -> None:
    message = _fails("toy_seedless", "determinism", seeds=[0, 1])
    assert "seeds 0 and 1, difficulty None: the same task" in message


def test_evidence_mask_of_the_wrong_size_fails(toys) -> None:
    assert "evidence 'code' mask has shape" in _fails("toy_bad_mask", "task")


def test_evidence_legible_without_tools_fails(toys) -> None:
    assert "already legible in input image 0" in _fails("toy_legible", "tool needed")


def test_monotone_check_fails_when_hard_is_easier(monkeypatch) -> None:
    import m3gym.testing.monotone as monotone

    monkeypatch.setattr(monotone, "heuristic_accuracy",
                        lambda name, d, seeds, ocr: {0.0: 0.25, 1.0: 0.75}[d])
    with pytest.raises(FamilyCheckError, match=r"\[monotone\].*0.25 at 0 vs 0.75 at 1"):
        check_monotone("tiny_text", range(12))
    monkeypatch.setattr(monotone, "heuristic_accuracy",
                        lambda name, d, seeds, ocr: {0.0: 0.25, 1.0: 0.5}[d])
    assert check_monotone("tiny_text", range(12)) == (0.25, 0.5)  # within the tolerance


# ------------------------------------------------------------------------------ helpers


def test_docstring_sections_reads_google_style_headers() -> None:
    doc = """Title line.

    Scene:
        text
    Question:
        text
    Not a header: inline text
    Config:
    Difficulty:
        text
    """
    assert docstring_sections(doc) == ["Scene", "Question", "Difficulty"]
    full = "Title.\n\n" + "".join(f"{s}:\n    body\n" for s in DOCSTRING_SECTIONS)
    assert docstring_sections(full) == list(DOCSTRING_SECTIONS)


def test_bad_config_probes_of_the_example_family() -> None:
    from examples.example_family import SerialPlateFamily

    with registered(SerialPlateFamily):  # importing it registered it: undone on exit
        assert bad_config_probes(SerialPlateFamily) == [
            ("negative width", {"width": -1}),
            ("negative height", {"height": -1}),
            ("reversed range glyph_range", {"glyph_range": (8.0, 6.0)}),
            ("reversed range clutter", {"clutter": (8, 4)}),
        ]


def test_bad_config_probes_leave_size_pairs_alone() -> None:
    from dataclasses import dataclass

    from m3gym.tasks.registry import FamilyConfig

    @dataclass
    class Pairs(FamilyConfig):
        image_size: tuple[int, int] = (1200, 1600)
        size_range: tuple[int, int] = (4, 9)
        mode: str = "a"

    assert bad_config_probes(Pairs) == [("reversed range size_range", {"size_range": (9, 4)})]


def test_registered_restores_the_registry_and_nests() -> None:
    from examples.example_family import SerialPlateFamily  # importing registers it
    from m3gym.testing import _HELD

    held = _HELD[SerialPlateFamily] > 0  # a module fixture (the toys) may hold it already
    with registered(SerialPlateFamily):
        with registered(SerialPlateFamily):
            assert "serial_plate" in family_names(level=1)
        assert "serial_plate" in family_names(level=1)  # the outer block still holds it
    assert ("serial_plate" in family_names(level=1)) == held


# ------------------------------------------------------------------------------ leak probes


@pytest.mark.slow
@pytest.mark.parametrize("family", FAMILIES)
def test_leak_probes_on_a_small_sample(family: str) -> None:
    """Every family passes check_family's leak probes (24 tasks each; about 4 minutes for all).

    A view-only miss of a family whose tool adds nothing to the view would be structural (a
    warning, not a failure); since benchmark v4 no family is one (tests/test_choice_leak.py's
    VIEW_LEAKS_KNOWN is empty).
    """
    if getattr(get_family(family), "suite", None) == "records":
        pytest.skip("the records suite is built from user data files (tests/records/)")
    checks = check_probes(family)
    assert [c.result.probe for c in checks] == ["choices-only", "view-only"]
    for c in checks:
        assert c.passes or c.structural, c.line()


def test_probe_bound_is_the_audit_noise_bound_or_its_target() -> None:
    """Small samples: chance + 3.09 s.d. (the audit's noise bound); large ones: chance + margin."""
    assert probe_bound(1 / 6, 24, 0.05) == pytest.approx(0.401731, abs=1e-6)
    assert probe_bound(1 / 6, 100_000, 0.05) == pytest.approx(1 / 6 + 0.05)
    assert probe_bound(0.5, 24, 0.03) == pytest.approx(0.815372, abs=1e-6)


def test_view_leaky_family_fails_the_view_only_probe(toys) -> None:
    """The old example: illegible at view size by the glyph bar, yet read by template matching."""
    message = _fails("toy_view_leak", "view-only", probes=24)
    assert re.search(r"the view-only probe picks the answer in (\d+) of 24 held-out tasks "
                     r"\((0\.\d{3})\), above the bound 0\.402 \(chance 0\.167, n = 24\): the "
                     r"answer can be read from the view without a tool; `m3gym audit-leaks "
                     r"--family toy_view_leak` measures it on a larger sample", message), message
    hits = int(re.search(r"picks the answer in (\d+) of 24", message).group(1))
    assert hits >= 15  # about 0.8 of the tasks (the bound is 9.6 of 24)


def test_negative_probe_count_is_refused(toys) -> None:
    with pytest.raises(ValueError, match=r"probes must be >= 0 \(0 skips the leak probes\), got -1"):
        check_family("toy_view_leak", seeds=[0], probes=-1)


def test_report_names_the_frozen_split_levels() -> None:
    """A frozen family's report names its level; the probes are skipped with ``probes=0``."""
    report = check_family("tiny_text", seeds=[0], quick=True, cross_process=False,
                          monotone_episodes=0, probes=0)
    assert report.frozen_levels == (1,) and report.probes == () and report.warnings == []
    assert report.lines() == ["tiny_text: every check passed", "frozen 'test' split: level 1"]
    assert frozen_split_levels("code_lookup") == (3,)
    assert frozen_split_levels("glyph_zoom") == ()  # the classic suite is in no frozen level


def test_a_family_outside_the_frozen_split_gets_a_warning_not_a_failure(toys) -> None:
    report = check_family("toy_view_leak", seeds=[0], quick=True, cross_process=False,
                          monotone_episodes=0, probes=0)
    assert report.frozen_levels == ()
    assert report.lines()[1] == "frozen 'test' split: not in any level"
    assert report.warnings == [
        "warning: 'toy_view_leak' is in no level of the frozen 'test' split "
        "(m3gym/data/splits/test.json), so frozen evaluations never draw it; a new family joins "
        "it only with a new manifest version"]


def test_cli_refuses_unknown_families_and_modules(capsys) -> None:
    from m3gym.testing import main

    with pytest.raises(SystemExit) as exit_info:
        main(["no_such_family", "--probes", "0"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert "error: unknown family 'no_such_family'; known: chart_value, " in err
    assert "(a family outside m3gym needs --import MODULE)" in err
    with pytest.raises(SystemExit):
        main(["tiny_text", "--import", "examples.no_such_module"])
    assert "error: --import examples.no_such_module: No module named 'examples.no_such_module'" \
        in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["tiny_text", "--probes", "-3"])
    assert "error: --probes must be >= 0 (0 skips the leak probes), got -3" in \
        capsys.readouterr().err

