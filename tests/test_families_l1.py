"""Tests of the level-1 text families (tiny_text, rotated_text, faint_text) and render helpers.

Only what is specific to these families: the generic guarantees (determinism in and across
processes, task and choice sanity, oracle Acc = S = V = 1, evidence illegible at view size and
legible after the reference, validate() probes, knobs) are m3gym.testing.check_family's, run for
every family by tests/test_check_family.py.
"""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from PIL import Image, ImageOps

from m3gym.geometry import apply_affine
from m3gym.spec import Evidence, Task
from m3gym.state import ImageState
from m3gym.tasks import render as R
from tests.family_helpers import all_tasks, region, task

FAMILIES = ("tiny_text", "rotated_text", "faint_text")
VISUAL = {"crop", "rotate", "flip", "resize", "grayscale", "autocontrast", "invert", "equalize",
          "threshold", "blur", "sharpen", "denoise", "edge_detect", "enhance"}
MIN_VIEW = Evidence.min_view_height
MIN_CONTRAST = Evidence.min_contrast










# ------------------------------------------------------------------------------- all families


@pytest.mark.parametrize("family", FAMILIES)
def test_task_structure(family):
    for t in all_tasks(family):
        img = t.images[0]
        assert max(img.shape[:2]) <= 3200
        assert all(len(c) == len(t.answer.value) for c in t.choices)
        assert len(t.reference) == 1 and len(t.reference[0]) == 1
        call = t.reference[0][0]
        assert call.name in VISUAL and call.arguments["image_index"] == 0
        assert t.capabilities == ("visual_grounding",)
        (ev,) = t.evidence
        assert ev.text == t.answer.value and ev.clean is not None and ev.mask is not None
        for cp in t.checkpoints:
            assert cp.params.get("evidence", ev.id) == ev.id
        m = t.metadata
        assert m["level"] == 1 and m["family"] == family and m["view_size"] == 768
        assert m["evidence_area_fraction"] == pytest.approx(t.evidence_area_fraction)
        assert "scene" in m
        # distractor text never spells the answer in the question
        assert t.answer.value not in t.question


def test_checkpoint_kinds():
    # per axis group: the one reference call holds one S, one v_tool and the (artifact) v_true
    kinds = {f: tuple((c.axis, c.kind) for c in task(f, 0).checkpoints) for f in FAMILIES}
    assert kinds["tiny_text"] == (("S", "crop_covers"), ("V", "v_tool"), ("V", "v_true"))
    assert kinds["rotated_text"] == (("S", "crop_covers"), ("V", "v_tool"), ("V", "v_true"))
    assert kinds["faint_text"] == (("S", "contrast_op"), ("V", "v_tool"), ("V", "v_true"))
    assert task("tiny_text", 0).checkpoints[1].params["tools"] == ["crop"]
    assert task("rotated_text", 0).checkpoints[1].params["tools"] == ["crop"]
    assert "autocontrast" in task("faint_text", 0).checkpoints[0].params["tools"]


def _scored(t: Task, calls: list[tuple[str, dict]]):
    """Run ``calls`` (name, arguments) one per step through the real tools; return the report."""
    from m3gym.scoring.checkpoints import evaluate_checkpoints
    from m3gym.tools.base import ToolContext
    from m3gym.tools.registry import ToolRegistry
    from m3gym.tools.visual import VISUAL_TOOLS
    from m3gym.trace import Trace

    reg = ToolRegistry(VISUAL_TOOLS)
    state = ImageState()
    for img in t.images:
        state.add_root(img)
    trace = Trace()
    for i, (name, args) in enumerate(calls):
        rec = reg.execute(ToolContext(state=state, visible_images=len(state)), name, args,
                          step=i, call_id=f"a{i}")
        assert rec.ok, rec.error
        trace.steps.append([rec])
    return evaluate_checkpoints(t, trace, state)


