"""The faint_text family: faded ink under uneven shading, restored by a contrast operation."""

from __future__ import annotations

import cv2
import numpy as np
import pytest

from m3gym.spec import Evidence
from m3gym.tasks import render as R
from m3gym.tasks.registry import get_family
from tests.family_helpers import all_tasks, apply_reference, region

MIN_CONTRAST = Evidence.min_contrast












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
