"""Camera effects: homography geometry, exact coverage masks, identity at strength 0, purity."""

import hashlib
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


def scene(seed: int = 0, h: int = 240, w: int = 320) -> np.ndarray:
    rng = np.random.default_rng(seed)
    img = R.background(rng, h, w, "paper")
    R.draw_text(img, "K7-4F2 SAMPLE", (20, 40), 14, (20, 20, 20))
    R.add_clutter(img, rng, 4)
    return img


def polygon_area(q: np.ndarray) -> float:
    x, y = q[:, 0], q[:, 1]
    return 0.5 * float(np.dot(x, np.roll(y, -1)) - np.dot(y, np.roll(x, -1)))


def test_perspective_quad_strength_zero_is_the_rectangle_and_draws_nothing():
    rng = np.random.default_rng(1)
    before = rng.bit_generator.state
    q = R.perspective_quad(rng, 40, 30, 0.0)
    assert q.tolist() == [[0, 0], [40, 0], [40, 30], [0, 30]]
    assert rng.bit_generator.state == before


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 10**6), st.integers(4, 400), st.integers(4, 400),
       st.floats(0.01, 1.0))
def test_perspective_quad_properties(seed, w, h, strength):
    q = R.perspective_quad(np.random.default_rng(seed), w, h, strength)
    assert q.shape == (4, 2) and np.isfinite(q).all()
    assert np.allclose(q.min(axis=0), 0.0)
    assert polygon_area(q) == pytest.approx(w * h, rel=1e-9)  # same area, clockwise on screen
    assert cv2.isContourConvex(np.round(q * 64).astype(np.int32))
    assert np.array_equal(q, R.perspective_quad(np.random.default_rng(seed), w, h, strength))


def test_homography_maps_patch_corners_to_quad():
    for seed in range(10):
        q = R.perspective_quad(np.random.default_rng(seed), 120, 80, 0.8) + (33.5, 12.25)
        m = R.homography(120, 80, q)
        mapped = cv2.perspectiveTransform(R.patch_corners(120, 80)[None], m)[0]
        assert np.allclose(mapped, q, atol=1e-4)


def test_warp_patch_integer_translation_is_an_exact_paste():
    img = scene()
    before = img.copy()
    patch = np.random.default_rng(2).integers(0, 256, (30, 50, 3), dtype=np.uint8)
    quad = R.patch_corners(50, 30) + (17, 9)
    box, mask = R.warp_patch(img, patch, None, quad)
    assert box == (17, 9, 67, 39)
    assert mask.shape == (30, 50) and mask.all()
    assert np.array_equal(img[9:39, 17:67], patch)
    outside = np.ones(img.shape[:2], bool)
    outside[9:39, 17:67] = False
    assert np.array_equal(img[outside], before[outside])


def test_warp_patch_mask_is_the_coverage_and_matches_the_quad():
    rng = np.random.default_rng(4)
    img = scene(4)
    before = img.copy()
    patch = np.full((60, 90, 3), 255, np.uint8)
    quad = R.perspective_quad(rng, 90, 60, 0.9) + (100.3, 70.6)
    box, mask = R.warp_patch(img, patch, None, quad)
    cover = R.warp_alpha(np.full((60, 90), 255, np.uint8), quad, box)
    assert np.array_equal(mask, cover >= 128)
    x0, y0, x1, y1 = box
    assert mask.shape == (y1 - y0, x1 - x0)
    # pixel centres well inside the quad are covered, well outside untouched
    contour = quad.astype(np.float32).reshape(-1, 1, 2)
    for yy in range(y0, y1):
        for xx in range(x0, x1):
            d = cv2.pointPolygonTest(contour, (xx + 0.5, yy + 0.5), True)
            if d > 1.0:
                assert mask[yy - y0, xx - x0]
                assert (img[yy, xx] == 255).all()
            elif d < -1.0:
                assert not mask[yy - y0, xx - x0]
                assert (img[yy, xx] == before[yy, xx]).all()
    untouched = np.ones(img.shape[:2], bool)
    untouched[y0:y1, x0:x1] = cover == 0
    assert np.array_equal(img[untouched], before[untouched])


