"""Render helpers keep their exact semantics: same bytes in any process or thread count, reference values."""

import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.tasks import render as R

ROOT = Path(__file__).resolve().parents[2]

HASH_SCRIPT = """
import hashlib, sys
import cv2, numpy as np
cv2.setNumThreads(int(sys.argv[1]))
from m3gym.tasks import render as R
h = hashlib.sha256()
for k, kind in enumerate(R.BACKGROUND_KINDS):
    rng = np.random.default_rng(k)
    img = R.background(rng, 700, 900, kind)
    R.add_clutter(img, rng, 6)
    R.add_distractor_labels(img, rng, 3)
    img = R.add_sensor_noise(img, rng, 1.7)
    img = R.compress_dynamic_range(img, (20.0, 30.0, 40.0), 90.0)
    h.update(img.tobytes())
print(h.hexdigest())
"""


def test_render_bytes_same_in_any_process_and_thread_count():
    outs = {subprocess.run([sys.executable, "-c", HASH_SCRIPT, str(n)], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.strip() for n in (1, 4)}
    assert len(outs) == 1 and len(next(iter(outs))) == 64


def test_solid_image_matches_numpy_fill():
    img = R.solid_image(5, 7, (10, 200, 255))
    assert img.shape == (5, 7, 3) and img.dtype == np.uint8
    assert np.array_equal(img, np.broadcast_to(np.array([10, 200, 255], np.uint8), (5, 7, 3)))
    f = R.solid_image(3, 4, (1.5, 2.5, 300.0), np.float32)
    assert np.array_equal(f[2, 3], np.array([1.5, 2.5, 300.0], np.float32))


def test_jitter_and_rand_color_are_python_ints_in_range():
    rng = np.random.default_rng(0)
    for _ in range(200):
        c = R.jitter_color(rng, (250, 5, 128), 20)
        assert all(type(v) is int and 0 <= v <= 255 for v in c)
        r = R.rand_color(rng, 30, 40)
        assert all(type(v) is int and 30 <= v < 40 for v in r)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 12), st.integers(5, 60), st.integers(5, 60))
def test_find_free_spot_never_overlaps(seed, n_occupied, w, h):
    rng = np.random.default_rng(seed)
    occupied = [(int(x), int(y), int(x) + 30, int(y) + 20)
                for x, y in rng.integers(0, 300, (n_occupied, 2))]
    spot = R.find_free_spot(rng, (w, h), (0, 0, 340, 330), occupied, margin=4, tries=25)
    if spot is not None:
        x, y = spot
        assert 0 <= x and x + w <= 340 and 0 <= y and y + h <= 330
        assert not any(R.boxes_overlap((x, y, x + w, y + h), o, 4) for o in occupied)


def test_find_free_spot_reports_no_room():
    rng = np.random.default_rng(1)
    assert R.find_free_spot(rng, (50, 50), (0, 0, 40, 40), []) is None
    assert R.find_free_spot(rng, (10, 10), (0, 0, 100, 100), [(0, 0, 100, 100)]) is None


def test_compress_dynamic_range_is_the_linear_map():
    img = np.arange(256, dtype=np.uint8).repeat(3).reshape(16, 16, 3)
    out = R.compress_dynamic_range(img, (10.0, 20.5, 30.0), 51.0)
    expect = np.clip(np.rint(img.astype(np.float64) * 0.2 + np.array([10.0, 20.5, 30.0])),
                     0, 255)
    assert np.abs(out.astype(np.float64) - expect).max() <= 1
    assert out[..., 0].min() == 10 and out[..., 0].max() == 61


@pytest.mark.parametrize("shape", [(300, 400, 3), (257, 1301, 3), (300, 400), (3, 5, 3)])
def test_sensor_noise_statistics_any_shape(shape):
    img = np.full(shape, 100, np.uint8)
    out = R.add_sensor_noise(img, np.random.default_rng(0), 2.0)
    assert out.shape == img.shape and np.array_equal(img, np.full(shape, 100, np.uint8))
    if img.size > 10_000:
        assert abs(float(out.mean()) - 100) < 0.2 and 1.7 < float(out.std()) < 2.3
    same = img.copy()
    back = R.add_sensor_noise(same, np.random.default_rng(0), 2.0, inplace=True)
    assert back is same and np.array_equal(same, out)


def test_background_detail_is_resolution_independent_in_cost():
    # the texture is always computed at most BACKGROUND_DETAIL px on its longest side
    small = R.background(np.random.default_rng(4), 90, 120, "wood")
    big = R.background(np.random.default_rng(4), 1800, 2400, "wood")
    ref = cv2.resize(big, (120, 90), interpolation=cv2.INTER_AREA)
    assert small.shape == (90, 120, 3) and big.shape == (1800, 2400, 3)
    assert abs(float(ref.mean()) - float(small.mean())) < 25
