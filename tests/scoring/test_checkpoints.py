"""Exact S/V checkpoint verification on hand-built synthetic tasks."""

from __future__ import annotations

import dataclasses
import json

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy.optimize import linear_sum_assignment

from m3gym.scoring.checkpoints import (
    CheckpointTracker,
    evaluate_checkpoints,
    measure_evidence,
    orientation_of,
)
from m3gym.spec import AnswerSpec, Checkpoint, Evidence, Task
from m3gym.state import ImageState
from m3gym.trace import Trace, TraceCall

W, H = 1200, 900
FONT = cv2.FONT_HERSHEY_SIMPLEX
TEXT = "KX-4821 VALVE"


# ----------------------------------------------------------------------------- synthetic task


def text_patch(text: str = TEXT, scale: float = 0.36, pad: int = 4) -> np.ndarray:
    """Black-on-white gray render of ``text`` with glyphs about 8 px tall."""
    (tw, th), base = cv2.getTextSize(text, FONT, scale, 1)
    patch = np.full((th + base + 2 * pad, tw + 2 * pad), 255, np.uint8)
    cv2.putText(patch, text, (pad, pad + th), FONT, scale, 0, 1, cv2.LINE_AA)
    return patch


def rotated(patch: np.ndarray, angle: float, fill: int = 255) -> np.ndarray:
    """``patch`` rotated ``angle`` degrees counter-clockwise with the canvas expanded."""
    h, w = patch.shape[:2]
    m = cv2.getRotationMatrix2D((w / 2, h / 2), angle, 1.0)
    cos, sin = abs(m[0, 0]), abs(m[0, 1])
    nw, nh = int(np.ceil(h * sin + w * cos)), int(np.ceil(h * cos + w * sin))
    m[0, 2] += nw / 2 - w / 2
    m[1, 2] += nh / 2 - h / 2
    return cv2.warpAffine(patch, m, (nw, nh), flags=cv2.INTER_LINEAR, borderValue=fill)


def make_task(*, angle: float = 0.0, ink: int = 0, paper: int = 255,
              checkpoints: tuple[Checkpoint, ...] = (), at: tuple[int, int] = (700, 520)) -> Task:
    """A 1200x900 RGB scene with clutter and one tiny text evidence (glyphs ~8 px)."""
    rng = np.random.default_rng(0)
    img = np.full((H, W, 3), 200, np.uint8)
    for _ in range(40):  # clutter far from the evidence
        x, y = int(rng.integers(0, 500)), int(rng.integers(0, 400))
        cv2.rectangle(img, (x, y), (x + 60, y + 30), tuple(int(c) for c in rng.integers(0, 255, 3)),
                      -1)
    patch = text_patch()
    if angle:
        patch = rotated(patch, angle)
    alpha = (255 - patch).astype(np.float64) / 255.0  # ink coverage
    render = np.rint(paper + (ink - paper) * alpha).astype(np.uint8)
    x0, y0 = at
    h, w = render.shape
    img[y0 - 60:y0 + h + 60, x0 - 80:x0 + w + 220] = paper  # the label the text is printed on
    img[y0:y0 + h, x0:x0 + w] = render[:, :, None]
    ev = Evidence(id="e0", image=0, box=(x0, y0, x0 + w, y0 + h), text=TEXT, glyph_height=8.0,
                  clean=patch, mask=patch < 128, angle=angle)
    return Task(task_id="t", family="synthetic", level=1, domain="Diagram", images=(img,),
                question="What is the label?", answer=AnswerSpec(TEXT), reference=(),
                evidence=(ev,), checkpoints=checkpoints)


def fresh_state(task: Task) -> ImageState:
    state = ImageState()
    for img in task.images:
        state.add_root(img)
    return state


# ----------------------------------------------------------------------------- ops (as tools do)
# Provenance affines act on continuous coordinates: pixel i spans [i, i + 1).


def crop(state: ImageState, parent: int, box: tuple[int, int, int, int], zoom: float = 1.0,
         call_id: str | None = None) -> int:
    x0, y0, x1, y1 = box
    src = state[parent].array[y0:y1, x0:x1]
    if zoom == 1.0:
        out, fx, fy = src, 1.0, 1.0
    else:
        nw, nh = round(src.shape[1] * zoom), round(src.shape[0] * zoom)
        out = cv2.resize(src, (nw, nh), interpolation=cv2.INTER_CUBIC)
        fx, fy = nw / src.shape[1], nh / src.shape[0]
    step = np.array([[fx, 0, -fx * x0], [0, fy, -fy * y0]])
    return state.add_derived(parent, np.ascontiguousarray(out), "crop", {"bbox": list(box)}, step,
                             call_id=call_id).index