def test_each_l1_checkpoint_fails_for_a_sloppy_agent():
    for seed in range(5):
        tiny = task("tiny_text", seed)
        call = tiny.reference[0][0]
        # a crop of everything holds the code but does not magnify it: it passes nothing
        lazy = _scored(tiny, [("crop", {"image_index": 0, "bbox_2d": [0, 0, 1000, 1000],
                                        "zoom_scale": 1.25})])
        assert lazy.S == 0.0 and lazy.V_tool == 0.0 and lazy.V_true == 0.0
        x0, y0, x1, y1 = call.arguments["bbox_2d"]
        cut = [x0, y0, (x0 + x1) // 2, y1]  # half the sticker: the code is cut
        half = _scored(tiny, [("crop", {**call.arguments, "bbox_2d": cut})])
        assert half.S == 0.0 and half.V == 0.0
        faint = task("faint_text", seed)
        sharpened = _scored(faint, [("sharpen", {"image_index": 0})])
        assert sharpened.S == 0.0 and sharpened.V == 0.0
    for seed in range(12):
        rot = task("rotated_text", seed)
        angle = {"rot90": -90, "rot180": 180, "rot270": 90}.get(rot.metadata["transform"])
        undo = (("rotate", {"image_index": 0, "angle": angle, "expand": True}) if angle else
                ("flip", {"image_index": 0, "direction": "horizontal"
                          if rot.metadata["transform"] == "flip_h" else "vertical"}))
        # turning the whole document upright adds nothing: the glyphs stay illegible, and no
        # checkpoint pays for it
        upright = _scored(rot, [undo])
        assert upright.S == 0.0 and upright.V_tool == 0.0 and upright.V_true == 0.0


# ------------------------------------------------------------------------------- tiny_text


# ------------------------------------------------------------------------------- rotated_text




@pytest.mark.parametrize("transform", ["rot90", "rot180", "rot270", "flip_h", "flip_v"])
def test_transform_box_matches_pixels(transform):
    from m3gym.tasks.families._text_common import apply_transform, transform_box

    h, w = 30, 50
    box = (7, 4, 19, 11)
    ind = np.zeros((h, w), np.uint8)
    ind[box[1]:box[3], box[0]:box[2]] = 1
    out = apply_transform(ind, transform)
    ys, xs = np.nonzero(out)
    assert transform_box(box, transform, w, h) == (xs.min(), ys.min(), xs.max() + 1, ys.max() + 1)


# ------------------------------------------------------------------------------- faint_text


# ------------------------------------------------------------------------------- tool replay


def replay(t: Task):
    """Replay the reference through the real visual tools; return (state, output entry)."""
    visual = pytest.importorskip("m3gym.tools.visual")
    from m3gym.tools.base import ToolContext
    from m3gym.tools.registry import ToolRegistry

    reg = ToolRegistry(visual.VISUAL_TOOLS)
    state = ImageState()
    for img in t.images:
        state.add_root(img)
    call = t.reference[0][0]
    rec = reg.execute(ToolContext(state=state, visible_images=len(state)), call.name,
                      call.arguments, step=0, call_id=call.id)
    assert rec.ok, rec.error
    return state, state[rec.output_index]


def mapped_box(entry, box) -> tuple[int, int, int, int]:
    x0, y0, x1, y1 = box
    pts = apply_affine(entry.provenance.affine, np.array([[x0, y0], [x1, y1]]))
    (a, b), (c, d) = pts
    return (round(min(a, c)), round(min(b, d)), round(max(a, c)), round(max(b, d)))


@pytest.mark.parametrize("family", FAMILIES)
def test_reference_replays_through_visual_tools(family):
    for seed in range(15):
        t = task(family, seed)
        (ev,) = t.evidence
        _, out = replay(t)
        arr = out.array
        oh, ow = arr.shape[:2]
        x0, y0, x1, y1 = mapped_box(out, ev.box)
        assert -1 <= x0 and -1 <= y0 and x1 <= ow + 1 and y1 <= oh + 1
        scale = abs(float(np.linalg.det(out.provenance.affine[:, :2]))) ** 0.5
        if family in ("tiny_text", "rotated_text"):
            assert ev.glyph_height * scale * R.view_scale(oh, ow) >= MIN_VIEW
        else:
            assert R.ink_surround_contrast(region(arr, ev.box), ev.mask) >= 1.3 * MIN_CONTRAST


# ------------------------------------------------------------------------------- render helpers


def test_autocontrast_matches_pil():
    rng = np.random.default_rng(3)
    for cutoff in (0, 0.5, 1, 2.5):
        img = (rng.integers(0, 30, (64, 80, 3)) + rng.integers(0, 220, 3)).astype(np.uint8)
        expected = np.asarray(ImageOps.autocontrast(Image.fromarray(img), cutoff=cutoff))
        assert np.array_equal(R.autocontrast_pil(img, cutoff), expected)


def test_codes_avoid_confusable_characters():
    rng = np.random.default_rng(0)
    codes = [R.random_code(rng) for _ in range(300)]
    assert not set("".join(codes)) & set("O0I1LQSZB8")


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 8))
def test_near_miss_codes_differ_in_one_or_two_characters(seed, count):
    rng = np.random.default_rng(seed)
    code = R.random_code(rng)
    misses = R.near_miss_codes(rng, code, count)
    assert len(set(misses)) == count and code not in misses
    for m in misses:
        diff = sum(a != b for a, b in zip(m, code))
        assert len(m) == len(code) and 1 <= diff <= 2
    choices = R.code_choices(rng, code, 6)
    assert code in choices and len(set(choices)) == 6


