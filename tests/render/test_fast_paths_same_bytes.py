"""Fast task-generation helpers give the same bytes as the straightforward computation.

``filler_lines`` wraps incrementally, ``truetype_text`` caches rendered strings and
``_apply_gain`` works in bands of rows, ``fonts._ink`` composes lines from a glyph atlas,
``photograph`` masks with OpenCV and copies a sheet that fills its scene, JPEG decodes straight
to RGB and ``fake_shared`` re-seeds one Faker; each must equal the straightforward computation
exactly.
"""

import itertools
import textwrap

import cv2
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym import typeface as fonts
from m3gym.tasks import render as R
from m3gym.tasks.families import _text_common as TC
from m3gym.tasks.families import chart_value
from m3gym.tasks.render import camera, content, documents
from m3gym.tasks.render.degradations import _noise_tile_parts


def filler_lines_reference(rng: np.random.Generator, count: int, chars: int) -> list[str]:
    """The quadratic original: re-wrap the whole text after every sentence."""
    if count <= 0:
        return []
    fk = R.fake(rng)
    text = ""
    lines: list[str] = []
    while len(lines) <= count:
        text = f"{text} {fk.sentence(nb_words=int(rng.integers(8, 16)))}".strip()
        lines = textwrap.wrap(text, chars, break_long_words=False, break_on_hyphens=False)
    return lines[:count]


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(-2, 60), st.integers(1, 120))
def test_filler_lines_match_rewrapping_the_whole_text(seed, count, chars):
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    assert chart_value.filler_lines(a, count, chars) == filler_lines_reference(b, count, chars)
    assert a.random() == b.random()  # the same draws were consumed


WORDS = st.text(alphabet="abcdefghij-.,", min_size=1, max_size=30)


@settings(max_examples=200, deadline=None)
@given(st.lists(st.lists(WORDS, min_size=1, max_size=12), min_size=1, max_size=12),
       st.integers(1, 40))
def test_wrapping_only_the_open_line_equals_wrapping_everything(sentences, chars):
    text, done, tail = "", [], ""
    for words in sentences:
        sentence = " ".join(words)
        text = f"{text} {sentence}".strip()
        tail = f"{tail} {sentence}".strip()
        lines = chart_value.wrap_line(tail, chars)
        assert done + lines == chart_value.wrap_line(text, chars)
        done += lines[:-1]
        tail = lines[-1] if lines else ""


def _uncached_truetype(text: str, glyph_height: float, font: str) -> tuple[np.ndarray, int]:
    size = fonts.size_for_glyph_height(font, glyph_height)
    alpha, base = fonts._raster(text, fonts.load_font(font, size))
    rows = np.flatnonzero(alpha.max(axis=1))
    cols = np.flatnonzero(alpha.max(axis=0))
    return alpha[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1], int(base - rows[0])


@pytest.mark.parametrize("text,height,font", [("H8B", 7.0, "sans"), ("Receipt 12.50", 11.5, "mono"),
                                              ("x", 2.0, "stix-bold")])
def test_truetype_cache_returns_the_uncached_raster_read_only(text, height, font):
    fonts._PATCHES.clear()
    first = R.truetype_text(text, height, font)
    second = R.truetype_text(text, height, font)
    alpha, baseline = _uncached_truetype(text, height, font)
    for p in (first, second):
        assert np.array_equal(p.alpha, alpha) and p.alpha.dtype == np.uint8
        assert np.array_equal(p.mask, alpha >= 128)
        assert p.baseline == baseline
        assert not p.alpha.flags.writeable and not p.mask.flags.writeable
    assert second.alpha is first.alpha  # served from the cache
    with pytest.raises(ValueError):
        second.alpha[0, 0] = 1  # nobody can corrupt the cache


def test_truetype_cache_is_bounded_and_skips_huge_patches():
    fonts._PATCHES.clear()
    for i in range(fonts.PATCH_CACHE_SIZE + 20):
        R.truetype_text(f"L{i}", 3.0, "sans")
    assert len(fonts._PATCHES) == fonts.PATCH_CACHE_SIZE
    fonts._PATCHES.clear()
    R.truetype_text("W" * 30, 200.0, "sans")  # far above PATCH_CACHE_MAX_PIXELS
    assert len(fonts._PATCHES) == 0