def rotate(state: ImageState, parent: int, angle: float, call_id: str | None = None) -> int:
    src = state[parent].array
    h, w = src.shape[:2]
    m = cv2.getRotationMatrix2D((w / 2, h / 2), angle, 1.0)  # continuous coordinates
    cos, sin = abs(m[0, 0]), abs(m[0, 1])
    nw, nh = int(np.ceil(h * sin + w * cos - 1e-6)), int(np.ceil(h * cos + w * sin - 1e-6))
    m[0, 2] += nw / 2 - w / 2
    m[1, 2] += nh / 2 - h / 2
    to_index = m.copy()  # cv2 samples at pixel indices (centres at i, not i + 0.5)
    to_index[:, 2] += m[:, :2].sum(axis=1) * 0.5 - 0.5
    out = cv2.warpAffine(src, to_index, (nw, nh), flags=cv2.INTER_CUBIC,
                         borderValue=(255, 255, 255))
    return state.add_derived(parent, out, "rotate", {"angle": angle}, m, call_id=call_id).index


def flip(state: ImageState, parent: int, call_id: str | None = None) -> int:
    src = state[parent].array
    w = src.shape[1]
    step = np.array([[-1.0, 0, w], [0, 1.0, 0]])
    return state.add_derived(parent, np.ascontiguousarray(src[:, ::-1]), "flip",
                             {"direction": "horizontal"}, step, call_id=call_id).index


def photometric(state: ImageState, parent: int, op: str, fn, call_id: str | None = None) -> int:
    out = fn(np.asarray(state[parent].array))
    return state.add_derived(parent, out, op, {}, None, call_id=call_id).index


def autocontrast(a: np.ndarray) -> np.ndarray:
    lo, hi = int(a.min()), int(a.max())
    scaled = (a.astype(np.float64) - lo) * (255.0 / max(1, hi - lo))
    return np.clip(np.rint(scaled), 0, 255).astype(np.uint8)


def blur(radius: float):
    return lambda a: cv2.GaussianBlur(a, (0, 0), radius)


def invert(a: np.ndarray) -> np.ndarray:
    return 255 - a


def record(call_id: str, name: str, *, step: int = 0, ok: bool = True, input_index=None,
           output_index=None, arguments=None, payload=None) -> TraceCall:
    return TraceCall(step=step, call_id=call_id, name=name, requested_name=name,
                      arguments=dict(arguments or {}), ok=ok, input_index=input_index,
                      output_index=output_index, payload=dict(payload or {}))


EVIDENCE_CROP = (650, 480, 900, 580)  # contains the evidence placed at (700, 520)
V_TRUE = Checkpoint("v", "V", "v_true", {"evidence": "e0"})
TASK_NO_CP = make_task()


def view_of(task: Task, state: ImageState, index: int):
    return measure_evidence(state[index], task.evidence[0])


# ----------------------------------------------------------------------------- v_true


def test_image0_is_illegible_at_view_resolution():
    task = make_task()
    view = view_of(task, fresh_state(task), 0)
    assert not view.passed and view.stage == 2
    assert view.view_glyph_height == pytest.approx(8.0 * 768 / 1200)


def test_crop_at_zoom1_too_small_but_zoom4_passes():
    task = make_task()
    state = fresh_state(task)
    z1 = crop(state, 0, EVIDENCE_CROP, 1.0)
    z4 = crop(state, 0, EVIDENCE_CROP, 4.0)
    v1, v4 = view_of(task, state, z1), view_of(task, state, z4)
    assert not v1.passed and v1.stage == 2 and v1.view_glyph_height == pytest.approx(8.0)
    assert v4.passed, v4
    assert v4.view_glyph_height == pytest.approx(8.0 * 4 * 768 / 1000)  # 1000 px wide -> 0.768
    assert v4.contrast > 120 and v4.fidelity > 0.9


def test_zoom_on_a_huge_crop_is_downscaled_to_view():
    # crop of the whole image at zoom 2 -> 2400 px wide -> shown at 0.32 -> glyph 5.1 px
    task = make_task()
    state = fresh_state(task)
    idx = crop(state, 0, (0, 0, W, H), 2.0)
    view = view_of(task, state, idx)
    assert not view.passed and view.stage == 2
    assert view.view_glyph_height == pytest.approx(8.0 * 2 * 768 / 2400)


def test_crop_missing_part_of_the_evidence_fails():
    task = make_task()
    state = fresh_state(task)
    idx = crop(state, 0, (650, 480, 760, 580), 4.0)  # cuts the text at x = 760
    view = view_of(task, state, idx)
    assert not view.passed and view.stage == 0 and not view.inside


def test_blur_radius6_of_zoomed_crop_fails_fidelity_or_contrast():
    task = make_task()
    state = fresh_state(task)
    z4 = crop(state, 0, EVIDENCE_CROP, 4.0)
    mild = photometric(state, z4, "blur", blur(1.0))
    heavy = photometric(state, z4, "blur", blur(6.0))
    assert view_of(task, state, mild).passed
    view = view_of(task, state, heavy)
    assert not view.passed and view.stage in (3, 4), view


def test_noise_at_glyph_scale_fails_fidelity():
    task = make_task()
    state = fresh_state(task)
    noise = np.random.default_rng(1).normal(0, 160, (H, W, 1))
    noisy = photometric(state, 0, "noise", lambda a: np.clip(a + noise, 0, 255).astype(np.uint8))
    z4 = crop(state, noisy, EVIDENCE_CROP, 4.0)
    view = view_of(task, state, z4)
    assert not view.passed and view.stage == 4 and view.fidelity < 0.5, view
    clean_z4 = crop(state, 0, EVIDENCE_CROP, 4.0)
    assert view_of(task, state, clean_z4).passed


