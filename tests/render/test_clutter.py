"""Clutter stays inside its boxes (m3gym.tasks.render.clutter).

Every pixel :func:`R.add_clutter` / :func:`R.add_distractor_labels` changes lies in a box they
return (one pixel of anti-aliasing allowed), every returned box lies in ``bounds``, and nothing
is drawn into an ``avoid`` box: rotated ellipses, thick lines' caps, arrow icons and slanted
text included.
"""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.tasks import render as R


def _scene(seed: int, width: int, height: int, n_avoid: int
           ) -> tuple[np.ndarray, np.random.Generator, list[tuple[int, int, int, int]],
                      tuple[int, int, int, int]]:
    """Return a flat image, a generator, ``n_avoid`` reserved boxes and drawing bounds."""
    rng = np.random.default_rng(seed)
    img = np.full((height, width, 3), 128, np.uint8)
    avoid = []
    for _ in range(n_avoid):
        bw, bh = int(rng.integers(10, width // 3)), int(rng.integers(10, height // 3))
        x, y = int(rng.integers(0, width - bw)), int(rng.integers(0, height - bh))
        avoid.append((x, y, x + bw, y + bh))
    bx0, by0 = int(rng.integers(0, width // 4)), int(rng.integers(0, height // 4))
    bounds = (bx0, by0, width - int(rng.integers(0, width // 4)),
              height - int(rng.integers(0, height // 4)))
    return img, rng, avoid, bounds


def _check(img: np.ndarray, boxes: list, avoid: list, bounds: tuple[int, int, int, int],
           aa: int) -> None:
    """Assert the drawn pixels lie in ``boxes`` (+ ``aa`` px), inside ``bounds``, off ``avoid``."""
    changed = (img != 128).any(axis=2)
    for x0, y0, x1, y1 in avoid:
        assert not changed[y0:y1, x0:x1].any(), "clutter drawn into a reserved box"
    mask = np.zeros_like(changed)
    for x0, y0, x1, y1 in boxes:
        assert bounds[0] <= x0 < x1 <= bounds[2] and bounds[1] <= y0 < y1 <= bounds[3]
        mask[max(0, y0 - aa):y1 + aa, max(0, x0 - aa):x1 + aa] = True
    assert not (changed & ~mask).any(), "clutter drawn outside the box it returned"


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 25), st.sampled_from([(320, 240), (640, 480),
                                                                      (900, 1200)]),
       st.integers(0, 4), st.sampled_from([(0.04, 0.16), (0.08, 0.3)]))
def test_add_clutter_stays_in_its_boxes(seed, count, size, n_avoid, size_range):
    img, rng, avoid, bounds = _scene(seed, size[0], size[1], n_avoid)
    boxes = R.add_clutter(img, rng, count, avoid, size_range, bounds)
    _check(img, boxes, avoid, bounds, aa=0)


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 10), st.sampled_from([(480, 360), (900, 700)]),
       st.integers(0, 4), st.booleans())
def test_distractor_labels_stay_in_their_boxes(seed, count, size, n_avoid, plate):
    img, rng, avoid, bounds = _scene(seed, size[0], size[1], n_avoid)
    labels = R.add_distractor_labels(img, rng, count, avoid, bounds=bounds, plate=plate)
    changed = (img != 128).any(axis=2)
    for x0, y0, x1, y1 in avoid:
        assert not changed[y0:y1, x0:x1].any(), "a label drawn into a reserved box"
    mask = np.zeros_like(changed)
    for lab in labels:
        x0, y0, x1, y1 = lab.box
        assert bounds[0] <= x0 < x1 <= bounds[2] and bounds[1] <= y0 < y1 <= bounds[3]
        pad = max(4, int(lab.glyph_height * 0.4)) if plate else 0
        mask[max(0, y0 - pad):y1 + pad, max(0, x0 - pad):x1 + pad] = True
    assert not (changed & ~mask).any(), "a label drawn outside its plate"


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 4), st.floats(0.1, 1.0))
def test_soft_shadow_never_darkens_a_keep_box(seed, n_keep, strength):
    img, rng, keep, _ = _scene(seed, 400, 300, n_keep)
    x0, y0 = int(rng.integers(0, 300)), int(rng.integers(0, 200))
    box = (x0, y0, x0 + int(rng.integers(20, 100)), y0 + int(rng.integers(20, 100)))
    keep = [k for k in keep if not R.boxes_overlap(k, box, 0)]
    out = R.soft_shadow(img, rng, box, strength, keep=keep)
    for kx0, ky0, kx1, ky1 in keep:
        assert np.array_equal(out[ky0:ky1, kx0:kx1], img[ky0:ky1, kx0:kx1])
    again = R.soft_shadow(img, np.random.default_rng(seed), box, strength)
    assert again.shape == img.shape  # without keep: the draws are the same ones


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 3))
def test_stickers_and_props_leave_avoid_boxes_alone(seed, n_avoid):
    from m3gym.tasks.render.scene_dressing import add_props, add_stickers

    img, rng, avoid, _ = _scene(seed, 1000, 800, n_avoid)
    before = img.copy()
    stickers = add_stickers(img, rng, 4, avoid)
    add_props(img, rng, 4, [*avoid, *stickers])
    for x0, y0, x1, y1 in avoid:
        assert np.array_equal(img[y0:y1, x0:x1], before[y0:y1, x0:x1]), "drawn into an avoid box"
