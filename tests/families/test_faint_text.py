"""The faint_text family: values printed below what the view resolves, restored by a stretch."""

from __future__ import annotations

import numpy as np
import pytest

from m3gym.scoring.checkpoints import measure_evidence
from m3gym.tasks import render as R
from m3gym.tasks.families._text_common import hidden_ink, hidden_ink_offsets
from m3gym.tasks.registry import get_family, make_task
from m3gym.view import VIEW_SIZE, to_view
from tests.family_helpers import apply_reference, region, replay


def _view_region(img: np.ndarray, box) -> np.ndarray:
    """Return the reset view's pixels strictly inside ``box`` (root coordinates)."""
    view = to_view(img, VIEW_SIZE)
    s = view.shape[0] / img.shape[0]
    x0, y0, x1, y1 = box
    return view[int(np.ceil(y0 * s)) + 1:int(y1 * s) - 1, int(np.ceil(x0 * s)) + 1:int(x1 * s) - 1]


@pytest.mark.parametrize("seed", range(8))
def test_faint_text_values_are_not_in_the_view_and_the_stretch_restores_them(seed: int) -> None:
    t = make_task("faint_text", seed)
    img = t.images[0]
    (ev,) = t.evidence
    assert img.shape[:2] == (1536, 2048) and t.metadata["block_factor"] == 2
    # the whole photo spans the compressed range (the paper its top level)
    for c in range(3):
        lo, hi = np.percentile(img[..., c], [1, 99])
        assert hi - lo <= t.metadata["dynamic_range"]
    # full resolution: dots 2 levels under the paper; the view: every pixel is the paper
    full = region(img, ev.box).astype(int)
    assert all(int(full[..., c].max() - full[..., c].min()) == 2 for c in range(3))
    seen = _view_region(img, ev.box)
    assert all(int(seen[..., c].min()) == int(seen[..., c].max()) for c in range(3))
    # one autocontrast of the full photo shows the value at view size; the photo does not
    assert [[c.name for c in s] for s in t.reference] == [["autocontrast"]]
    state, _ = replay(t)
    assert not measure_evidence(state[0], ev, VIEW_SIZE).passed
    view = measure_evidence(state[1], ev, VIEW_SIZE)
    assert view.passed and view.contrast >= 1.3 * ev.min_contrast
    assert np.array_equal(state[1].array, apply_reference(img, t.reference[0][0]))
    # the same stretch of the reset view (what a policy can compute from it) shows nothing
    stretched_view = R.autocontrast_pil(np.ascontiguousarray(to_view(img, VIEW_SIZE)), 1.0)
    s = stretched_view.shape[0] / img.shape[0]
    x0, y0, x1, y1 = ev.box
    inner = stretched_view[int(np.ceil(y0 * s)) + 1:int(y1 * s) - 1,
                           int(np.ceil(x0 * s)) + 1:int(x1 * s) - 1]
    assert all(int(inner[..., c].min()) == int(inner[..., c].max()) for c in range(3))


def test_hidden_ink_rounds_away_at_every_block_factor() -> None:
    import cv2

    for k in (2, 3, 4):
        img = np.full((12 * k, 12 * k, 3), 150, np.uint8)
        mask = np.ones((12 * k - 2, 12 * k - 3), bool)
        dots = hidden_ink(img, mask, 1, 2, k)
        assert int(dots.sum()) > 0 and len(hidden_ink_offsets(k)) == k * k // 4
        blocks = cv2.resize(img, (12, 12), interpolation=cv2.INTER_AREA)
        assert int(blocks.min()) == int(blocks.max()) == 150
        assert int(img.min()) == 148


def test_faint_text_validate_rejects_wide_ranges_and_small_photos() -> None:
    cls = get_family("faint_text")
    with pytest.raises(ValueError, match="restore"):
        cls(levels=(2, 4)).validate()
    with pytest.raises(ValueError, match="twice the view"):
        cls(width=1024, height=768, glyph_min=30.0, glyph_max=40.0).validate()
    cls().validate()
    for d in (0.0, 0.5, 1.0):
        cls(**cls.difficulty_knobs(d)).validate()
