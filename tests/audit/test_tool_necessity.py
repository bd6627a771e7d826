"""The tool-necessity measurements: the share, the per-op ablation, the readers, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from types import SimpleNamespace

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.audit.readers import (
    choice_credit,
    evidence_window,
    key_read,
    latin_text,
    make_reader,
    rapidocr_available,
    read_task,
    reader_variants,
)
from m3gym.audit.tool_necessity import (
    KNOWN_BELOW_LINE,
    KNOWN_REASON,
    SHARE_LINE,
    OpAblation,
    aggregate_ops,
    family_necessity,
    op_ablations,
    replay_calls,
    share_check,
    task_share,
    unexplained_share,
    upsampled_view,
)
from m3gym.spec import AnswerSpec, Evidence, RefCall, Task

VIEW = 256


def toy_task(image: np.ndarray, box: tuple[int, int, int, int],
             reference: tuple[tuple[RefCall, ...], ...], text: str | None = None) -> Task:
    """Return a minimal task: one image, one evidence box, the given reference."""
    return Task(task_id="toy/0", family="toy", level=1, domain="Science", images=(image,),
                question="?", answer=AnswerSpec("x"), reference=reference,
                evidence=(Evidence("ev", 0, tuple(float(v) for v in box), text=text),))


def smooth_image(size: int = 1024) -> np.ndarray:
    """Return a smooth RGB gradient (its view, upsampled, explains it almost exactly)."""
    y, x = np.mgrid[0:size, 0:size].astype(np.float64)
    g = 40 + 150 * (0.5 + 0.5 * np.sin(x / 170.0) * np.cos(y / 230.0))
    return np.repeat(g[..., None], 3, axis=2).astype(np.uint8)


def stripes_image(size: int = 1024) -> np.ndarray:
    """Return flat paper with 1-px stripes in a 64-px square: the view averages them away."""
    img = np.full((size, size, 3), 128, np.uint8)
    img[400:464, 400:464:2] = 140
    img[400:464, 401:464:2] = 116
    return img


def crop_box(box: tuple[int, int, int, int], size: int) -> list[int]:
    """Return ``box`` on the tools' 0-1000 scale, grown by a little."""
    x0, y0, x1, y1 = box
    return [int((x0 - 8) * 1000 / size), int((y0 - 8) * 1000 / size),
            int((x1 + 8) * 1000 / size) + 1, int((y1 + 8) * 1000 / size) + 1]


CROP = RefCall("c1", "crop", {"image_index": 0, "bbox_2d": crop_box((400, 400, 464, 464), 1024),
                              "zoom_scale": 4.0})
STRETCH = RefCall("c2", "autocontrast", {"image_index": 1}, depends_on=("c1",))


# ------------------------------------------------------------------------------ the measure


@settings(max_examples=30, deadline=None)
@given(a=st.floats(0.2, 3.0), b=st.floats(-40, 40), seed=st.integers(0, 2**16))
def test_an_affine_map_of_the_replay_explains_everything(a: float, b: float, seed: int) -> None:
    replay = np.random.default_rng(seed).uniform(0, 100, (20, 30, 3))
    assert unexplained_share(a * replay + b, replay) == pytest.approx(0.0, abs=1e-9)


@settings(max_examples=20, deadline=None)
@given(seed=st.integers(0, 2**16))
def test_independent_noise_is_unexplained(seed: int) -> None:
    rng = np.random.default_rng(seed)
    real, replay = rng.normal(size=(64, 64)), rng.normal(size=(64, 64))
    assert unexplained_share(real, replay) > 0.9


def test_flat_real_has_nothing_to_explain_and_shapes_must_agree() -> None:
    assert unexplained_share(np.full((8, 8), 7.0), np.arange(64.0).reshape(8, 8)) == 0.0
    with pytest.raises(ValueError, match="shapes differ"):
        unexplained_share(np.zeros((4, 4)), np.zeros((4, 5)))