def _gain_reference(img: np.ndarray, gain: np.ndarray) -> np.ndarray:
    h, w = img.shape[:2]
    if gain.shape != (h, w):
        gain = cv2.resize(gain, (w, h), interpolation=cv2.INTER_LINEAR)
    g = gain if img.ndim == 2 else cv2.merge([gain, gain, gain])
    return cv2.multiply(img, g, dtype=cv2.CV_8U)


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 90), st.integers(1, 90), st.booleans(),
       st.booleans(), st.sampled_from([1, 7, 64, 1 << 18]))
def test_banded_gain_equals_merging_the_whole_gain(seed, h, w, small_gain, view, band):
    rng = np.random.default_rng(seed)
    big = rng.integers(0, 256, (h + 4, w + 6, 3), dtype=np.uint8)
    img = big[2:2 + h, 3:3 + w] if view else np.ascontiguousarray(big[:h, :w])
    shape = (max(1, h // 3), max(1, w // 2)) if small_gain else (h, w)
    gain = (rng.random(shape, dtype=np.float32) * np.float32(1.6)).astype(np.float32)
    old = camera.GAIN_BAND_FLOATS
    camera.GAIN_BAND_FLOATS = band
    try:
        out = camera._apply_gain(img, gain)
    finally:
        camera.GAIN_BAND_FLOATS = old
    assert out.dtype == np.uint8 and out.shape == img.shape
    assert np.array_equal(out, _gain_reference(img, gain))
    gray = np.ascontiguousarray(img[..., 0])
    assert np.array_equal(camera._apply_gain(gray, gain), _gain_reference(gray, gain))


def _groups_reference(alphabet: str, size: int, d: np.ndarray) -> tuple[str, ...]:
    """The original scoring: every group's largest distance, rounded, sorted with its name."""
    scored = []
    for combo in itertools.combinations(range(len(alphabet)), size):
        spread = max((d[i, j] for i, j in itertools.combinations(combo, 2)), default=0.0)
        scored.append((round(float(spread), 9), "".join(alphabet[i] for i in combo)))
    scored.sort()
    return tuple(g for _, g in scored[:TC.GROUP_POOL])


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 5), st.sampled_from([2, 3, 9]),
       st.sampled_from(["ABCDEFGHJKLMNPRSTUVWXYZ", "0123456789", "QOD8B", "XY"]))
def test_vectorised_lookalike_groups_equal_scoring_every_group(seed, size, decimals, alphabet):
    size = min(size, len(alphabet))
    raw = np.random.default_rng(seed).random((len(alphabet), len(alphabet)))
    d = np.round((raw + raw.T) / 2, decimals)  # few decimals: many ties
    TC.lookalike_groups.cache_clear()
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(TC, "char_view_distances", lambda *a, **k: d)
        got = TC.lookalike_groups(alphabet, size, "sans", 5.0, 0.3)
    TC.lookalike_groups.cache_clear()
    assert got == _groups_reference(alphabet, size, d)


def test_lookalike_groups_on_real_glyphs_match_the_reference():
    for face, gh, scale in (("sans", 7.25, 0.33), ("mono-bold", 9.5, 0.27)):
        d = TC.char_view_distances(R.CODE_LETTERS, face, gh, scale)
        for size in (2, 3, 4):
            assert (TC.lookalike_groups(R.CODE_LETTERS, size, face, gh, scale)
                    == _groups_reference(R.CODE_LETTERS, size, d))


def _raster_reference(text: str, font) -> tuple[np.ndarray, int]:
    """The original raster: measure with ``getbbox``, then ``ImageDraw.text`` on that canvas."""
    import math

    from PIL import Image, ImageDraw

    x0, y0, x1, y1 = font.getbbox(text, anchor="ls")
    pad = 2
    w = max(1, int(math.ceil(x1 - x0)) + 2 * pad)
    h = max(1, int(math.ceil(y1 - y0)) + 2 * pad)
    canvas = Image.new("L", (w, h), 0)
    base = pad - int(math.floor(y0))
    ImageDraw.Draw(canvas).text((pad - int(math.floor(x0)), base), text, fill=255, font=font,
                                anchor="ls")
    return np.asarray(canvas), base


