"""The camera's sharp ``keep`` blend gives the very bytes of the one whole-box blend it replaced.

:func:`m3gym.tasks.render.camera.render_camera` (and :class:`~m3gym.tasks.render.camera.BandRenderer`)
once blended the sharp shot over the blurred one with ``cv2.blendLinear`` on the whole bounding
box of the grown ``keep`` boxes; now the largest box of weight exactly 1 is copied from the shot
and only the strips around it are blended. These tests pin the two facts that makes exact
(``blendLinear`` with weights 1 / 0 returns its first / second input for every ``uint8``, and it
works pixel by pixel, so blending tiles equals blending their union) and compare the renders
against a verbatim copy of the former code on random images, draws and boxes (overlapping, at
the borders, outside the image, inverted).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import replace

import cv2
import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.geometry import grow_box
from m3gym.tasks.render import camera as C
from m3gym.tasks.render.degradations import add_drawn_noise, jpeg_artifacts


def _render_reference(img: np.ndarray, d: C.CameraDraw,
                      keep: Sequence[Sequence[float]] = ()) -> np.ndarray:
    """The former ``camera.render_camera``, verbatim: one blend over the whole grown box."""
    h, w = img.shape[:2]
    shot = C._apply_gain(img, d.gain)
    if d.blur is not None:
        blurred = C._kernel_filter(shot, *d.blur)
        if keep:
            feather = 0.02 * max(h, w)
            sharp = C._keep_mask(h, w, keep, feather)  # unchanged by the sharp-box copy
            grown = [grow_box(k, 2 * feather, w, h) for k in keep]
            x0, y0 = min(g[0] for g in grown), min(g[1] for g in grown)
            x1, y1 = max(g[2] for g in grown), max(g[3] for g in grown)
            s = sharp[y0:y1, x0:x1]
            blurred[y0:y1, x0:x1] = cv2.blendLinear(shot[y0:y1, x0:x1], blurred[y0:y1, x0:x1], s,
                                                    np.float32(1.0) - s)
        shot = blurred
    if d.noise is not None:
        shot = add_drawn_noise(shot, d.sigma, d.noise, inplace=shot is not img)
    return jpeg_artifacts(shot, d.quality)


def _all_pairs() -> tuple[np.ndarray, np.ndarray]:
    """Return two ``(256, 256, 3)`` images holding every pair of ``uint8`` values per channel."""
    a = np.repeat(np.arange(256, dtype=np.uint8)[:, None], 256, axis=1)
    b = np.ascontiguousarray(a.T)
    return (np.ascontiguousarray(np.stack([a, b, a[::-1]], -1)),
            np.ascontiguousarray(np.stack([b, a, b[:, ::-1]], -1)))


def test_blend_weight_one_is_the_first_image_and_zero_the_second_for_every_uint8():
    """``(a * 1 + b * 0) / (1 + 1e-5)`` rounds to ``a`` (and ``(a * 0 + b * 1)`` to ``b``).

    Every pair of values, at widths and offsets that run the vector loop and the scalar tail;
    ``1 - s`` is exactly 0 (1) where ``s`` is 1 (0).
    """
    a, b = _all_pairs()
    assert np.float32(1.0) - np.float32(1.0) == 0.0
    for width in (256, 255, 33, 17, 5, 1):
        for off in (0, 1, 3, 7):
            x, y = a[:, off:off + width], b[:, off:off + width]
            one = np.ones(x.shape[:2], np.float32)
            zero = np.zeros_like(one)
            assert np.array_equal(cv2.blendLinear(x, y, one, np.float32(1.0) - one), x)
            assert np.array_equal(cv2.blendLinear(x, y, zero, np.float32(1.0) - zero), y)


def _blend_model(x: np.ndarray, y: np.ndarray, s: np.ndarray) -> np.ndarray:
    """Return ``blendLinear(x, y, s, 1 - s)`` computed pixel by pixel in float32 (no fused ops)."""
    w1, w2 = s[..., None], (np.float32(1.0) - s)[..., None]
    num = x.astype(np.float32) * w1 + y.astype(np.float32) * w2
    return np.clip(np.rint(num / ((w1 + w2) + np.float32(1e-5))), 0, 255).astype(np.uint8)


def test_blend_is_pixel_by_pixel_so_tiles_give_the_whole_blend():
    """A pixel's blend depends on its own values only, not on where it lies in the call.

    The vector loop and the scalar tail give the unfused float32 formula on every pixel
    (including the values where a fused multiply-add would round otherwise), so blending
    strips of any width equals blending their union.
    """
    rng = np.random.default_rng(7)
    for h, w in ((97, 613), (40, 1000)):
        x = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        y = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
        s = rng.random((h, w), dtype=np.float32)
        whole = cv2.blendLinear(x, y, s, np.float32(1.0) - s)
        assert np.array_equal(whole, _blend_model(x, y, s))
        cuts = [0, *sorted(rng.choice(np.arange(1, w), 40, replace=False).tolist()), w]
        tiles = np.concatenate([cv2.blendLinear(x[:, a:b], y[:, a:b], s[:, a:b],
                                                np.float32(1.0) - s[:, a:b])
                                for a, b in zip(cuts, cuts[1:])], axis=1)
        assert np.array_equal(tiles, whole)


def test_blend_tiles_cover_the_region_once():
    """The strips and the solid part tile the region exactly, whatever the solid box."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        (x0, x1), (y0, y1) = sorted(rng.integers(0, 60, 2).tolist()), sorted(
            rng.integers(0, 60, 2).tolist())
        region = (x0, y0, x1, y1)
        solid = tuple(int(v) for v in rng.integers(-10, 70, 4))
        tiles, inside = C._blend_tiles(region, solid)
        count = np.zeros((60, 60), int)
        for x0, y0, x1, y1 in tiles + ([inside] if inside else []):
            assert x1 > x0 and y1 > y0
            count[y0:y1, x0:x1] += 1
        want = np.zeros((60, 60), int)
        want[region[1]:region[3], region[0]:region[2]] = 1
        assert np.array_equal(count, want)