def test_faint_text_fails_until_autocontrast():
    task = make_task(ink=128, paper=133)
    state = fresh_state(task)
    z4 = crop(state, 0, EVIDENCE_CROP, 4.0)
    faint = view_of(task, state, z4)
    assert not faint.passed and faint.stage == 3 and faint.contrast < 6
    fixed = photometric(state, z4, "autocontrast", autocontrast)
    view = view_of(task, state, fixed)
    assert view.passed, view


def test_inversion_keeps_absolute_contrast_and_fidelity():
    task = make_task()
    state = fresh_state(task)
    z4 = crop(state, 0, EVIDENCE_CROP, 4.0)
    inv = photometric(state, z4, "invert", invert)
    a, b = view_of(task, state, z4), view_of(task, state, inv)
    assert b.passed
    assert b.contrast == pytest.approx(a.contrast, abs=1e-2)
    assert b.fidelity == pytest.approx(a.fidelity, abs=1e-2)


def test_rotated_text_needs_the_right_rotation():
    task = make_task(angle=30.0)
    state = fresh_state(task)
    x0, y0, x1, y1 = (int(v) for v in task.evidence[0].box)
    z = crop(state, 0, (x0 - 10, y0 - 10, x1 + 10, y1 + 10), 3.0)
    assert view_of(task, state, z).stage == 1  # rotated 30°
    wrong = rotate(state, z, 30.0)
    right = rotate(state, z, -30.0)
    vw, vr = view_of(task, state, wrong), view_of(task, state, right)
    assert not vw.passed and vw.stage == 1 and vw.angle_deg == pytest.approx(60.0)
    assert vr.passed, vr
    assert vr.angle_deg == pytest.approx(0.0, abs=1e-9)


def test_mirrored_fails():
    task = make_task()
    state = fresh_state(task)
    z4 = crop(state, 0, EVIDENCE_CROP, 4.0)
    mirrored = flip(state, z4)
    view = view_of(task, state, mirrored)
    assert not view.passed and view.stage == 1 and view.determinant < 0
    back = flip(state, mirrored)
    assert view_of(task, state, back).passed


def test_geometry_only_without_clean():
    task = make_task()
    ev = task.evidence[0]
    bare = Evidence(id="e0", image=0, box=ev.box, glyph_height=8.0)
    state = fresh_state(task)
    z4 = crop(state, 0, EVIDENCE_CROP, 4.0)
    blurred = photometric(state, z4, "blur", blur(6.0))
    assert measure_evidence(state[blurred], bare).passed
    assert not measure_evidence(state[0], bare).passed


def test_orientation_of_rotation_matrix_matches_cv2_convention():
    m = cv2.getRotationMatrix2D((0, 0), 25.0, 2.0)
    det, angle = orientation_of(m[:, :2])
    assert det == pytest.approx(4.0) and angle == pytest.approx(25.0)


# ----------------------------------------------------------------------------- checkpoints


def test_one_crop_passes_s_v_tool_and_v_true():
    cps = (
        Checkpoint("s_crop", "S", "crop_covers", {"evidence": "e0"}),
        Checkpoint("v_tool", "V", "v_tool", {"evidence": "e0", "tools": ["crop"]}),
        Checkpoint("v_true", "V", "v_true", {"evidence": "e0"}),
    )
    task = make_task(checkpoints=cps)
    state = fresh_state(task)
    z4 = crop(state, 0, EVIDENCE_CROP, 4.0, call_id="c0")
    trace = Trace(steps=[[record("c0", "crop", input_index=0, output_index=z4)]])
    report = evaluate_checkpoints(task, trace, state)
    # one call per group: the single crop satisfies one checkpoint of each group
    assert report.progress == 1.0
    assert (report.S, report.V, report.V_tool, report.V_true) == (1.0, 1.0, 1.0, 1.0)
    assert {r.call_id for r in report.results} == {"c0"}
    assert report.result("v_true").image_index == z4
    assert report.result("v_tool").measurements == {"input_index": 0, "output_index": z4,
                                                    "legible": True,
                                                    "reason": "evidence legible"}
    json.dumps(report.to_dict())


