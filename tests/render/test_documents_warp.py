"""The four-channel warps of ``documents.photograph`` give each channel's own warp, byte for byte."""

from __future__ import annotations

import cv2
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.tasks.render import documents as D


@st.composite
def sheets_and_warps(draw: st.DrawFn) -> tuple[np.ndarray, np.ndarray, tuple[int, int]]:
    """A random RGB sheet, a sheet-like homography (tilt, roll, scale, shift) and a canvas."""
    h, w = draw(st.integers(3, 160)), draw(st.integers(3, 160))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    rgb = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    if draw(st.booleans()):  # paper with ink: long runs of one value, as a page has
        rgb[:] = rng.integers(200, 256, 3, dtype=np.uint8)
        rgb[rng.random((h, w)) < 0.1] = rng.integers(0, 80, 3, dtype=np.uint8)
    scale = draw(st.floats(0.3, 1.8))
    quad = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float64) * scale
    quad += rng.uniform(-0.15, 0.15, (4, 2)) * np.array([w, h]) * scale
    quad += rng.uniform(-30.0, 30.0, 2)
    hom = D.sheet_homography((w, h), quad)
    size = (draw(st.integers(1, 260)), draw(st.integers(1, 260)))
    return rgb, hom, size


@settings(max_examples=300, deadline=None)
@given(sheets_and_warps())
def test_warp_with_cover_is_two_warps(case: tuple[np.ndarray, np.ndarray, tuple[int, int]]
                                      ) -> None:
    """The RGB and coverage of one four-channel warp equal a warp of each alone."""
    rgb, hom, size = case
    warped, cover = D._warp_with_cover(rgb, hom, size)
    shift = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.0, 0.0, 1.0]])  # _warp's centring
    plain = cv2.warpPerspective(rgb, np.linalg.inv(shift) @ hom @ shift, size,
                                flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT)
    assert np.array_equal(warped, plain)  # the plain three-channel warp
    assert np.array_equal(D._warp(rgb, hom, size), plain)
    full = np.full(rgb.shape[:2], 255, np.uint8)
    assert np.array_equal(cover, D._warp(full, hom, size))
    assert warped.flags.c_contiguous and cover.flags.c_contiguous


@settings(max_examples=200, deadline=None)
@given(sheets_and_warps(), st.integers(1, 9))
def test_warp_planes_is_each_warp(case: tuple[np.ndarray, np.ndarray, tuple[int, int]],
                                  count: int) -> None:
    """Planes warped four per call equal each plane's own warp, in order, for any count."""
    rgb, hom, size = case
    rng = np.random.default_rng(count)
    planes = [np.where(rng.random(rgb.shape[:2]) < 0.3, 255, 0).astype(np.uint8)
              for _ in range(count)]
    planes[0] = np.ascontiguousarray(rgb[..., 0])  # grey levels too, not only 0/255
    got = D._warp_planes(planes, hom, size)
    assert len(got) == count
    for plane, warped in zip(planes, got):
        assert np.array_equal(warped, D._warp(plane, hom, size))


def test_warp_planes_of_nothing() -> None:
    """No planes, no warps."""
    assert D._warp_planes([], np.eye(3), (4, 4)) == []


@settings(max_examples=150, deadline=None)
@given(st.integers(20, 300), st.integers(20, 300), st.floats(-6.0, 6.0), st.floats(0.0, 0.06),
       st.floats(0.5, 1.5), st.integers(0, 2**32 - 1))
def test_covered_box_shows_the_sheet_alone(w: int, h: int, angle: float, strength: float,
                                           scale: float, seed: int) -> None:
    """Inside ``covered_box`` a photographed sheet's pixels do not depend on the background."""
    rng = np.random.default_rng(seed)
    sheet = D.Sheet.blank(w, h, (250, 248, 240))
    sheet.rgb[rng.random((h, w)) < 0.2] = (20, 20, 30)
    sw, sh = int(w * scale) + 60, int(h * scale) + 60
    quad = D.sheet_quad(rng, (w, h), scale, (sw / 2 + rng.uniform(-20, 20),
                                             sh / 2 + rng.uniform(-20, 20)), angle, strength)
    x0, y0, x1, y1 = D.covered_box((w, h), quad, sw, sh)
    dark = D.photograph(np.zeros((sh, sw, 3), np.uint8), sheet, quad).scene
    light = D.photograph(np.full((sh, sw, 3), 255, np.uint8), sheet, quad).scene
    assert np.array_equal(dark[y0:y1, x0:x1], light[y0:y1, x0:x1])


def test_covered_box_of_an_upright_sheet_is_the_sheet_less_its_margin() -> None:
    """An upright, unscaled sheet at (40, 30) covers its own pixels but a margin's width."""
    quad = np.array([[40, 30], [240, 30], [240, 130], [40, 130]], np.float64)
    m = int(D.COVER_MARGIN)
    assert D.covered_box((200, 100), quad, 300, 200) == (40 + m, 30 + m, 240 - m, 130 - m)
    assert D.covered_box((200, 100), quad, 100, 200) == (40 + m, 30 + m, 100, 130 - m)
    assert D.covered_box((4, 4), quad[[0, 0, 0, 0]] + [[0, 0], [4, 0], [4, 4], [0, 4]], 300,
                         200) == (0, 0, 0, 0)