def _page(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Return a random image with smooth and sharp parts (blur and JPEG both change it)."""
    img = cv2.resize(rng.integers(0, 256, (max(2, h // 8), max(2, w // 8), 3), dtype=np.uint8),
                     (w, h), interpolation=cv2.INTER_LINEAR)
    img[::5] = rng.integers(0, 256, img[::5].shape, dtype=np.uint8)
    return img


coord = st.one_of(st.floats(-0.6, 1.6, allow_nan=False), st.sampled_from([0.0, 1.0, -2.0, 3.0]))


@st.composite
def camera_cases(draw: st.DrawFn) -> tuple[np.ndarray, C.CameraDraw, list[tuple[float, ...]]]:
    """Draw an image, a camera chain (its blur forced on or off) and 1-5 keep boxes."""
    h, w = draw(st.integers(8, 260)), draw(st.integers(8, 260))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    img = _page(rng, h, w)
    d = C.draw_camera(rng, h, w, draw(st.floats(0.05, 1.0)), ())
    blur = draw(st.sampled_from(["drawn", "none", "disk", "line", "big"]))
    if blur == "none":
        d = replace(d, blur=None)
    elif blur == "disk":
        r = draw(st.floats(0.3, 3.0))
        d = replace(d, blur=(2 * math.ceil(r) + 1, lambda f: C._disk_kernel(max(0.26, r / f))))
    elif blur == "line":
        d = replace(d, blur=(5, lambda f: C._line_kernel(max(1.0, 2.5 / f), 30.0)))
    elif blur == "big":
        d = replace(d, blur=(15, lambda f: C._disk_kernel(max(0.26, 7.0 / f))))
    keep = []
    for _ in range(draw(st.integers(1, 5))):
        x0, x1 = draw(coord) * w, draw(coord) * w
        y0, y1 = draw(coord) * h, draw(coord) * h
        if draw(st.booleans()):
            x0, x1, y0, y1 = min(x0, x1), max(x0, x1), min(y0, y1), max(y0, y1)
        keep.append((x0, y0, x1, y1))
    if draw(st.booleans()):
        keep.append(keep[0])  # the same box twice
    return img, d, keep


def _same_as_reference(img: np.ndarray, d: C.CameraDraw, keep: list, got: np.ndarray) -> None:
    """Assert ``got`` is the former render (or, where that raised on an empty blend box, the
    render without keep boxes: nothing is sharpened)."""
    try:
        want = _render_reference(img, d, keep)
    except TypeError:  # the former code assigned blendLinear's None for an empty box
        want = _render_reference(img, d, ())
    assert np.array_equal(got, want)


@settings(max_examples=300, deadline=None)
@given(camera_cases())
def test_render_camera_is_the_former_render(case):
    img, d, keep = case
    _same_as_reference(img, d, keep, C.render_camera(img, d, keep))


@settings(max_examples=150, deadline=None)
@given(camera_cases(), st.data())
def test_bands_and_deferred_finish_are_the_former_render(case, data):
    img, d, keep = case
    h = img.shape[0]
    bands = C.BandRenderer(img, d, keep)
    y0 = data.draw(st.integers(0, h - 1))
    y1 = data.draw(st.integers(y0 + 1, h))
    rows = bands.rows(y0, y1)
    full = C.render_camera(img, d, keep, bands._gain,
                           None if bands._sharp is None else bands._sharp[0])
    _same_as_reference(img, d, keep, full)
    if rows is not None:
        assert np.array_equal(rows, full[y0:y1])