def test_same_call_cannot_satisfy_two_s_checkpoints():
    cps = (
        Checkpoint("s_crop", "S", "crop_covers", {"evidence": "e0"}),
        Checkpoint("s_crop_again", "S", "crop_covers", {"evidence": "e0"}),
        Checkpoint("v_a", "V", "v_tool", {"evidence": "e0", "tools": ["crop"]}),
        Checkpoint("v_b", "V", "v_tool", {"evidence": "e0", "tools": ["crop", "autocontrast"]}),
    )
    task = make_task(checkpoints=cps)
    state = fresh_state(task)
    z4 = crop(state, 0, EVIDENCE_CROP, 4.0, call_id="c0")
    trace = Trace(steps=[[record("c0", "crop", input_index=0, output_index=z4)]])
    report = evaluate_checkpoints(task, trace, state)
    assert report.S == 0.5 and report.V_tool == 0.5
    assert report.result("s_crop").call_id == "c0"
    failed = report.result("s_crop_again")
    assert not failed.passed
    assert "assigned to another S checkpoint" in failed.reason
    assert "assigned to another v_tool checkpoint" in report.result("v_b").reason
    # a second call frees one checkpoint in each group: autocontrast on the crop passes v_b only
    a = photometric(state, z4, "autocontrast", autocontrast, call_id="c1")
    trace.steps.append([record("c1", "autocontrast", input_index=z4, output_index=a)])
    report = evaluate_checkpoints(task, trace, state)
    assert report.S == 0.5 and report.V_tool == 1.0
    assert report.result("v_a").call_id == "c0" and report.result("v_b").call_id == "c1"
    # a second covering crop passes the second S checkpoint
    z2 = crop(state, 0, EVIDENCE_CROP, 2.0, call_id="c2")
    trace.steps.append([record("c2", "crop", input_index=0, output_index=z2)])
    assert evaluate_checkpoints(task, trace, state).S == 1.0


def test_v_true_passes_from_an_artifact_of_any_call():
    """v_true is artifact-level: a call already holding S and v_tool checkpoints still counts."""
    second = Evidence(id="e1", image=0, box=(820, 540, 840, 560), glyph_height=8.0)
    cps = (
        Checkpoint("s_crop", "S", "crop_covers", {"evidence": "e0"}),
        Checkpoint("v_tool", "V", "v_tool", {"evidence": "e0", "tools": ["crop"]}),
        Checkpoint("v_true_0", "V", "v_true", {"evidence": "e0"}),
        Checkpoint("v_true_1", "V", "v_true", {"evidence": "e1"}),
    )
    base = make_task()
    task = dataclasses.replace(base, evidence=(*base.evidence, second), checkpoints=cps)
    state = fresh_state(task)
    z1 = crop(state, 0, EVIDENCE_CROP, 1.0, call_id="c0")  # covers both, too small to read
    a = photometric(state, z1, "autocontrast", autocontrast, call_id="c1")
    z4 = crop(state, a, (0, 0, 250, 100), 4.0, call_id="c2")  # the autocontrasted crop, zoomed
    trace = Trace(steps=[[record("c0", "crop", input_index=0, output_index=z1)],
                         [record("c1", "autocontrast", input_index=z1, output_index=a)],
                         [record("c2", "crop", input_index=a, output_index=z4)]])
    report = evaluate_checkpoints(task, trace, state)
    assert report.progress == 1.0
    # both pieces of evidence are read from the one zoomed artifact of c2
    for cid in ("v_true_0", "v_true_1"):
        assert report.result(cid).call_id == "c2" and report.result(cid).image_index == z4
    # c2 also holds an S checkpoint whichever crop the matching gave it; v_true is independent
    assert {report.result("s_crop").call_id} <= {"c0", "c2"}
    # v_tool needs a legible output: the zoom-1 crop c0 does not give one, c2 does
    assert report.result("v_tool").call_id == "c2"


def test_v_tool_needs_the_output_to_keep_the_evidence():
    cps = (Checkpoint("v", "V", "v_tool", {"evidence": "e0", "tools": ["crop"]}),)
    task = make_task(checkpoints=cps)
    state = fresh_state(task)
    cut = crop(state, 0, (650, 480, 760, 580), 4.0, call_id="c0")  # from Image 0, cuts the text
    report = evaluate_checkpoints(
        task, Trace(steps=[[record("c0", "crop", input_index=0, output_index=cut)]]), state)
    assert report.V_tool == 0.0


def test_matching_does_not_depend_on_checkpoint_order():
    # c0 passes both A and B, c1 passes only A: greedy in order (A first) would give 1
    both = (
        Checkpoint("a", "V", "v_tool", {"evidence": "e0", "tools": ["grayscale", "sharpen"]}),
        Checkpoint("b", "V", "v_tool", {"evidence": "e0", "tools": ["grayscale"]}),
    )
    task = make_task(checkpoints=both)
    state = fresh_state(task)
    z = crop(state, 0, EVIDENCE_CROP, 4.0, call_id="c")
    g = photometric(state, z, "grayscale", lambda a: a, call_id="c0")
    sh = photometric(state, z, "sharpen", lambda a: a, call_id="c1")
    calls = [record("c", "crop", input_index=0, output_index=z),
             record("c0", "grayscale", input_index=z, output_index=g),
             record("c1", "sharpen", input_index=z, output_index=sh)]
    report = evaluate_checkpoints(task, Trace(steps=[calls]), state)
    assert report.V_tool == 1.0
    assert report.result("a").call_id == "c1" and report.result("b").call_id == "c0"