def test_upsampled_view_has_the_image_size() -> None:
    img = smooth_image(1000)
    assert upsampled_view(img, VIEW).shape == img.shape
    small = img[:100, :200]
    assert np.array_equal(upsampled_view(small, VIEW), small)  # already within the view


def test_share_is_near_zero_for_an_identity_pipeline_on_a_smooth_image() -> None:
    box = (300, 300, 700, 700)
    same = RefCall("c1", "crop", {"image_index": 0, "bbox_2d": [0, 0, 1000, 1000]})
    task = toy_task(smooth_image(), box, ((same,),))
    assert task_share(task, VIEW) < 0.02


def test_share_is_near_one_when_the_tool_shows_detail_the_view_rounded_away() -> None:
    task = toy_task(stripes_image(), (400, 400, 464, 464), ((CROP,),))
    assert task_share(task, VIEW) > 0.9


def test_share_is_zero_when_no_artifact_holds_the_evidence() -> None:
    elsewhere = RefCall("c1", "crop", {"image_index": 0, "bbox_2d": [0, 0, 100, 100],
                                       "zoom_scale": 4.0})
    task = toy_task(stripes_image(), (400, 400, 464, 464), ((elsewhere,),))
    assert task_share(task, VIEW) == 0.0


# ------------------------------------------------------------------------------ ablation


def test_ablation_finds_the_needed_crop_and_the_idle_stretch() -> None:
    task = toy_task(stripes_image(), (400, 400, 464, 464), ((CROP,), (STRETCH,)))
    full = task_share(task, VIEW)
    ablations = {a.key: a for a in op_ablations(task, VIEW)}
    assert set(ablations) == {"1:crop", "2:autocontrast"}
    assert full > 0.9
    assert ablations["1:crop"].share < SHARE_LINE  # the stretch of the whole image shows nothing
    assert ablations["2:autocontrast"].share > 0.9  # the crop alone already shows it
    assert all(a.chain_break is None for a in ablations.values())
    ops = {op.key: op for op in aggregate_ops([list(ablations.values())])}
    assert ops["1:crop"].needed(full) and not ops["2:autocontrast"].needed(full)


def test_a_dropped_call_hands_its_input_to_the_next_call() -> None:
    task = toy_task(stripes_image(), (400, 400, 464, 464), ((CROP,), (STRETCH,)))
    replay = replay_calls(task, task.images, drop="c1")
    assert list(replay.outputs) == ["c2"]
    assert replay.state[replay.outputs["c2"]].provenance.parent == 0


class SizeWorld:
    """A world whose reverse image search finds the entity only in a small (cropped) image."""

    def image_search(self, array: np.ndarray, top_k: int) -> list[SimpleNamespace]:
        url = "https://found.example/" if max(array.shape[:2]) < 600 else "https://wrong.example/"
        return [SimpleNamespace(title="t", url=url, image_url=url + "logo.png")]


def test_chain_necessity_is_measured_on_the_later_tool() -> None:
    search = RefCall("s1", "image_search", {"image_index": 1}, depends_on=("c1",))
    task = toy_task(smooth_image(), (400, 400, 464, 464), ((CROP,), (search,)))
    assert replay_calls(task, task.images, world=SizeWorld()).top_hits == {
        "s1": "https://found.example/"}
    (crop,) = op_ablations(task, VIEW, world=SizeWorld())
    assert crop.chain_break is True
    op = aggregate_ops([[crop]])[0]
    assert op.chain_needed and op.needed(0.0)  # under the line, yet needed by the search


def test_an_op_of_a_family_under_the_line_is_needed_only_by_the_chain() -> None:
    (op,) = aggregate_ops([[OpAblation("1:flip", 0.0, None)], [OpAblation("1:flip", 0.0, None)]])
    assert not op.needed(0.01) and op.needed(0.5)
    assert op.n == 2 and op.chain_breaks is None


# ------------------------------------------------------------------------------ families


FLIP_ONLY = "test_flip_only"
"""A family registered for a test only: glyph_zoom's scene with a flip for its reference (a
flip adds nothing to the view, so the family is below the line by construction)."""


