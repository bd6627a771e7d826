"""The fast view downscale (m3gym.view) against OpenCV's exact ``INTER_AREA``."""

from __future__ import annotations

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.tasks.registry import family_names, make_task
from m3gym.view import area_downscale, block_factor, to_view, view_shape

MAX_MEAN_ABS_ERROR = 2.0
"""Mean absolute error (grey levels) allowed against ``INTER_AREA`` on task images."""

MIN_PSNR_DB = 32.0
"""Lowest PSNR against ``INTER_AREA`` allowed on task images."""


def inter_area_view(img: np.ndarray, view_size: int) -> np.ndarray:
    """The reference: ``INTER_AREA`` straight to the view size, then RGB."""
    h, w = img.shape[:2]
    vh, vw = view_shape(h, w, view_size)
    if img.ndim == 2:
        img = cv2.cvtColor(img, cv2.COLOR_GRAY2RGB)
    if (vh, vw) == (h, w):
        return img
    return cv2.resize(img, (vw, vh), interpolation=cv2.INTER_AREA)


def test_block_factor_by_hand():
    assert block_factor(1024, 1024, 768, 768) == 1
    assert block_factor(1200, 1600, 576, 768) == 2  # 1600/768 = 2.08
    assert block_factor(1603, 2197, 560, 768) == 2  # 2.86
    assert block_factor(2304, 3072, 576, 768) == 4
    assert block_factor(10, 10, 0, 0) == 10


def test_integer_factor_equals_inter_area():
    rng = np.random.default_rng(0)
    img = rng.integers(0, 256, (1024, 1536, 3), dtype=np.uint8)
    assert np.array_equal(to_view(img, 768), inter_area_view(img, 768))


def test_block_means_then_one_bilinear_step_by_hand():
    # 6x6 -> 2x2 is factor 3 (one block-mean step): each output is the mean of a 3x3 block
    img = np.arange(36, dtype=np.uint8).reshape(6, 6) * 7
    out = area_downscale(img, 2, 2)
    expect = np.array([[img[:3, :3].mean(), img[:3, 3:].mean()],
                       [img[3:, :3].mean(), img[3:, 3:].mean()]])
    assert np.array_equal(out, np.round(expect).astype(np.uint8))
    # 5x5 -> 2x2 is factor 2.5: blocks of 2 over the first 4 rows/columns, then 2x2 is reached
    img5 = np.arange(25, dtype=np.uint8).reshape(5, 5) * 9
    out5 = area_downscale(img5, 2, 2)
    assert np.array_equal(out5, cv2.resize(img5[:4, :4], (2, 2), interpolation=cv2.INTER_AREA))


def test_small_images_are_returned_read_only_without_resampling():
    img = np.zeros((100, 80, 3), np.uint8)
    img[10, 10] = 200
    out = to_view(img, 768)
    assert np.array_equal(out, img) and not out.flags.writeable
    assert img.flags.writeable  # the caller's array keeps its flags
    gray = np.full((50, 40), 7, np.uint8)
    out_g = to_view(gray, 768)
    assert out_g.shape == (50, 40, 3) and not out_g.flags.writeable and out_g.max() == 7


def test_gray_is_shrunk_then_expanded():
    rng = np.random.default_rng(1)
    gray = rng.integers(0, 256, (1200, 1600), dtype=np.uint8)
    out = to_view(gray, 768)
    assert out.shape == (576, 768, 3)
    assert np.array_equal(out, to_view(cv2.cvtColor(gray, cv2.COLOR_GRAY2RGB), 768))


@pytest.mark.parametrize("family", [f for lvl in (1, 2, 3) for f in family_names(lvl)])
def test_task_images_stay_close_to_inter_area(family):
    task = make_task(family, 0)
    for img in task.images:
        ref = inter_area_view(img, 768)
        out = to_view(img, 768)
        assert out.shape == ref.shape and out.dtype == np.uint8
        err = np.abs(out.astype(np.int16) - ref).mean()
        assert err <= MAX_MEAN_ABS_ERROR, (family, img.shape, err)
        assert cv2.PSNR(out, ref) >= MIN_PSNR_DB, (family, img.shape)


@settings(max_examples=30, deadline=None)
@given(h=st.integers(8, 900), w=st.integers(8, 900), view=st.integers(32, 400),
       seed=st.integers(0, 2**16))
def test_smooth_images_of_any_size_stay_close(h, w, view, seed):
    # content that varies over about 8 output pixels: an image the view can show
    rng = np.random.default_rng(seed)
    vh, vw = view_shape(h, w, view)
    coarse = rng.integers(0, 256, (max(1, vh // 8), max(1, vw // 8), 3), dtype=np.uint8)
    img = cv2.resize(coarse, (w, h), interpolation=cv2.INTER_LINEAR)
    out = to_view(img, view)
    ref = inter_area_view(img, view)
    assert out.shape == ref.shape == (*view_shape(h, w, view), 3)
    assert np.abs(out.astype(np.int16) - ref).mean() <= MAX_MEAN_ABS_ERROR