@settings(max_examples=150, deadline=None)
@given(st.text(alphabet="HIg8B0OQ .,-:$%/()jyÅéß€¿W", min_size=1, max_size=40),
       st.sampled_from(fonts.FONT_FACES), st.integers(4, 400))
def test_single_layout_raster_equals_drawing_on_a_measured_canvas(text, face, quarter_px):
    font = fonts.load_font(face, quarter_px * fonts.SIZE_STEP)
    alpha, base = fonts._raster(text, font)
    ref_alpha, ref_base = _raster_reference(text, font)
    assert base == ref_base
    assert np.array_equal(alpha, ref_alpha)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 70), st.integers(1, 70))
def test_findnonzero_edge_and_copyto_mask_equal_numpy(seed, h, w):
    rng = np.random.default_rng(seed)
    cover = rng.choice(np.array([0, 0, 255, 255, 1, 254, 128], np.uint8), (h, w))
    ref = np.nonzero((cover > 0) & (cover < 255))
    got = documents._nonzero_yx(cv2.inRange(cover, 1, 254))
    assert all(np.array_equal(a, b) and b.dtype == np.intp for a, b in zip(ref, got))
    big = rng.integers(0, 256, (h + 3, w + 5, 3), dtype=np.uint8)
    region = big[1:1 + h, 2:2 + w]  # a view, as in photograph()
    warped = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    expected = warped.copy()
    np.copyto(expected, region, where=(cover == 0)[..., None])
    cv2.copyTo(region, (cover == 0).view(np.uint8), warped)
    assert np.array_equal(warped, expected)


def test_nonzero_of_an_empty_mask():
    rows, cols = documents._nonzero_yx(np.zeros((4, 5), np.uint8))
    assert rows.size == cols.size == 0 and rows.dtype == np.intp


@pytest.mark.parametrize("quality", [60, 85, 95])
@pytest.mark.parametrize("shape", [(1, 1), (7, 13), (64, 48), (301, 517)])
def test_jpeg_decoded_straight_to_rgb_equals_decoding_to_bgr_and_swapping(quality, shape):
    rng = np.random.default_rng(quality * 1000 + shape[0])
    img = cv2.GaussianBlur(rng.integers(0, 256, (*shape, 3), dtype=np.uint8), (0, 0), 1.5)
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(img, cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, quality])
    assert ok
    reference = cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
    assert np.array_equal(R.jpeg_artifacts(img, quality), reference)


@settings(max_examples=30, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["en_US", "de_DE", "fr_FR"]))
def test_shared_faker_gives_a_fresh_fakers_values(seed, locale):
    a, b = np.random.default_rng(seed), np.random.default_rng(seed)
    R.fake_company(np.random.default_rng(seed + 1), locale)  # the shared one has been used
    fresh, shared = R.fake(a, locale), content.fake_shared(b, locale)
    assert [fresh.sentence(nb_words=9) for _ in range(3)] == [shared.sentence(nb_words=9)
                                                              for _ in range(3)]
    assert fresh.city() == shared.city()
    assert a.random() == b.random()


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet="HIg8B0OQ .,-:$%/()jyÅéß€¿WAVTofirLYw'\"", min_size=1, max_size=90),
       st.sampled_from(fonts.FONT_FACES), st.integers(4, int(4 * fonts.ATLAS_MAX_SIZE)))
def test_atlas_composed_line_equals_freetypes_whole_line_raster(text, face, quarter_px):
    size = quarter_px * fonts.SIZE_STEP
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(fonts, "ATLAS_AFTER_USES", 0)  # always compose from the atlas
        mp.setattr(fonts, "ATLAS_MIN_FILL_LENGTH", 0)
        got = fonts._ink(text, face, size)
    ref = fonts._raster_ink(text, fonts.load_font(face, size))
    if ref is None:
        assert got is None
        return
    assert got is not None and got[1] == ref[1]
    assert got[0].dtype == np.uint8 and np.array_equal(got[0], ref[0])