@pytest.fixture
def flip_only_family(monkeypatch: pytest.MonkeyPatch) -> str:
    """Register :data:`FLIP_ONLY` for one test (the registry is restored afterwards)."""
    import dataclasses

    from m3gym.tasks import registry
    from m3gym.tasks.families.glyph_zoom import GlyphZoomFamily

    class FlipOnlyFamily(GlyphZoomFamily):
        name = FLIP_ONLY

        def generate(self, rng: np.random.Generator) -> Task:
            task = super().generate(rng)
            flip = RefCall("c1", "flip", {"image_index": 0, "direction": "horizontal"})
            return dataclasses.replace(task, family=FLIP_ONLY, reference=((flip,),))

    registry._load_builtin_families()
    monkeypatch.setitem(registry._FAMILIES, FLIP_ONLY, FlipOnlyFamily)
    return FLIP_ONLY


def test_known_failures_are_reported_and_a_passing_family_passes(
        flip_only_family: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from m3gym.audit import tool_necessity

    failing = share_check(flip_only_family, tasks=2)
    assert failing.fails and failing.result.share < SHARE_LINE
    monkeypatch.setitem(tool_necessity.KNOWN_BELOW_LINE, flip_only_family, KNOWN_REASON)
    known = share_check(flip_only_family, tasks=2)
    assert not known.fails and known.known == KNOWN_REASON
    assert known.line().endswith(f"known failure ({KNOWN_REASON})")
    ok = share_check("glyph_zoom", tasks=2)
    assert ok.result.passes_share and not ok.fails and ok.line().endswith(": ok")


@pytest.mark.slow
def test_exactly_the_known_families_are_below_the_line() -> None:
    """A redesign must take its family out of KNOWN_BELOW_LINE; a regression elsewhere fails."""
    from m3gym.tasks.registry import family_names

    below = {f for f in family_names(suite=None)
             if not family_necessity(f, ablate=False).passes_share}
    assert below == set(KNOWN_BELOW_LINE)


# ------------------------------------------------------------------------------ readers


def test_choice_credit_shares_ties_and_key_read_needs_the_whole_key() -> None:
    choices = ("AB-12", "AB-17", "CD-12")
    assert choice_credit([("AB-12", 0.9)], choices, 0) == 1.0
    assert choice_credit([("", 0.0)], choices, 1) == pytest.approx(1 / 3)  # nothing: chance
    assert choice_credit([], choices, 2) == pytest.approx(1 / 3)
    # two readings that each match a choice exactly: the surer one wins, not a tie
    assert choice_credit([("AB-12", 0.95), ("CD-12", 0.4)], choices, 0) == 1.0
    assert choice_credit([("AB-12", 0.5), ("CD-12", 0.5)], choices, 0) == 0.5
    assert key_read([("xx H4-9T6 yy", 0.5)], "H4-9T6")
    assert not key_read([("7", 1.0)], "H4-9T6")  # a short reading does not hold a long key
    assert not key_read([("H4-0T6", 1.0)], "H4-9T6")


def test_reader_variants_and_window() -> None:
    window = np.zeros((10, 30, 3), np.uint8)
    variants = reader_variants(window)
    assert len(variants) == 24 and variants[0].shape == (20, 60) and variants[1].shape == (60, 20)
    view = np.zeros((100, 100, 3), np.uint8)
    assert evidence_window(view, (10, 10, 30, 20)).shape[:2] == (16, 26)  # padded by 3
    assert evidence_window(view, (0, 0, 100, 100)).shape[:2] == (100, 100)  # clipped


def test_unknown_reader_is_refused() -> None:
    with pytest.raises(ValueError, match="unknown reader"):
        make_reader("easyocr")
    assert make_reader("none") is None


@pytest.mark.skipif(not rapidocr_available() and os.environ.get("M3GYM_REQUIRE_EXTRA") != "audit",
                    reason="rapidocr-onnxruntime is not installed (the 'audit' extra)")
def test_rapidocr_reads_a_legible_answer_with_the_tool() -> None:
    from m3gym.audit.tool_necessity import held_out_tasks

    (task,) = held_out_tasks("ui_status", 1)
    score = read_task(task, make_reader("rapidocr"))
    assert score is not None and score.kind == "answer"
    assert score.with_tool == 1.0 and score.chance == pytest.approx(1 / 6)
    assert latin_text("④-口一") == "4-O-"


@pytest.mark.skipif(not __import__("shutil").which("tesseract"), reason="tesseract is not on PATH")
def test_tesseract_reads_a_clean_code() -> None:
    import cv2

    img = np.full((40, 160), 255, np.uint8)
    cv2.putText(img, "AW-6449", (8, 30), cv2.FONT_HERSHEY_SIMPLEX, 0.9, 0, 2)
    ((text, conf),) = make_reader("tesseract")([img])
    assert 0.0 < conf <= 1.0
    assert choice_credit([(text, conf)], ("AH-6449", "AW-6449", "AW-6949"), 1) == 1.0


# ------------------------------------------------------------------------------ the command


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "m3gym.cli", "audit-tools", *args],
                          capture_output=True, text=True, check=False, timeout=600)