def test_warp_patch_text_ink_mask_via_warp_alpha():
    text = R.truetype_text("A1", 20, "sans-bold")
    paper = np.full((40, 60, 3), 250, np.uint8)
    R.paste_text(paper, text, 5, 5, (0, 0, 0))
    ink = np.zeros((40, 60), np.uint8)
    ink[5:5 + text.alpha.shape[0], 5:5 + text.alpha.shape[1]] = text.alpha
    quad = R.patch_corners(60, 40) + (10, 10)
    img = np.full((80, 100, 3), 128, np.uint8)
    box, _ = R.warp_patch(img, paper, None, quad)
    ink_mask = R.warp_alpha(ink, quad, box) >= 128
    assert ink_mask.sum() == text.mask.sum()  # an integer shift keeps the ink exactly


def test_warp_patch_clips_and_rejects_bad_input():
    img = np.zeros((20, 20, 3), np.uint8)
    box, mask = R.warp_patch(img, np.full((10, 10, 3), 9, np.uint8), None,
                             R.patch_corners(10, 10) + (15, -5))
    assert box == (15, 0, 20, 5) and mask.shape == (5, 5) and mask.all()
    box, mask = R.warp_patch(img, np.full((10, 10, 3), 9, np.uint8), None,
                             R.patch_corners(10, 10) + (40, 40))
    assert mask.size == 0
    with pytest.raises(ValueError, match="RGB patch"):
        R.warp_patch(img, np.zeros((4, 4), np.uint8), None, R.patch_corners(4, 4))
    with pytest.raises(ValueError, match="four finite"):
        R.warp_patch(img, np.zeros((4, 4, 3), np.uint8), None, np.zeros((3, 2)))
    with pytest.raises(ValueError, match="does not match"):
        R.warp_patch(img, np.zeros((4, 4, 3), np.uint8), np.zeros((5, 4), np.uint8),
                     R.patch_corners(4, 4))


@pytest.mark.parametrize("effect", ["uneven_lighting", "soft_shadow", "camera_pipeline"])
def test_strength_zero_is_identity_and_draws_nothing(effect):
    img = scene()
    rng = np.random.default_rng(3)
    state = rng.bit_generator.state
    fn = getattr(R, effect)
    out = fn(img, rng, (10, 10, 50, 50), 0.0) if effect == "soft_shadow" else fn(img, rng, 0.0)
    assert out is img and rng.bit_generator.state == state
    assert R.lens_blur(img, 0.0) is img and R.motion_blur(img, 0.5, 30.0) is img


@pytest.mark.parametrize("strength", [0.3, 1.0])
def test_effects_are_pure_given_rng_and_leave_input_alone(strength):
    img = scene(7)
    frozen = img.copy()
    for seed in range(4):
        runs = []
        for _ in range(2):
            rng = np.random.default_rng(seed)
            a = R.uneven_lighting(img, rng, strength)
            b = R.soft_shadow(a, rng, np.array([[50, 40], [200, 50], [190, 150], [60, 140]]),
                              strength)
            c = R.camera_pipeline(b, rng, strength, keep=[(20, 25, 200, 60)])
            runs.append((a, b, c))
        for x, y in zip(*runs):
            assert x.dtype == np.uint8 and x.shape == img.shape and np.array_equal(x, y)
        assert np.array_equal(img, frozen)


def test_lighting_and_shadow_only_darken_or_mildly_brighten():
    img = np.full((100, 120, 3), 200, np.uint8)
    lit = R.uneven_lighting(img, np.random.default_rng(0), 1.0).astype(int)
    assert lit.min() >= int(200 * 0.45) - 1 and lit.max() <= int(200 * 1.12) + 1
    shaded = R.soft_shadow(img, np.random.default_rng(0), (30, 30, 80, 70), 1.0)
    assert (shaded <= 200).all() and (shaded < 200).any()
    assert (shaded[0, :] == 200).all()  # far from the shadow