def test_atlas_keeps_pillows_kerning_and_overlapping_glyphs():
    # kerned pairs (sans has a kern table) at the largest atlas size, and glyphs that overlap
    # at small sizes: both change pixels if the composition is not Pillow's
    for face, size in (("sans", fonts.ATLAS_MAX_SIZE), ("serif-bold", 31.0), ("sans", 3.0),
                       ("condensed", 40.0)):
        text = "AVAVAVAV To Ty Yo LT fj ff" * 3
        with pytest.MonkeyPatch.context() as mp:
            mp.setattr(fonts, "ATLAS_AFTER_USES", 0)
            mp.setattr(fonts, "ATLAS_MIN_FILL_LENGTH", 0)
            got = fonts._ink(text, face, size)
        ref = fonts._raster_ink(text, fonts.load_font(face, size))
        assert got[1] == ref[1] and np.array_equal(got[0], ref[0])
    at = fonts._atlas("sans", fonts.ATLAS_MAX_SIZE)
    assert at.kerned and any(k != 0 for k in at.pairs.values())


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(2, 60), st.integers(2, 60), st.booleans(),
       st.booleans())
def test_copy_where_into_a_box_equals_numpy_copyto(seed, h, w, gray, contiguous):
    rng = np.random.default_rng(seed)
    shape = (h, w) if gray else (h, w, 3)
    img = rng.integers(0, 256, shape, dtype=np.uint8)
    if not contiguous:
        img = img[:, ::-1]  # a view OpenCV could not write through: numpy's path
    y0, x0 = int(rng.integers(0, h - 1)), int(rng.integers(0, w - 1))
    y1, x1 = int(rng.integers(y0 + 1, h + 1)), int(rng.integers(x0 + 1, w + 1))
    src = rng.integers(0, 256, img[y0:y1, x0:x1].shape, dtype=np.uint8)
    where = rng.random((y1 - y0, x1 - x0)) < 0.5
    expected = img.copy()
    region = expected[y0:y1, x0:x1]
    np.copyto(region, src, where=where[..., None] if region.ndim == 3 else where)
    camera._copy_where(img[y0:y1, x0:x1], src, where, img.flags.c_contiguous)
    assert np.array_equal(img, expected)


def test_a_rarely_used_size_is_rasterised_whole_until_the_atlas_pays():
    fonts._small_atlas.cache_clear()
    size = 13.25
    for i in range(fonts.ATLAS_AFTER_USES):
        got = fonts._ink(f"Rare {i}", "serif", size)
        assert got is not None and np.array_equal(
            got[0], fonts._raster_ink(f"Rare {i}", fonts.load_font("serif", size))[0])
    assert fonts._atlas("serif", size).glyphs == {}  # nothing rasterised glyph by glyph yet
    fonts._ink("Short: 123", "serif", size)  # too short to fill the atlas
    assert fonts._atlas("serif", size).glyphs == {}
    fonts._ink("Often used, in long lines", "serif", size)
    assert set(fonts._atlas("serif", size).glyphs) == set("Often used, in long lines")
    got = fonts._ink("lines", "serif", size)  # short, but every glyph is there: composed
    assert np.array_equal(got[0], fonts._raster_ink("lines", fonts.load_font("serif", size))[0])


def _shade_reference(img, pts, box, k, mask_shape, sigma, darkness):
    """The original shade_polygon: ``1 - darkness * mask`` in fresh arrays."""
    x0, y0, x1, y1 = box
    mask = np.zeros(mask_shape, np.float32)
    cv2.fillPoly(mask, [np.round((pts - (x0, y0)) / k * 16).astype(np.int32)], 1.0,
                 cv2.LINE_AA, shift=4)
    mask = cv2.GaussianBlur(mask, (0, 0), sigma)
    mask = cv2.resize(mask, (x1 - x0, y1 - y0), interpolation=cv2.INTER_LINEAR)
    return _gain_reference(img[y0:y1, x0:x1], 1.0 - np.float32(darkness) * mask)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(8, 120), st.integers(8, 120), st.integers(1, 5),
       st.floats(0.0, 1.0), st.floats(0.5, 6.0))