def test_crop_covers_misses_and_wrong_root():
    cps = (Checkpoint("s", "S", "crop_covers", {"evidence": "e0"}),)
    task = make_task(checkpoints=cps)
    state = fresh_state(task)
    bad = crop(state, 0, (650, 480, 760, 580), 4.0, call_id="c0")
    report = evaluate_checkpoints(task, Trace(steps=[[record("c0", "crop", output_index=bad)]]),
                                  state)
    assert report.S == 0.0 and report.result("s").reason == "no call satisfied it"
    # a covering image produced by a non-crop op does not count as a crop
    good = crop(state, 0, EVIDENCE_CROP, 1.0, call_id="c1")
    report = evaluate_checkpoints(task, Trace(steps=[[record("c1", "resize", output_index=good)]]),
                                  state)
    assert report.S == 0.0


def test_rotate_upright_checkpoint():
    cps = (Checkpoint("r", "S", "rotate_upright", {"evidence": "e0"}),)
    task = make_task(angle=90.0, checkpoints=cps)
    state = fresh_state(task)
    wrong = rotate(state, 0, 90.0, call_id="c0")
    right = rotate(state, 0, -90.0, call_id="c1")
    t_wrong = Trace(steps=[[record("c0", "rotate", input_index=0, output_index=wrong)]])
    assert evaluate_checkpoints(task, t_wrong, state).S == 0.0
    t_right = Trace(steps=[[record("c1", "rotate", input_index=0, output_index=right)]])
    report = evaluate_checkpoints(task, t_right, state)
    assert report.S == 1.0
    assert report.result("r").measurements["angle_deg"] == pytest.approx(0.0, abs=1e-9)


def test_contrast_and_global_ops():
    cps = (
        Checkpoint("c", "S", "contrast_op", {"evidence": "e0", "tools": ["autocontrast"]}),
        Checkpoint("g", "S", "global_op", {"tools": ["edge_detect"]}),
    )
    task = make_task(checkpoints=cps)
    state = fresh_state(task)
    far = crop(state, 0, (0, 0, 300, 300), 1.0, call_id="k0")  # does not hold the evidence
    near = crop(state, 0, EVIDENCE_CROP, 2.0, call_id="k1")
    a_far = photometric(state, far, "autocontrast", autocontrast, call_id="a0")
    calls = [record("k0", "crop", input_index=0, output_index=far),
             record("k1", "crop", input_index=0, output_index=near),
             record("a0", "autocontrast", input_index=far, output_index=a_far),
             record("e0", "edge_detect", input_index=near)]
    report = evaluate_checkpoints(task, Trace(steps=[calls]), state)
    assert report.S == 0.0
    a_near = photometric(state, near, "autocontrast", autocontrast, call_id="a1")
    calls += [record("a1", "autocontrast", input_index=near, output_index=a_near),
              record("e1", "edge_detect", input_index=0)]
    report = evaluate_checkpoints(task, Trace(steps=[calls]), state)
    assert report.S == 1.0
    assert report.result("g").measurements["coverage"] == pytest.approx(1.0)
    # a full-image rotation still covers the whole root
    rot = rotate(state, 0, 15.0, call_id="r")
    calls2 = [record("r", "rotate", input_index=0, output_index=rot),
              record("e2", "edge_detect", input_index=rot)]
    report = evaluate_checkpoints(task, Trace(steps=[calls2]), state)
    assert report.result("g").passed
    assert report.result("g").measurements["coverage"] == pytest.approx(1.0, abs=1e-3)


def test_search_hit_and_fetch():
    url = "https://corpus.m3gym/wiki/Kx-4821"
    cps = (
        Checkpoint("s", "S", "search_hit", {"tool": "web_search", "url": url}),
        Checkpoint("f", "S", "fetch", {"url": url}),
    )
    task = make_task(checkpoints=cps)
    state = fresh_state(task)
    miss = record("q0", "web_search", arguments={"query": "kx4821 valve"},
                  payload={"results": [{"title": "x", "url": "https://corpus.m3gym/wiki/Other",
                                        "snippet": ""}]})
    wrong_tool = record("q1", "image_search", arguments={"image_index": 0},
                        payload={"results": [{"title": "x", "url": url, "snippet": ""}]})
    bad_fetch = record("f0", "fetch_webpage", ok=False, arguments={"url": url})
    report = evaluate_checkpoints(task, Trace(steps=[[miss, wrong_tool, bad_fetch]]), state)
    assert report.S == 0.0
    hit = record("q2", "web_search", arguments={"query": "what is valve KX 4821?"},
                 payload={"results": [{"title": "o", "url": "https://corpus.m3gym/wiki/Other"},
                                      {"title": "k", "url": url + "/", "snippet": "..."}]})
    fetched = record("f1", "fetch_webpage", arguments={"url": url}, payload={"url": url})
    report = evaluate_checkpoints(task, Trace(steps=[[miss, hit], [fetched]]), state)
    assert report.S == 1.0
    assert report.result("s").call_id == "q2" and report.result("f").call_id == "f1"
    # the alias name of the released harness counts too
    alias = record("q3", "google_search", payload={"results": [{"url": url}]})
    assert evaluate_checkpoints(task, Trace(steps=[[alias]]), state).result("s").passed