def test_shade_polygon_darkens_the_polygon_by_the_darkness():
    img = np.full((60, 80, 3), 200, np.uint8)
    square = np.array([[20.0, 10.0], [60.0, 10.0], [60.0, 50.0], [20.0, 50.0]])
    out = R.shade_polygon(img, square, (0, 0, 80, 60), 1, (60, 80), 0.5, 0.25)
    assert out.shape == img.shape and (img == 200).all()
    assert (out[25:35, 35:45] == 150).all()  # 200 x (1 - 0.25) inside
    assert (out[:, :10] == 200).all() and (out[:3] == 200).all()  # well outside
    half = R.shade_polygon(img, square, (10, 0, 50, 60), 2, (30, 20), 0.25, 0.25)
    assert half.shape == (60, 40, 3) and (half[25:35, 25:35] == 150).all()  # the box only


def test_sheet_shadow_falls_down_right_of_the_sheet():
    img = np.full((200, 240, 3), 220, np.uint8)
    quad = np.array([[60.0, 50.0], [160.0, 50.0], [160.0, 130.0], [60.0, 130.0]])
    out = R.sheet_shadow(img, np.random.default_rng(0), quad, 0.5)
    again = R.sheet_shadow(img, np.random.default_rng(0), quad, 0.5)
    assert np.array_equal(out, again) and (img == 220).all()
    assert out[90, 110, 0] == 110  # the core: 220 x (1 - 0.5)
    assert (out[:40] == 220).all() and (out[:, :50] == 220).all()  # above and left: no shadow
    assert out[140, 165, 0] < 215  # just below-right of the sheet: in its shadow


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(-40, 260), st.integers(-40, 220),
       st.integers(0, 200), st.integers(0, 180))
def test_sheet_shadow_leaves_only_the_covered_box_unshaded(seed, cx, cy, cw, ch):
    """With ``covered`` the shadow is the same everywhere but in that box, where it is absent."""
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (200, 240, 3), dtype=np.uint8)
    quad = np.array([[60.0, 50.0], [170.0, 45.0], [175.0, 140.0], [55.0, 135.0]])
    quad += rng.uniform(-8, 8, (4, 2))
    box = (cx, cy, cx + cw, cy + ch)
    whole = R.sheet_shadow(img, np.random.default_rng(seed), quad, 0.5)
    part = R.sheet_shadow(img, np.random.default_rng(seed), quad, 0.5, box)
    x0, y0, x1, y1 = (max(0, cx), max(0, cy), max(0, min(240, cx + cw)), max(0, min(200, cy + ch)))
    inside = np.zeros((200, 240), bool)
    inside[y0:y1, x0:x1] = True
    assert np.array_equal(part[~inside], whole[~inside])
    assert np.array_equal(part[inside], img[inside])


def test_blur_kernels_conserve_light_and_follow_the_angle():
    from m3gym.tasks.render.camera import _disk_kernel, _line_kernel

    flat = np.full((30, 30, 3), 77, np.uint8)
    assert np.array_equal(R.lens_blur(flat, 3.0), flat)
    assert np.array_equal(R.motion_blur(flat, 7.0, 33.0), flat)
    disk = _disk_kernel(4.0)  # 9 x 9, centre (4, 4)
    assert disk.shape == (9, 9) and disk.sum() == pytest.approx(1.0, abs=1e-5)
    assert disk[4, 4 + 3] > 0.01 and disk[0, 0] < 1e-6
    line = _line_kernel(9.0, 0.0)  # 13 x 13, centre (6, 6)
    assert line.sum() == pytest.approx(1.0, abs=1e-5)
    assert line[6, 10] > 0.01 and abs(line[2, 6]) < 1e-6 and abs(line[10, 6]) < 1e-6
    vert = _line_kernel(9.0, 90.0)
    assert vert[10, 6] > 0.01 and abs(vert[6, 10]) < 1e-6
    imp = np.zeros((41, 41), np.float32)
    imp[20, 20] = 1.0
    small = R.lens_blur(imp, 2.5)  # a 7-tap kernel: applied exactly at full size
    assert small.sum() == pytest.approx(1.0, abs=1e-5) and abs(small[20, 24]) < 1e-6