def test_in_place_shade_gain_equals_one_minus_darkness_times_mask(seed, h, w, k, darkness,
                                                                  sigma):
    rng = np.random.default_rng(seed)
    img = rng.integers(0, 256, (h, w, 3), dtype=np.uint8)
    pts = rng.uniform(-10, max(h, w) + 10, (4, 2))
    box = (int(rng.integers(0, w // 2)), int(rng.integers(0, h // 2)), w, h)
    shape = (max(1, -(-(box[3] - box[1]) // k)), max(1, -(-(box[2] - box[0]) // k)))
    got = camera.shade_polygon(img, pts, box, k, shape, sigma, darkness)
    assert np.array_equal(got, _shade_reference(img, pts, box, k, shape, sigma, darkness))


def sensor_noise_reference(img: np.ndarray, rng: np.random.Generator, sigma: float) -> np.ndarray:
    """The original: scale the whole noise tile, repeat it, slice the strip, add in bands."""
    h, w = img.shape[:2]
    pos_unit, neg_unit = _noise_tile_parts()
    th, tw = R.NOISE_TILE_SHAPE
    oy, ox = int(rng.integers(th)), int(rng.integers(tw))
    flip = bool(rng.integers(2))
    reps = -(-(w + ox) // tw)
    pos = np.tile(cv2.convertScaleAbs(pos_unit, alpha=sigma), (1, reps, 1))[:, ox:ox + w]
    neg = np.tile(cv2.convertScaleAbs(neg_unit, alpha=sigma), (1, reps, 1))[:, ox:ox + w]
    if flip:
        pos, neg = neg, pos
    if img.ndim == 2:
        pos, neg = pos[..., 0], neg[..., 0]
    noise_pos = np.tile(pos, (-(-(h + oy) // th), 1, 1)[:pos.ndim])[oy:oy + h]
    noise_neg = np.tile(neg, (-(-(h + oy) // th), 1, 1)[:neg.ndim])[oy:oy + h]
    return cv2.subtract(cv2.add(img, noise_pos), noise_neg)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(1, 420), st.sampled_from(
    [1, 5, 300, 384, 642, 643, 644, 1300]), st.floats(0.1, 12.0), st.booleans())
def test_noise_strip_scaled_from_used_columns_equals_the_whole_tile(seed, h, w, sigma, gray):
    """Scaling only the tile columns a narrow image reads gives the whole tile's bytes."""
    rng = np.random.default_rng(seed)
    shape = (h, w) if gray else (h, w, 3)
    img = rng.integers(0, 256, size=shape, dtype=np.uint8)
    want = sensor_noise_reference(img, np.random.default_rng(seed + 1), sigma)
    got = R.add_sensor_noise(img, np.random.default_rng(seed + 1), sigma)
    assert np.array_equal(got, want)


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 2**32 - 1), st.integers(120, 420), st.integers(40, 300), st.booleans())
def test_a_sheet_photographed_onto_itself_skips_the_warps(seed, w, h, faded):
    """A slide (a sheet filling its background) gets the general warp path's very bytes."""
    rng = np.random.default_rng(seed)
    sheet = documents.Sheet.blank(w, h, (250, 250, 248))
    for i in range(3):
        placed = documents.put_text(sheet.rgb, f"{seed % 997} K{i}", float(rng.uniform(7, 12)),
                                    float(rng.uniform(0, w - 110)), float(rng.uniform(0, h - 30)),
                                    (20, 20, 30))
        sheet.mark("a" if i < 2 else "b", placed)
    quad = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float64)
    shown = sheet.faded(0.4) if faded else None
    fast = documents.photograph(sheet.rgb, sheet, quad, shown)
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(documents, "warps_as_identity", lambda *a: False)
        slow = documents.photograph(sheet.rgb, sheet, quad, shown)
    assert np.array_equal(fast.scene, slow.scene) and np.array_equal(fast.clean, slow.clean)
    assert fast.box == slow.box and np.array_equal(fast.hom, slow.hom)
    assert fast.masks.keys() == slow.masks.keys()
    assert all(np.array_equal(fast.masks[k], slow.masks[k]) for k in fast.masks)
    assert not np.shares_memory(fast.scene, sheet.rgb)


def test_only_a_near_identity_counts_as_one():
    assert documents.warps_as_identity(np.eye(3) + 1e-13, 3200, 1800)
    assert not documents.warps_as_identity(np.eye(3) + 1e-9, 3200, 1800)
    assert not documents.warps_as_identity(np.eye(3), 15_000, 6_000)
