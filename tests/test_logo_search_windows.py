"""Reverse image search's window sampling (m3gym.web.logo_search) gives the same numbers fast.

:func:`~m3gym.web.logo_search.window_gather` gathers the windows directly; the samples must
equal those read through a sliding-window view (the original) exactly.
"""

from __future__ import annotations

import cv2
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.web import logo_search as LSR


def window_pixels_reference(image: np.ndarray, groups, size: int,
                            blur: float = LSR.DESCRIPTOR_BLUR) -> np.ndarray:
    """The original: every window read from a sliding-window view of the scaled image."""
    rows = []
    for group in groups:
        f = size / group[0][2]
        scaled = LSR._soften(cv2.resize(image, None, fx=f, fy=f,
                                        interpolation=cv2.INTER_AREA if f < 1
                                        else cv2.INTER_LINEAR), blur)
        sh, sw = scaled.shape[:2]
        if sh < size + 1 or sw < size + 1:
            grow_y, grow_x = max(0, size + 1 - sh), max(0, size + 1 - sw)
            scaled = cv2.copyMakeBorder(scaled, 0, grow_y, 0, grow_x, cv2.BORDER_REPLICATE)
            sh, sw = scaled.shape[:2]
        win = (size + 1, size + 1) if scaled.ndim == 2 else (size + 1, size + 1,
                                                             scaled.shape[2])
        views = np.lib.stride_tricks.sliding_window_view(scaled, win)
        sx = np.clip(np.array([g[0] for g in group], np.float32) * f, 0, sw - size - 1)
        sy = np.clip(np.array([g[1] for g in group], np.float32) * f, 0, sh - size - 1)
        ix, iy = np.floor(sx).astype(int), np.floor(sy).astype(int)
        ax = (sx - ix).reshape(-1, 1, 1, *([1] if scaled.ndim == 3 else []))
        ay = (sy - iy).reshape(ax.shape)
        patch = views[iy, ix]
        if scaled.ndim == 3:
            patch = patch[:, 0]
        top = patch[:, :-1, :-1] + ax * (patch[:, :-1, 1:] - patch[:, :-1, :-1])
        bottom = patch[:, 1:, :-1] + ax * (patch[:, 1:, 1:] - patch[:, 1:, :-1])
        rows.append((top + ay * (bottom - top)).reshape(len(group), -1))
    return np.concatenate(rows).astype(np.float32)


@st.composite
def queries(draw):
    """A random float32 gray or RGB query and groups of same-side windows inside (or past) it."""
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    h, w = draw(st.integers(8, 120)), draw(st.integers(8, 120))
    shape = (h, w) if draw(st.booleans()) else (h, w, 3)
    image = (rng.random(shape) * 255).astype(np.float32)
    groups = []
    for _ in range(draw(st.integers(1, 4))):
        side = float(rng.uniform(4.0, min(h, w) * 1.1))
        # a window wider than the query starts at -3: its far side lies past the edge
        x_hi, y_hi = max(-3.0, w - side + 3), max(-3.0, h - side + 3)
        groups.append([(float(rng.uniform(-3, x_hi)), float(rng.uniform(-3, y_hi)), side)
                       for _ in range(int(rng.integers(1, 10)))])
    return image, groups


@settings(max_examples=80, deadline=None)
@given(queries(), st.sampled_from([LSR.COARSE_SIZE, LSR.DESCRIPTOR_SIZE, LSR.COLOUR_SIZE]),
       st.sampled_from([0.0, LSR.DESCRIPTOR_BLUR]))
def test_window_pixels_equal_reading_a_sliding_window_view(query, size, blur) -> None:
    image, groups = query
    fast = LSR.window_pixels(image, groups, size, blur)
    assert np.array_equal(fast, window_pixels_reference(image, groups, size, blur))


def test_window_gather_reads_the_windows_at_their_top_left() -> None:
    image = np.arange(5 * 6, dtype=np.float32).reshape(5, 6)
    out = LSR.window_gather(image, np.array([0, 3]), np.array([2, 1]), 2)
    assert out.tolist() == [[[12, 13], [18, 19]], [[9, 10], [15, 16]]]
