"""The faint_text family: faded ink under uneven shading, restored by a contrast operation."""

from __future__ import annotations

from functools import cache

import cv2
import numpy as np
import pytest
from PIL import Image, ImageOps

from m3gym.spec import Evidence, Task
from m3gym.tasks import render as R
from m3gym.tasks.registry import get_family, make_task

SEEDS = range(60)


MIN_CONTRAST = Evidence.min_contrast


@cache
def task(family: str, seed: int) -> Task:
    return make_task(family, seed)


def all_tasks(family: str) -> list[Task]:
    return [task(family, s) for s in SEEDS]


def ncc(a: np.ndarray, b: np.ndarray) -> float:
    """Normalized correlation of two equally shaped gray arrays (-1 when shapes differ)."""
    if a.shape != b.shape:
        return -1.0
    x = a.astype(np.float64) - a.mean()
    y = b.astype(np.float64) - b.mean()
    den = np.sqrt((x * x).sum() * (y * y).sum())
    return float((x * y).sum() / den) if den else 0.0


def region(img: np.ndarray, box) -> np.ndarray:
    x0, y0, x1, y1 = (int(v) for v in box)
    return img[y0:y1, x0:x1]


def apply_reference(img: np.ndarray, call) -> np.ndarray:
    """Apply a rotate (CCW positive, expand) / flip / autocontrast reference call with numpy/PIL."""
    a = call.arguments
    if call.name == "rotate":
        assert a["expand"] is True and a["angle"] % 90 == 0
        return np.rot90(img, k=(a["angle"] // 90) % 4)
    if call.name == "flip":
        return {"horizontal": img[:, ::-1], "vertical": img[::-1]}[a["direction"]]
    if call.name == "autocontrast":
        return np.asarray(ImageOps.autocontrast(Image.fromarray(img), cutoff=a["cutoff"]))
    raise AssertionError(call.name)


def test_faint_text_invisible_before_and_visible_after_autocontrast():
    for t in all_tasks("faint_text"):
        img = t.images[0]
        (ev,) = t.evidence
        before = R.ink_surround_contrast(region(img, ev.box), ev.mask)
        assert before < 10.0 < MIN_CONTRAST
        assert before == pytest.approx(t.metadata["ink_contrast"])
        # whole image has a low dynamic range: the compressed span plus the shading
        lo, hi = np.percentile(R.to_gray(img), [1, 99])
        assert hi - lo < t.metadata["dynamic_range"] + t.metadata["shading"] + 4
        call = t.reference[0][0]
        assert call.name == "autocontrast" and call.arguments["cutoff"] > 0
        fixed = apply_reference(img, call)
        assert np.array_equal(fixed, R.autocontrast_pil(img, call.arguments["cutoff"]))
        after = R.ink_surround_contrast(region(fixed, ev.box), ev.mask)
        assert after >= 1.3 * MIN_CONTRAST
        # the clean render shows the same text at full contrast
        assert R.ink_surround_contrast(ev.clean, ev.mask) > 100


def test_faint_text_shading_defeats_one_global_threshold():
    """The paper's lighting varies over the page by well over the ink depth (2.5x at least)."""
    for t in all_tasks("faint_text")[:20]:
        (ev,) = t.evidence
        c = t.metadata["ink_contrast"]
        assert t.metadata["shading"] >= 2.4 * c
        x0, y0, x1, y1 = t.metadata["page_box"]
        page = R.to_gray(t.images[0])[y0:y1, x0:x1]
        # paper level: close away the ink, then smooth away the noise
        paper = cv2.blur(cv2.morphologyEx(page, cv2.MORPH_CLOSE, np.ones((25, 25), np.uint8)),
                         (31, 31))
        inner = paper[40:-40, 40:-40]
        assert float(inner.max()) - float(inner.min()) >= 2.0 * c


def test_faint_text_shading_field_is_smooth_and_deterministic():
    from m3gym.tasks.families._text_common import shading_field

    a = shading_field(np.random.default_rng(3), 300, 400, 20.0)
    b = shading_field(np.random.default_rng(3), 300, 400, 20.0)
    assert a.dtype == np.uint8 and a.shape == (300, 400) and np.array_equal(a, b)
    assert int(a.min()) == 0 and int(a.max()) == 20
    # smooth: neighbouring pixels differ by at most one level
    assert int(np.abs(np.diff(a.astype(np.int16), axis=1)).max()) <= 1
    assert int(np.abs(np.diff(a.astype(np.int16), axis=0)).max()) <= 1


def test_faint_text_validate_rejects_shallow_or_unrestorable_shading():
    cls = get_family("faint_text")
    with pytest.raises(ValueError, match="shading"):
        cls(shading=(1.0, 2.0)).validate()
    with pytest.raises(ValueError, match="restore"):
        cls(shading=(4.0, 6.0)).validate()