def test_axis_scores_and_empty_axes():
    cps = (
        Checkpoint("s1", "S", "fetch", {"url": "u1"}),
        Checkpoint("s2", "S", "fetch", {"url": "u2"}),
        Checkpoint("v1", "V", "v_tool", {"evidence": "e0", "tools": ["sharpen"]}),
    )
    task = make_task(checkpoints=cps)
    state = fresh_state(task)
    calls = [record("f", "fetch_webpage", payload={"url": "u1"})]
    report = evaluate_checkpoints(task, Trace(steps=[calls]), state)
    assert report.S == 0.5 and report.V == 0.0 and report.V_tool == 0.0
    assert report.V_true == 1.0 and report.counts["v_true"] == 0  # no v_true checkpoint
    empty = evaluate_checkpoints(make_task(), Trace(), fresh_state(make_task()))
    assert (empty.S, empty.V, empty.progress) == (1.0, 1.0, 0.0)


def test_input_images_never_pass_v_true_even_when_legible():
    # big text: glyphs 8 px scaled by... place a 1 x 1 task image small enough to need no scaling
    task = make_task(checkpoints=(V_TRUE,))
    small = np.ascontiguousarray(task.images[0][400:700, 600:1000])  # 400 px wide: view scale 1
    ev = task.evidence[0]
    x0, y0, x1, y1 = ev.box
    moved = Evidence(id="e0", image=0, box=(x0 - 600, y0 - 400, x1 - 600, y1 - 400),
                     glyph_height=8.0, clean=ev.clean, mask=ev.mask, min_view_height=7.0)
    t2 = Task(task_id="t2", family="synthetic", level=1, domain="Diagram", images=(small,),
              question="?", answer=AnswerSpec("x"), reference=(), evidence=(moved,),
              checkpoints=(V_TRUE,))
    state = fresh_state(t2)
    assert measure_evidence(state[0], moved).passed  # legible in the input itself ...
    report = evaluate_checkpoints(t2, Trace(), state)
    assert report.V_true == 0.0  # ... yet a visual checkpoint needs a produced image
    assert not report.result("v").passed and report.result("v").image_index is None


def test_tracker_is_incremental_and_monotone():
    cps = (
        Checkpoint("s", "S", "crop_covers", {"evidence": "e0"}),
        V_TRUE,
        Checkpoint("f", "S", "fetch", {"url": "u"}),
    )
    task = make_task(checkpoints=cps)
    state = fresh_state(task)
    tracker = CheckpointTracker(task)
    assert tracker.observe(state) == [] and tracker.progress == 0.0
    z4 = crop(state, 0, EVIDENCE_CROP, 4.0, call_id="c0")
    step0 = [record("c0", "crop", input_index=0, output_index=z4)]
    assert tracker.observe(state, step0) == ["s", "v"]  # S and v_true from one crop
    assert tracker.progress == pytest.approx(2 / 3)
    g = photometric(state, z4, "sharpen", lambda a: a, call_id="c1")
    step1 = [record("c1", "sharpen", input_index=z4, output_index=g),
             record("c2", "fetch_webpage", payload={"url": "u"})]
    assert tracker.observe(state, step0 + step1) == ["f"]  # old calls are skipped
    assert tracker.report().result("v").call_id == "c0"  # the first passing artifact is kept
    assert tracker.progress == 1.0
    # measurements are cached per (produced image, evidence): inputs are never measured
    assert sorted(tracker._views) == [(z4, "e0"), (g, "e0")]
    full = evaluate_checkpoints(task, Trace(steps=[step0, step1]), state)
    assert full.to_dict() == tracker.report().to_dict()
    assert json.loads(json.dumps(full.to_dict())) == full.to_dict()


GROUPED_CPS = (
    *(Checkpoint(f"s{i}", "S", "fetch", {"url": f"u{i}"}) for i in range(3)),
    *(Checkpoint(f"t{i}", "V", "v_tool", {"evidence": "e0", "tools": [f"x{i}"]})
      for i in range(3)),
    *(Checkpoint(f"r{i}", "V", "v_true", {"evidence": "e0"}) for i in range(2)),
)


@settings(max_examples=150, deadline=None)
@given(st.lists(st.lists(st.booleans(), min_size=8, max_size=8), max_size=7))
def test_incremental_matching_is_maximum_per_group(rows):
    """Per group, the incremental matching passes as many as the optimal assignment.

    Columns 0-2 are S checkpoints, 3-5 ``v_tool`` (each matched one call per checkpoint, in two
    independent matchings), 6-7 ``v_true`` (passed by any candidate, no exclusivity).
    """
    tracker = CheckpointTracker(dataclasses.replace(TASK_NO_CP, checkpoints=GROUPED_CPS))
    for j, row in enumerate(rows):
        edges = [i for i in range(8) if row[i]]
        tracker._add_edges(f"c{j}", f"c{j}", None, edges, {i: {} for i in edges})
    matrix = np.array(rows, dtype=float).reshape(len(rows), 8)
    expected = 0
    for cols in (slice(0, 3), slice(3, 6)):
        sub = matrix[:, cols]
        r, c = linear_sum_assignment(-sub)
        expected += int(sub[r, c].sum())
    expected += int(matrix[:, 6:].any(axis=0).sum())
    assert tracker.num_passed == expected
    # within S and within v_tool, passed checkpoints are held by distinct calls that pass them
    for group in (range(0, 3), range(3, 6)):
        held = [tracker._match_cp[i] for i in group if tracker._match_cp[i] is not None]
        assert len(held) == len(set(held))
    for i, m in enumerate(tracker._match_cp):
        if m is not None:
            cand = tracker._candidates[m]
            assert i in cand.edges and rows[int(cand.key[1:])][i]
            assert cand.group == tracker.groups[i]