@pytest.mark.parametrize("blur", [("lens", 6.0), ("motion", 12.0), ("motion", 6.0)])
def test_large_blurs_run_shrunk_and_keep_the_light(blur):
    kind, amount = blur
    imp = np.zeros((81, 81), np.float32)
    imp[40, 40] = 1.0
    out = (R.lens_blur(imp, amount) if kind == "lens" else R.motion_blur(imp, amount, 0.0))
    assert out.sum() == pytest.approx(1.0, rel=0.05)  # the light stays (up to the resampling)
    ys, xs = np.nonzero(out > 1e-4)
    reach = amount + 4 if kind == "lens" else amount / 2 + 6  # + the shrink's resampling
    assert xs.min() >= 40 - reach and xs.max() <= 40 + reach  # the spread it asks for
    assert ys.min() >= 40 - (reach if kind == "lens" else 6)
    flat = np.full((120, 90, 3), 77, np.uint8)
    same = R.lens_blur(flat, amount) if kind == "lens" else R.motion_blur(flat, amount, 33.0)
    assert np.array_equal(same, flat)


def sharpness(img: np.ndarray, box) -> float:
    x0, y0, x1, y1 = box
    return float(cv2.Laplacian(R.to_gray(img[y0:y1, x0:x1]), cv2.CV_32F).var())


def test_keep_boxes_stay_sharp():
    img = scene(9, 300, 400)
    keep = (20, 25, 200, 60)
    gains = []
    for seed in range(12):
        kept = R.camera_pipeline(img, np.random.default_rng(seed), 1.0, keep=[keep])
        free = R.camera_pipeline(img, np.random.default_rng(seed), 1.0)
        gains.append(sharpness(kept, keep) - sharpness(free, keep))
    assert min(gains) > -1.0 and max(gains) > 100.0  # (a skipped cast shadow moves it a hair)


def test_pipeline_rejects_bad_input():
    with pytest.raises(ValueError, match="strength"):
        R.camera_pipeline(scene(), np.random.default_rng(0), 1.5)
    with pytest.raises(ValueError, match="uint8 RGB"):
        R.camera_pipeline(np.zeros((10, 10), np.uint8), np.random.default_rng(0), 0.5)
    with pytest.raises(ValueError, match="positive size"):
        R.perspective_quad(np.random.default_rng(0), 0, 5, 0.5)


HASH = """
import hashlib, sys
import cv2, numpy as np
cv2.setNumThreads(int(sys.argv[1]))
from m3gym.tasks import render as R
h = hashlib.sha256()
for seed in range(3):
    rng = np.random.default_rng(seed)
    img = R.background(rng, 500, 700, "wood")
    paper = np.full((200, 300, 3), 245, np.uint8)
    R.paste_text(paper, R.truetype_text(R.fake_company(rng), 20, R.pick_font(rng)), 10, 10,
                 (0, 0, 0))
    quad = R.perspective_quad(rng, 300, 200, 0.8) + (150, 120)
    img = R.soft_shadow(img, rng, quad, 0.7)
    box, mask = R.warp_patch(img, paper, None, quad)
    img = R.camera_pipeline(img, rng, 0.8, keep=[box])
    h.update(img.tobytes()); h.update(mask.tobytes())
print(h.hexdigest())
"""


def test_bytes_same_in_any_process_and_thread_count():
    outs = {subprocess.run([sys.executable, "-c", HASH, str(n)], cwd=ROOT, check=True,
                           capture_output=True, text=True).stdout.strip() for n in (1, 4)}
    assert len(outs) == 1 and len(next(iter(outs))) == len(hashlib.sha256().hexdigest())
