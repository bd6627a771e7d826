"""The tiny_text family: a tiny code on a field plate, legible only after a crop."""

from __future__ import annotations

from m3gym.spec import Evidence
from m3gym.tasks import render as R
from tests.family_helpers import all_tasks, ncc, region

MIN_VIEW = Evidence.min_view_height










def test_tiny_text_illegible_in_full_view_and_legible_after_crop():
    for t in all_tasks("tiny_text"):
        img = t.images[0]
        h, w = img.shape[:2]
        (ev,) = t.evidence
        assert ev.glyph_height * 768 / max(h, w) < MIN_VIEW
        args = t.reference[0][0].arguments
        assert t.reference[0][0].name == "crop"
        cx0, cy0, cx1, cy1 = R.bbox1000_to_box(args["bbox_2d"], w, h)
        x0, y0, x1, y1 = ev.box
        assert cx0 <= x0 and cy0 <= y0 and x1 <= cx1 and y1 <= cy1  # crop covers the evidence
        zoom = args["zoom_scale"]
        assert 1.0 <= zoom <= 5.0
        out_w, out_h = int((cx1 - cx0) * zoom), int((cy1 - cy0) * zoom)
        shown = ev.glyph_height * zoom * R.view_scale(out_h, out_w)
        assert shown >= 1.5 * MIN_VIEW
        # the pixels in the box are the clean render plus mild noise only
        assert ncc(R.to_gray(region(img, ev.box)), ev.clean) > 0.8


def test_tiny_text_question_names_target_colour_and_decoys_differ():
    for t in all_tasks("tiny_text"):
        assert t.metadata["target_color"] in t.question
        assert t.answer.value not in t.metadata["decoy_codes"]
        assert not set(t.metadata["decoy_codes"]) & set(t.choices)