def test_real_tools_keep_thin_rotated_text_aligned():
    """The provenance convention (continuous coordinates) matches the visual tools exactly."""
    visual = pytest.importorskip("m3gym.tools.visual")
    from m3gym.tools.base import ToolContext
    from m3gym.tools.registry import ToolRegistry

    task = make_task(angle=90.0, checkpoints=(V_TRUE,))
    state = fresh_state(task)
    reg = ToolRegistry(visual.VISUAL_TOOLS)
    x0, y0, x1, y1 = task.evidence[0].box
    bbox = [round((x0 - 20) * 1000 / W), round((y0 - 20) * 1000 / H),
            round((x1 + 20) * 1000 / W), round((y1 + 20) * 1000 / H)]
    calls = []
    for i, (name, args) in enumerate([
        ("crop", {"image_index": 0, "bbox_2d": bbox, "zoom_scale": 2.0}),
        ("rotate", {"image_index": 1, "angle": -90.0}),
    ]):
        ctx = ToolContext(state=state, visible_images=len(state))
        rec = reg.execute(ctx, name, args, i, f"c{i}")
        assert rec.ok, rec.error
        calls.append(rec)
    view = view_of(task, state, 2)
    assert view.passed and view.fidelity > 0.9, view
    assert not view_of(task, state, 1).passed  # still sideways before the rotation
    report = evaluate_checkpoints(task, Trace(steps=[calls]), state)
    assert report.V_true == 1.0


def test_search_hit_needs_the_url_within_max_rank():
    url = "https://corpus.m3gym/wiki/Kx-4821"
    others = [{"url": f"https://corpus.m3gym/wiki/Other{i}"} for i in range(4)]

    def ranked(call_id: str, rank: int) -> TraceCall:
        rows = others[:rank - 1] + [{"url": url}] + others[rank - 1:]
        return record(call_id, "web_search", payload={"results": rows})

    default = Checkpoint("s", "S", "search_hit", {"tool": "web_search", "url": url})
    first = Checkpoint("s", "S", "search_hit", {"tool": "web_search", "url": url, "max_rank": 1})
    for cp, rank, passed in ((default, 3, True), (default, 4, False), (first, 1, True),
                             (first, 2, False)):
        task = make_task(checkpoints=(cp,))
        res = evaluate_checkpoints(task, Trace(steps=[[ranked("q", rank)]]),
                                   fresh_state(task)).result("s")
        assert res.passed is passed, (cp.params, rank)
        if passed:
            assert res.measurements["rank"] == rank


def test_builders_map_reference_calls_to_checkpoints():
    from m3gym.spec import RefCall
    from m3gym.tasks.checkpoint_builders import evidence_checkpoints, step_checkpoint
    from m3gym.tools.catalogue import CONTRAST_TOOLS

    crop_call = RefCall("c1", "crop", {"image_index": 0, "bbox_2d": [0, 0, 10, 10]})
    rot = RefCall("c2", "rotate", {"image_index": 1, "angle": 90}, ("c1",))
    ac = RefCall("c3", "autocontrast", {"image_index": 2}, ("c2",))
    ac2 = RefCall("c4", "equalize", {"image_index": 3}, ("c3",))
    cps = evidence_checkpoints("e0", [crop_call, rot, ac, ac2])
    assert [(c.id, c.kind) for c in cps] == [
        ("s_crop_e0", "crop_covers"), ("s_upright_e0", "rotate_upright"),
        ("s_contrast_e0", "contrast_op"), ("s_contrast_e0_c4", "contrast_op"),
        ("v_tool_e0", "v_tool"), ("v_true_e0", "v_true")]
    assert cps[4].params["tools"] == list(CONTRAST_TOOLS)  # the decisive (last) tool's group
    search = step_checkpoint(RefCall("q", "google_search", {"query": "x"}), url="u", max_rank=1)
    assert (search.kind, search.params) == ("search_hit", {"tool": "web_search", "url": "u",
                                                           "max_rank": 1})
    fetch = step_checkpoint(RefCall("f", "fetch_webpage", {"url": "u"}))
    assert (fetch.id, fetch.kind, fetch.params) == ("s_fetch_f", "fetch", {"url": "u"})
    glob = step_checkpoint(RefCall("g", "threshold", {"image_index": 0}))
    assert glob.kind == "global_op" and "threshold" in glob.params["tools"]
    with pytest.raises(ValueError):
        step_checkpoint(RefCall("q", "web_search", {"query": "x"}))