@settings(max_examples=100, deadline=None)
@given(st.integers(100, 3000), st.integers(100, 3000), st.data())
def test_bbox1000_covers_box(width, height, data):
    x0 = data.draw(st.integers(0, width - 2))
    x1 = data.draw(st.integers(x0 + 1, width))
    y0 = data.draw(st.integers(0, height - 2))
    y1 = data.draw(st.integers(y0 + 1, height))
    bx0, by0, bx1, by1 = R.bbox1000_to_box(R.box_to_bbox1000((x0, y0, x1, y1), width, height),
                                           width, height)
    assert bx0 <= x0 and by0 <= y0 and x1 <= bx1 and y1 <= by1


def test_render_text_mask_and_glyph_height():
    p = R.render_text("HXH", 20.0)
    assert p.mask.shape == p.alpha.shape and p.mask.any()
    assert abs(p.glyph_height - 20.0) <= 1.5
    rows = np.flatnonzero(p.mask.any(axis=1))
    assert rows[-1] - rows[0] + 1 == p.glyph_height
    img = np.full((50, 120, 3), 255, np.uint8)
    placed = R.paste_text(img, p, 10, 5, (0, 0, 0))
    x0, y0, x1, y1 = placed.box
    assert (x1 - x0, y1 - y0) == p.size
    ink = R.to_gray(img[y0:y1, x0:x1])
    assert ink[placed.mask].max() < 128 and (img.min(axis=2) == 255).sum() > 0
    assert not (R.to_gray(img) < 255)[:y0].any()


def test_backgrounds_are_deterministic_and_textured():
    for kind in R.BACKGROUND_KINDS:
        a = R.background(np.random.default_rng(1), 120, 160, kind)
        b = R.background(np.random.default_rng(1), 120, 160, kind)
        assert a.shape == (120, 160, 3) and a.dtype == np.uint8
        assert np.array_equal(a, b) and a.std() > 1.0


def test_sensor_noise_statistics():
    img = np.full((300, 400, 3), 100, np.uint8)
    out = R.add_sensor_noise(img, np.random.default_rng(0), 2.0)
    assert abs(float(out.mean()) - 100) < 0.2 and 1.7 < float(out.std()) < 2.3
    assert np.array_equal(img, np.full((300, 400, 3), 100, np.uint8))


def test_compress_dynamic_range_and_ink_surround_contrast():
    img = np.zeros((40, 40, 3), np.uint8)
    img[10:30, 10:30] = 255
    mask = np.zeros((40, 40), bool)
    mask[10:30, 10:30] = True
    low = R.compress_dynamic_range(img, (100, 100, 100), 20)
    assert R.ink_surround_contrast(low, mask) == pytest.approx(20.0)
    assert cv2.LUT is not None
