"""The glyph families' scene helpers (``_glyph_common``) keep their stated properties.

The glyph families draw their scenes with their own helpers (``_glyph_common``): a small
texture background, batched clutter, cached digit patches and cached noise tiles. Their bytes may
differ from the shared renderers', but each helper keeps a stated property, checked here against
the straightforward computation: the noise equals :func:`~m3gym.tasks.render.add_sensor_noise` at
the rounded std, a cached patch equals a fresh render, clutter never touches a reserved box, and
the families still draw on photo scenes.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.tasks import render as R
from m3gym.tasks.families import _glyph_common as G
from m3gym.tasks.registry import get_family, make_task

GLYPH_FAMILIES = ("glyph_zoom", "glyph_rotate", "glyph_faint")


@settings(max_examples=120, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 700), st.integers(1, 1500),
       st.floats(0.0, 4.0), st.floats(0.0, 2.0))
def test_glyph_noise_equals_add_sensor_noise_at_the_rounded_std(seed, h, w, lo, extra):
    hi = lo + extra
    img = np.random.default_rng(seed).integers(0, 256, (h, w, 3), dtype=np.uint8)
    ref_rng, rng = np.random.default_rng(seed), np.random.default_rng(seed)
    sigma = G.glyph_noise_sigma(ref_rng, lo, hi)
    assert lo <= sigma <= hi
    expected = R.add_sensor_noise(img.copy(), ref_rng, sigma)
    out = G.glyph_noise(img.copy(), rng, lo, hi)
    assert np.array_equal(out, expected)
    assert ref_rng.random() == rng.random()  # the same draws were consumed


def test_noise_std_is_rounded_to_its_grid_inside_the_range():
    rng = np.random.default_rng(0)
    values = {G.glyph_noise_sigma(rng, 1.0, 2.5) for _ in range(400)}
    assert values == {1.0 + G.NOISE_SIGMA_STEP * k for k in range(7)}
    assert {G.glyph_noise_sigma(rng, 0.3, 0.6) for _ in range(400)} <= {0.3, 0.5, 0.6}


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.floats(8.0, 60.0), st.floats(0.0, 8.0),
       st.sampled_from(G.GLYPHS))
def test_cached_digit_patch_equals_a_fresh_render(seed, lo, extra, digit):
    hi = lo + extra
    patch = G.glyph_patch(np.random.default_rng(seed), digit, lo, hi)
    rng = np.random.default_rng(seed)
    height = float(rng.uniform(lo, hi))
    step = G.glyph_height_step(height)
    height = min(hi, max(lo, round(height / step) * step))
    face = R.pick(rng, R.READABLE_FACES)
    fresh = R.render_text(digit, height, face, 2 if height >= 20 else 1)
    assert np.array_equal(patch.alpha, fresh.alpha) and np.array_equal(patch.mask, fresh.mask)
    assert patch.glyph_height == fresh.glyph_height
    assert not patch.alpha.flags.writeable and not patch.mask.flags.writeable


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(0, 20), st.sampled_from([192, 288, 384, 500]))
def test_clutter_never_draws_into_reserved_boxes(seed, count, side):
    rng = np.random.default_rng(seed)
    img = np.full((side, side, 3), 128, np.uint8)
    avoid = []
    for _ in range(3):
        x, y = (int(v) for v in rng.integers(0, side - 40, size=2))
        avoid.append((x, y, x + int(rng.integers(10, 40)), y + int(rng.integers(10, 40))))
    boxes = G.glyph_clutter(img, rng, count, avoid, (0.08, 0.22))
    changed = (img != 128).any(axis=2)
    for x0, y0, x1, y1 in avoid:
        assert not changed[y0:y1, x0:x1].any()
    mask = np.zeros_like(changed)
    for x0, y0, x1, y1 in boxes:
        assert 0 <= x0 < x1 <= side and 0 <= y0 < y1 <= side
        mask[max(0, y0 - 1):y1 + 1, max(0, x0 - 1):x1 + 1] = True  # anti-aliasing
    assert not (changed & ~mask).any()  # everything drawn lies at its returned box


@pytest.mark.parametrize("kind", G.BACKGROUNDS)
def test_surface_textures_are_deterministic_and_textured(kind):
    a = G.glyph_surface(np.random.default_rng(5), 288, kind)
    b = G.glyph_surface(np.random.default_rng(5), 288, kind)
    assert a.shape == (288, 288, 3) and a.dtype == np.uint8
    assert np.array_equal(a, b)
    assert float(a.std()) > 1.0  # not a flat colour


@pytest.mark.parametrize("family", [f for f in GLYPH_FAMILIES if get_family(f).photo_scenes])
def test_glyph_families_draw_on_photo_scenes_and_stay_deterministic(family):
    flat = make_task(family, 3)
    photo = make_task(family, 3, {"scenes": "photo"})
    assert "photo_scene" in photo.metadata and "photo_scene" not in flat.metadata
    assert not np.array_equal(flat.images[0], photo.images[0])
    assert make_task(family, 3).content_hash() == flat.content_hash()
    assert make_task(family, 3, {"scenes": "photo"}).content_hash() == photo.content_hash()