# ----------------------------------------------------------------------------- effect required


def test_crop_must_magnify_the_evidence():
    """A crop that keeps more than half of the root (whole-image crop) passes nothing."""
    cps = (Checkpoint("s", "S", "crop_covers", {"evidence": "e0"}),
           Checkpoint("v", "V", "v_tool", {"evidence": "e0", "tools": ["crop"]}))
    task = make_task(checkpoints=cps)
    state = fresh_state(task)
    whole = crop(state, 0, (0, 0, W, H), 4.0, call_id="c0")
    half = crop(state, 0, (600, 0, W, H), 1.0, call_id="c1")  # 600/1200 = exactly half
    report = evaluate_checkpoints(
        task, Trace(steps=[[record("c0", "crop", input_index=0, output_index=whole)]]), state)
    assert (report.S, report.V_tool) == (0.0, 0.0)
    report = evaluate_checkpoints(
        task, Trace(steps=[[record("c1", "crop", input_index=0, output_index=half)]]), state)
    res = report.result("s")
    assert res.passed and res.measurements["root_share"] == pytest.approx(0.5)
    assert res.measurements["max_share"] == pytest.approx(0.5)
    # 600x900 shown at 768/900: glyphs 8 * 0.853 = 6.8 px < 9, so v_tool (a legible output)
    # fails while the crop's S checkpoint passes; a tight zoomed crop passes both
    assert report.V_tool == 0.0
    tight = crop(state, 0, EVIDENCE_CROP, 4.0, call_id="c2")
    report = evaluate_checkpoints(
        task, Trace(steps=[[record("c2", "crop", input_index=0, output_index=tight)]]), state)
    assert (report.S, report.V_tool) == (1.0, 1.0)


def test_contrast_op_on_the_original_needs_a_contrast_rise():
    """Autocontrast of Image 0 (evidence below legible scale) counts only if it raises contrast."""
    cps = (Checkpoint("c", "S", "contrast_op", {"evidence": "e0", "tools": ["autocontrast"]}),)
    crisp = make_task(checkpoints=cps)  # black on white: nothing to raise
    state = fresh_state(crisp)
    out = photometric(state, 0, "autocontrast", autocontrast, call_id="a")
    rec = record("a", "autocontrast", input_index=0, output_index=out)
    res = evaluate_checkpoints(crisp, Trace(steps=[[rec]]), state).result("c")
    assert not res.passed
    faint = make_task(ink=120, paper=140, checkpoints=cps)
    state = fresh_state(faint)
    stretch = photometric(state, 0, "autocontrast",
                          lambda a: np.clip((a.astype(np.int16) - 110) * 6, 0, 255)
                          .astype(np.uint8), call_id="a")
    rec = record("a", "autocontrast", input_index=0, output_index=stretch)
    res = evaluate_checkpoints(faint, Trace(steps=[[rec]]), state).result("c")
    assert res.passed
    assert res.measurements["contrast_after"] >= 1.25 * res.measurements["contrast_before"]
    # an identity "contrast op" on the original does not raise it
    state = fresh_state(faint)
    same = photometric(state, 0, "autocontrast", lambda a: a, call_id="a")
    rec = record("a", "autocontrast", input_index=0, output_index=same)
    assert not evaluate_checkpoints(faint, Trace(steps=[[rec]]), state).result("c").passed


def test_contrast_op_at_legible_scale_passes():
    cps = (Checkpoint("c", "S", "contrast_op", {"evidence": "e0", "tools": ["autocontrast"]}),)
    task = make_task(checkpoints=cps)
    state = fresh_state(task)
    z = crop(state, 0, EVIDENCE_CROP, 2.0, call_id="k")  # 8 px glyphs x2 at scale 1: 16 px
    out = photometric(state, z, "autocontrast", lambda a: a, call_id="a")
    calls = [record("k", "crop", input_index=0, output_index=z),
             record("a", "autocontrast", input_index=z, output_index=out)]
    res = evaluate_checkpoints(task, Trace(steps=[calls]), state).result("c")
    assert res.passed and res.measurements["view_glyph_height"] == pytest.approx(16.0)


def test_rotation_by_a_wrong_angle_passes_no_v_tool():
    cps = (Checkpoint("v", "V", "v_tool", {"evidence": "e0", "tools": ["rotate", "flip"]}),)
    task = make_task(angle=90.0, checkpoints=cps)
    state = fresh_state(task)
    x0, y0, x1, y1 = (int(v) for v in task.evidence[0].box)
    z = crop(state, 0, (x0 - 10, y0 - 10, x1 + 10, y1 + 10), 3.0, call_id="k")
    for angle, passed in ((90.0, False), (180.0, False), (-90.0, True)):
        r = rotate(state, z, angle, call_id=f"r{angle}")
        calls = [record("k", "crop", input_index=0, output_index=z),
                 record(f"r{angle}", "rotate", input_index=z, output_index=r)]
        assert evaluate_checkpoints(task, Trace(steps=[calls]), state).V_tool == float(passed)
