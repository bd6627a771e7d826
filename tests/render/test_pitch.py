"""Pitch drawing (m3gym.tasks.render.pitch): markings; fast paths equal the originals."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.tasks.render import pitch


def test_pitch_markings_are_symmetric() -> None:
    x0, y0, x1, y1, sx, sy = pitch.pitch_markings((100, 50, 1100, 650))
    assert (x0 + x1) / 2 == 600.0 and (y0 + y1) / 2 == 350.0
    assert sx == pytest.approx((x1 - x0) / 105.0) and sy == pytest.approx((y1 - y0) / 68.0)


def _crowd_tile_one_by_one(rng, rows, row_h, pitch_x, width, concrete):
    """The crowd tile drawn spectator by spectator (``_p`` and ``shade`` per call)."""
    import cv2
    import numpy as np

    P, S = pitch._p, pitch.SHIFT
    tile = np.empty((rows * row_h, width, 3), np.uint8)
    sw, sh, hr = pitch_x * 0.42, row_h * 0.32, row_h * 0.2
    for r in range(rows):
        y = r * row_h
        cv2.rectangle(tile, (0, y), (width - 1, y + row_h - 1), pitch.shade(concrete, 1.0), -1)
        cv2.rectangle(tile, (0, y + row_h - 3), (width - 1, y + row_h - 1),
                      pitch.shade(concrete, 0.6), -1)
        xs = np.arange(0, width, pitch_x)
        seated = rng.random(xs.size) < 0.86
        clothes = rng.integers(25, 235, (xs.size, 3))
        skins = rng.integers(len(pitch.SKIN), size=xs.size)
        hairs = rng.integers(len(pitch.HAIR), size=xs.size)
        jitter = rng.uniform(-1.5, 1.5, xs.size)
        for k, x in enumerate(xs.tolist()):
            if not seated[k]:
                continue
            cx = x + pitch_x / 2 + jitter[k]
            body = clothes[k].tolist()
            cv2.ellipse(tile, P(cx, y + row_h * 0.78), P(sw, sh), 0, 180, 360,
                        pitch.shade(body, 0.95), -1, cv2.LINE_AA, S)
            cv2.ellipse(tile, P(cx + sw * 0.35, y + row_h * 0.78), P(sw * 0.6, sh * 0.9), 0,
                        180, 360, pitch.shade(body, 0.75), -1, cv2.LINE_AA, S)
            cv2.circle(tile, P(cx, y + row_h * 0.38), int(round(hr * 16)),
                       pitch.SKIN[int(skins[k])], -1, cv2.LINE_AA, S)
            cv2.ellipse(tile, P(cx, y + row_h * 0.36), P(hr, hr), 0, 180, 360,
                        pitch.HAIR[int(hairs[k])], -1, cv2.LINE_AA, S)
    return tile


@pytest.mark.parametrize("seed", range(12))
def test_crowd_tile_draws_what_one_call_per_spectator_draws(seed) -> None:
    import numpy as np

    rng = np.random.default_rng(seed)
    row_h = int(rng.integers(13, 18))
    pitch_x = int(round(row_h * rng.uniform(0.75, 0.95)))
    concrete = np.array([rng.uniform(110, 150)] * 3) + rng.uniform(-8, 8, 3)
    r1, r2 = np.random.default_rng([seed, 1]), np.random.default_rng([seed, 1])
    want = _crowd_tile_one_by_one(r1, 6, row_h, pitch_x, 640, concrete)
    got = pitch._crowd_tile(r2, 6, row_h, pitch_x, 640, concrete)
    assert np.array_equal(want, got)
    assert r1.bit_generator.state == r2.bit_generator.state


def _draw_stands_rolled(img, rng, tiles=3, rows=6, width=640):
    """The stands laid strip by strip with ``np.roll`` and ``np.tile`` (the original)."""
    import numpy as np

    h, w = img.shape[:2]
    concrete = np.array([rng.uniform(110, 150)] * 3) + rng.uniform(-8, 8, 3)
    row_h = int(rng.integers(13, 18))
    pitch_x = int(round(row_h * rng.uniform(0.75, 0.95)))
    width = pitch_x * max(1, width // pitch_x)
    bands = [pitch._crowd_tile(rng, rows, row_h, pitch_x, width, concrete) for _ in range(tiles)]
    reps = -(-w // width) + 1
    band_h = rows * row_h
    for y in range(0, h, band_h):
        band = bands[int(rng.integers(tiles))]
        if rng.random() < 0.5:
            band = band[:, ::-1]
        strip = np.tile(np.roll(band, int(rng.integers(width)), axis=1), (1, reps, 1))
        img[y:y + band_h] = strip[:h - y, :w]


@pytest.mark.parametrize("seed,h,w,width", [(0, 1800, 2800, 640), (1, 1561, 2600, 640),
                                            (2, 40, 30, 640), (3, 300, 1000, 100),
                                            (4, 97, 640, 640), (5, 250, 13, 5)])
def test_draw_stands_lays_what_rolling_and_tiling_lays(seed, h, w, width) -> None:
    import numpy as np

    r1, r2 = np.random.default_rng(seed), np.random.default_rng(seed)
    want, got = np.zeros((h, w, 3), np.uint8), np.ones((h, w, 3), np.uint8)
    _draw_stands_rolled(want, r1, width=width)
    pitch.draw_stands(got, r2, width=width)
    assert np.array_equal(want, got)
    assert r1.bit_generator.state == r2.bit_generator.state


def _blur_then_paint(img, hole, sigma, fill):
    """The whole image blurred, then ``hole`` painted with ``cv2.rectangle`` (the original)."""
    import cv2

    out = cv2.GaussianBlur(img, (0, 0), sigma)
    h, w = img.shape[:2]
    x0, y0, x1, y1 = max(0, hole[0]), max(0, hole[1]), min(w, hole[2]), min(h, hole[3])
    if x1 > x0 and y1 > y0:
        cv2.rectangle(out, (x0, y0), (x1 - 1, y1 - 1), fill, -1)
    return out


@settings(max_examples=300, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 90), st.integers(1, 90),
       st.lists(st.integers(-8, 100), min_size=4, max_size=4),
       st.sampled_from([0.7, 1.6, 2.4]))
def test_blur_around_equals_blurring_everything(seed, h, w, corners, sigma) -> None:
    import numpy as np

    img = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    x0, x1 = sorted(corners[::2])
    y0, y1 = sorted(corners[1::2])
    before = img.copy()
    got = pitch.blur_around(img, (x0, y0, x1, y1), sigma, (200, 10, 90))
    assert np.array_equal(got, _blur_then_paint(img, (x0, y0, x1, y1), sigma, (200, 10, 90)))
    assert np.array_equal(img, before)  # the input is left as it is


def test_blur_around_a_pitch_sized_hole() -> None:
    import numpy as np

    img = np.random.default_rng(7).integers(0, 256, (700, 1100, 3), dtype=np.uint8)
    hole = (90, 130, 960, 610)
    got = pitch.blur_around(img, hole, 1.6, (80, 140, 70))
    assert np.array_equal(got, _blur_then_paint(img, hole, 1.6, (80, 140, 70)))


@settings(max_examples=200, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 90), st.integers(1, 90),
       st.lists(st.integers(-8, 100), min_size=4, max_size=4),
       st.sampled_from([0.7, 1.6, 2.4]))
def test_pixels_deeper_in_the_hole_than_the_margin_change_nothing(seed, h, w, corners,
                                                                  sigma) -> None:
    """blur_around reads no pixel deeper than ``blur_margin`` inside the hole."""
    import numpy as np

    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    x0, x1 = sorted(corners[::2])
    y0, y1 = sorted(corners[1::2])
    m = pitch.blur_margin(sigma)
    deep = (slice(max(0, y0 + m), max(0, y1 - m)), slice(max(0, x0 + m), max(0, x1 - m)))
    other = img.copy()
    other[deep] = 255 - other[deep]
    hole = (x0, y0, x1, y1)
    assert np.array_equal(pitch.blur_around(other, hole, sigma, (1, 2, 3)),
                          _blur_then_paint(img, hole, sigma, (1, 2, 3)))
