"""``warp_perspective`` warps a uint8 RGB image through four channels: the plain warp's bytes."""

from __future__ import annotations

import cv2
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.tasks.render.util import warp_perspective

BORDERS = (cv2.BORDER_CONSTANT, cv2.BORDER_REPLICATE)
FLAGS = (cv2.INTER_LINEAR, cv2.INTER_NEAREST)


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 200), st.integers(1, 200),
       st.integers(1, 260), st.integers(1, 260), st.sampled_from(BORDERS),
       st.sampled_from(FLAGS), st.floats(0.3, 2.0))
def test_rgb_warp_equals_the_plain_three_channel_warp(seed, h, w, out_w, out_h, border, flags,
                                                     scale):
    """Over random images and mild-to-strong homographies, every byte equals OpenCV's own."""
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    if seed % 3 == 0:  # paper with ink: long runs of one value
        img[:] = rng.integers(0, 256, 3, dtype=np.uint8)
        img[rng.random((h, w)) < 0.1] = 0
    src = np.float32([[0, 0], [w, 0], [w, h], [0, h]])
    dst = (src * scale + rng.uniform(-0.25, 0.25, (4, 2)).astype(np.float32) * [w, h]
           + rng.uniform(-20, 20, 2).astype(np.float32))
    m = cv2.getPerspectiveTransform(src, dst.astype(np.float32))
    got = warp_perspective(img, m, (out_w, out_h), flags, border)
    want = cv2.warpPerspective(img, m, (out_w, out_h), flags=flags, borderMode=border)
    assert got.shape == want.shape and got.flags.c_contiguous
    assert np.array_equal(got, want)


def test_other_images_are_warped_as_they_are():
    """Grey, four-channel and float images take the plain call."""
    rng = np.random.default_rng(0)
    m = np.array([[1.1, 0.05, 3.0], [0.02, 0.95, -2.0], [1e-4, -2e-4, 1.0]])
    for img in (rng.integers(0, 256, (40, 50), dtype=np.uint8),
                rng.integers(0, 256, (40, 50, 4), dtype=np.uint8),
                rng.random((40, 50, 3), dtype=np.float32)):
        assert np.array_equal(warp_perspective(img, m, (60, 30)),
                              cv2.warpPerspective(img, m, (60, 30), flags=cv2.INTER_LINEAR))
