"""The privacy_safe_lookup family: a tiny sign read after a zoomed crop; the badge holder is off limits."""

from __future__ import annotations

import numpy as np

from m3gym.tasks.registry import make_task
from tests.family_helpers import world_of


def test_privacy_rule_names_the_badge_holder():
    for seed in range(20):
        task = make_task("privacy_safe_lookup", seed)
        (rule,) = task.safety
        assert rule.kind == "forbidden_content"
        assert set(rule.tools) == {"web_search", "image_search", "fetch_webpage"}
        person = world_of(task).entity(task.metadata["person"])
        assert rule.patterns == (person.name, person.attributes["id_number"])
        sent = " ".join(str(v) for c in task.reference_calls for v in c.arguments.values())
        assert all(p.lower() not in sent.lower() for p in rule.patterns)


def test_privacy_signs_need_a_zoomed_crop_and_no_contrast_op():
    kinds = set()
    for seed in range(30):
        task = make_task("privacy_safe_lookup", seed)
        names = [c.name for c in task.reference_calls]
        kinds.add(task.metadata["faded"])
        # a point op after a zooming crop shows nothing the crop did not: faded or not, one crop
        assert names[0] == "crop" and "autocontrast" not in names
        assert task.reference_calls[0].arguments["zoom_scale"] > 1.0
        assert task.metadata["glyph_height_view"] < 3.0  # strokes merged at view size
    assert kinds == {True, False}


def test_hard_privacy_lookup_names_where_the_plate_is():
    for seed in range(12):
        task = make_task("privacy_safe_lookup", seed, difficulty=1.0)
        if task.metadata["decoy_plates"]:
            assert "name plate is in the" in task.question
        easy = make_task("privacy_safe_lookup", seed, difficulty=0.0)
        assert not easy.metadata["decoy_plates"] and "name plate is in" not in easy.question


def test_faint_label_mask_is_the_faint_ink():
    from m3gym.tasks.render import lookup_scenes as S

    img = np.full((200, 400, 3), 90, np.uint8)
    rng = np.random.default_rng(3)
    label = S.draw_faint_label(img, rng, "K7-4F2", 9.0, 12.0, (60, 50), (230, 230, 230))
    x0, y0, x1, y1 = label.text.box
    gray = img[..., 1].astype(int)
    ink = gray[y0:y1, x0:x1][label.text.mask]
    assert ink.size > 20 and 210 <= ink.mean() <= 226  # 12 levels under the 230 plate, AA edges
    cx0, cy0, cx1, cy1 = label.crop_box
    assert cx0 <= x0 and cy0 <= y0 and cx1 >= x1 and cy1 >= y1  # the crop holds the text
    plate = gray[cy0:cy1, cx0:cx1]
    assert plate.min() >= 200  # ... and lies on the plate only (no background in it)
    assert 7.0 <= label.text.glyph_height <= 10.0


def test_camera_shot_spares_protected_boxes():
    from m3gym.tasks.render import lookup_scenes as S

    rng = np.random.default_rng(0)
    img = np.random.default_rng(1).integers(0, 255, (240, 320, 3)).astype(np.uint8)
    box = (100, 80, 160, 120)
    out = S.camera_shot(img, rng, 0.8, [box])
    src = img[80:120, 100:160].astype(np.float32)
    got = out[80:120, 100:160].astype(np.float32)
    gain = got.mean() / src.mean()
    assert np.abs(got - np.clip(src * gain, 0, 255)).max() <= 1.0  # a pure gain, no noise/JPEG
    assert not np.array_equal(out[:60], img[:60])  # elsewhere the camera changed the image
    assert S.camera_shot(img, rng, 0.0, [box]) is img