def test_cli_prints_the_table_and_fails_on_a_failing_family() -> None:
    ok = run_cli("--family", "glyph_zoom", "--tasks", "1", "--reader", "none")
    assert ok.returncode == 0, ok.stderr
    row = next(line for line in ok.stdout.splitlines() if line.startswith("| Classic"))
    assert "| glyph_zoom | flat | 1 | – | – | – |" in row and "1:crop needed" in row
    assert row.endswith("pass [reader: no reader asked (--reader none)] |")


def test_cli_fails_on_a_failing_family_unless_report_only(
        flip_only_family: str, monkeypatch: pytest.MonkeyPatch,
        capsys: pytest.CaptureFixture[str]) -> None:
    from m3gym.audit import tool_necessity
    from m3gym.cli import main

    args = ["audit-tools", "--family", flip_only_family, "--tasks", "1", "--reader", "none"]
    assert main(args) == 1
    out = capsys.readouterr().out
    assert "FAIL: share" in out and "1:flip NOT needed" in out and "(known:" not in out
    monkeypatch.setitem(tool_necessity.KNOWN_BELOW_LINE, flip_only_family, KNOWN_REASON)
    assert main(args) == 1 and f"(known: {KNOWN_REASON})" in capsys.readouterr().out
    assert main([*args, "--report-only"]) == 0


def test_cli_writes_the_measurements_as_json(tmp_path) -> None:
    import json

    out = tmp_path / "audit.json"
    ok = run_cli("--family", "glyph_zoom", "--tasks", "1", "--reader", "none", "--json", str(out))
    assert ok.returncode == 0, ok.stderr
    doc = json.loads(out.read_text())
    assert (doc["reader"], doc["tasks"], doc["photo"]) == ("none", 1, False)
    (row,) = doc["rows"]
    assert (row["level"], row["family"], row["scene"], row["tasks"]) == ("Classic", "glyph_zoom",
                                                                         "flat", 1)
    assert row["share"] == row["shares"][0] >= 0.3 and row["failures"] == []
    assert row["no_tool"] is None and row["reader_kind"] is None
    assert [(op["op"], op["needed"]) for op in row["ops"]] == [("1:crop", True)]


def test_env_ids_name_their_families() -> None:
    from m3gym.audit.tools_cli import env_families

    assert env_families("M3Bench-Classic") == ("Classic",
                                               ["glyph_faint", "glyph_rotate", "glyph_zoom"])
    assert env_families("M3Bench-TinyText") == ("L1", ["tiny_text"])
    level, fams = env_families("M3Bench-L3")
    assert level == "L3" and "logo_lookup" in fams and "tiny_text" not in fams
    with pytest.raises(SystemExit, match="unknown env id"):
        env_families("M3Bench-Nope")
