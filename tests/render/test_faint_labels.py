"""The lookup scenes' evidence (m3gym.tasks.render.faint_labels): faint labels and decoys."""

from __future__ import annotations

import numpy as np

from m3gym.tasks import render as R
from m3gym.tasks.render import faint_labels as F


def test_faint_label_returns_its_ink_and_a_crop_inside_the_plate() -> None:
    img = np.full((300, 400, 3), 90, np.uint8)
    label = F.draw_faint_label(img, np.random.default_rng(3), "K7-4F2", 9.0, 12.0, (100, 120),
                               (236, 232, 220))
    px0, py0, px1, py1 = label.plate
    tx0, ty0, tx1, ty1 = label.text.box
    cx0, cy0, cx1, cy1 = label.crop_box
    assert px0 <= cx0 <= tx0 < tx1 <= cx1 <= px1 and py0 <= cy0 <= ty0 < ty1 <= cy1 <= py1
    assert label.text.mask.shape == (ty1 - ty0, tx1 - tx0) and label.text.mask.any()
    assert 7.0 < label.text.glyph_height < 10.0  # the perspective shrinks it a little
    ink = img[ty0:ty1, tx0:tx1][label.text.mask].mean(axis=1)
    paper = img[cy0:cy1, cx0:cx1].reshape(-1, 3).mean(axis=1)
    assert float(np.median(paper) - ink.mean()) > 4.0  # faint, but darker than the plate


def test_label_size_is_the_plate_drawn() -> None:
    rng = np.random.default_rng(0)
    patch = F.evidence_patch(rng, "AB-123", 8.0)
    w, h = F.label_size(patch)
    crop_pad, pad = F.label_pads(patch)
    assert (w, h) == (patch.size[0] + 2 * pad, patch.size[1] + 2 * pad) and crop_pad < pad


def test_decoys_stay_out_of_the_named_part() -> None:
    img = np.full((600, 800, 3), 120, np.uint8)
    keep: list[R.Box] = []
    drawn = F.draw_decoy_labels(img, np.random.default_rng(5), ["X1-22", "Y3-44", "Z5-66"],
                                (8.0, 10.0), (10.0, 20.0), keep, "top-left")
    assert drawn and len(keep) == len(drawn)
    assert all(R.position_phrase(b, 800, 600) != "top-left" for b in keep)
