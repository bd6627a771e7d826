"""The jersey's folds (m3gym.tasks.render.logo_hosts): the cropped blur gives the same bytes.

:func:`~m3gym.tasks.render.logo_hosts._shade_folds` blurs and multiplies only where the folds
reach; each step must equal the straightforward whole-image computation exactly.
"""

from __future__ import annotations

import cv2
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.tasks.render import logo_hosts as LH


def _folds(seed: int, h: int, w: int, lines: int) -> np.ndarray:
    """Return an ``h x w`` float32 map of ``lines`` anti-aliased streaks (some past the edges)."""
    rng = np.random.default_rng(seed)
    folds = np.zeros((h, w), np.float32)
    for _ in range(lines):
        x, y = int(rng.integers(-20, w + 20)), int(rng.integers(-20, h + 20))
        end = (x + int(rng.integers(-80, 80)), y + int(rng.integers(-40, h)))
        cv2.line(folds, (x, y), end, float(rng.uniform(0.05, 0.3)), int(rng.integers(1, 40)),
                 cv2.LINE_AA)
    return folds


def shade_folds_reference(img: np.ndarray, folds: np.ndarray, sigma: float, mask: np.ndarray,
                          box: tuple[int, int, int, int]) -> None:
    """The original: blur the whole map, multiply the whole box."""
    x0, y0, x1, y1 = box
    blurred = cv2.GaussianBlur(folds, (0, 0), sigma)
    f = blurred[y0:y1, x0:x1] * (mask[y0:y1, x0:x1] > 0)
    region = img[y0:y1, x0:x1].astype(np.float32) * (1.0 - f[..., None])
    img[y0:y1, x0:x1] = np.clip(region + 0.5, 0, 255).astype(np.uint8)


SHAPES = st.tuples(st.integers(0, 2**32 - 1), st.integers(1, 700), st.integers(1, 1100),
                   st.integers(0, 4), st.floats(0.6, 16.0))


@settings(max_examples=60, deadline=None)
@given(SHAPES)
def test_blur_support_equals_blurring_the_whole_image(case) -> None:
    seed, h, w, lines, sigma = case
    folds = _folds(seed, h, w, lines)
    (x0, y0, x1, y1), blurred = LH._blur_support(folds, sigma)
    whole = np.zeros_like(folds)
    whole[y0:y1, x0:x1] = blurred
    assert np.array_equal(whole, cv2.GaussianBlur(folds, (0, 0), sigma))
    assert x0 % LH._BLUR_ALIGN == 0


@settings(max_examples=60, deadline=None)
@given(SHAPES, st.integers(0, 2**32 - 1))
def test_shade_folds_equals_shading_the_whole_box(case, seed) -> None:
    fseed, h, w, lines, sigma = case
    rng = np.random.default_rng(seed)
    folds = _folds(fseed, h, w, lines)
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    mask = (rng.random((h, w)) < 0.8).astype(np.uint8) * 255
    xs, ys = sorted(rng.integers(0, w + 1, 2).tolist()), sorted(rng.integers(0, h + 1, 2).tolist())
    box = (xs[0], ys[0], xs[1], ys[1])
    fast, slow = img.copy(), img.copy()
    LH._shade_folds(fast, folds, sigma, mask, box)
    shade_folds_reference(slow, folds, sigma, mask, box)
    assert np.array_equal(fast, slow)


def test_the_blur_is_cropped_to_where_the_folds_reach() -> None:
    folds = np.zeros((400, 900), np.float32)
    folds[300:310, 700:705] = 0.2
    (x0, y0, x1, y1), blurred = LH._blur_support(folds, 3.0)
    assert (x0, y0, x1, y1) == (576, 285, 784, 325) and blurred.shape == (40, 208)
    assert LH._blur_support(np.zeros((5, 5), np.float32), 3.0)[0] == (0, 0, 0, 0)
