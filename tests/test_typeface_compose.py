"""The glyph atlas composes lines with the same bytes as before and as FreeType.

``_reference_ink`` is a verbatim copy of ``typeface._ink`` as it was before lines were composed
from the atlas's slot table (commit b73a973): a glyph list, a Python kerning loop and an
argsort over every overlapped pixel. The new composition must give the same array for every
string, face and size, kerned faces, non-Latin-1 text and glyphs inked by three at once
included (those go to the in-order blend).
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym import typeface as F

# ASCII, what the families print (digits, currency, punctuation, accents) and text outside
# Latin-1 (the atlas's dictionary lookup); glyph pairs that kern or overlap at small sizes
ALPHABET = ("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789 .,;:!?-+*/=%$#@&()"
            "[]{}<>'\"_|~^`\\ÅéßüÑç°±×€£¥—–’“”…•→ЖΩ")
SIZES = st.integers(8, int(4 * F.ATLAS_MAX_SIZE)).map(lambda q: q * F.SIZE_STEP)


def _reference_ink(text: str, at: F._GlyphAtlas) -> tuple[np.ndarray, int] | None:
    """``_ink``'s composition before this change (b73a973), from atlas ``at``."""
    g = at.glyphs
    entries = [g.get(c) or at.glyph(c) for c in text]
    advance = [e[3] for e in entries]
    if at.kerned:
        pairs = at.pairs
        for i in range(len(text) - 1):
            k = pairs.get(text[i:i + 2])
            advance[i] += at.kern(text[i:i + 2]) if k is None else k
    pen = np.zeros(len(text), np.int64)
    np.cumsum(advance[:-1], out=pen[1:])
    rows = np.concatenate([e[0] for e in entries]).astype(np.intp)
    if rows.size == 0:
        return None
    cols = (np.concatenate([e[1] for e in entries]).astype(np.intp)
            + np.repeat((pen + 32) >> 6, [e[2].size for e in entries]))  # PIXEL(): round
    vals = np.concatenate([e[2] for e in entries])
    r0, c0 = int(rows.min()), int(cols.min())
    h, w = int(rows.max()) - r0 + 1, int(cols.max()) - c0 + 1
    flat = (rows - r0) * w + (cols - c0)
    out = np.zeros(h * w, np.uint8)
    out[flat] = vals  # right where one glyph inks a pixel; overlaps are redone below
    multi = np.bincount(flat, minlength=h * w)[flat] > 1
    if multi.any():
        where, src = flat[multi], vals[multi].astype(np.int32)
        order = np.argsort(where, kind="stable")  # per pixel, in drawing order
        where, src = where[order], src[order]
        first = np.ones(where.size, bool)
        first[1:] = where[1:] != where[:-1]
        idx = np.arange(where.size)
        rank = idx - np.maximum.accumulate(np.where(first, idx, 0))
        group = np.cumsum(first) - 1
        acc = src[first]
        for k in range(1, int(rank.max()) + 1):
            sel = rank == k
            gi, s = group[sel], src[sel]
            t = acc[gi]
            tmp = t * (255 - s) + 128
            acc[gi] = np.where(t > 0, np.minimum(255, s + (((tmp >> 8) + tmp) >> 8)), s)
        out[where[first]] = acc
    return out.reshape(h, w), -r0


def _composed(text: str, face: str, size: float) -> tuple[np.ndarray, int] | None:
    """``_ink`` forced to compose ``text`` from the atlas."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(F, "ATLAS_AFTER_USES", 0)
        mp.setattr(F, "ATLAS_MIN_FILL_LENGTH", 0)
        return F._ink(text, face, size)


def _assert_same(got, ref) -> None:
    assert (got is None) == (ref is None)
    if ref is not None:
        assert got[1] == ref[1] and got[0].dtype == np.uint8 and got[0].shape == ref[0].shape
        assert np.array_equal(got[0], ref[0])


@settings(max_examples=400, deadline=None)
@given(st.text(alphabet=ALPHABET, min_size=1, max_size=160), st.sampled_from(F.FONT_FACES),
       SIZES)
def test_composed_line_equals_the_previous_composition_and_freetype(text, face, size):
    got = _composed(text, face, size)
    _assert_same(got, _reference_ink(text, F._atlas(face, size)))
    _assert_same(got, F._raster_ink(text, F.load_font(face, size)))


@settings(max_examples=150, deadline=None)
@given(st.lists(st.text(alphabet=ALPHABET, min_size=1, max_size=40), min_size=2, max_size=6),
       st.sampled_from(["sans", "serif", "condensed-bold", "stix"]), SIZES)
def test_an_atlas_filled_string_by_string_keeps_its_kerning(texts, face, size):
    # each string may add glyphs (the slot table and kerning matrix grow); earlier lines must
    # still compose the same afterwards
    F._small_atlas.cache_clear()
    F._big_atlas.cache_clear()
    for text in texts + texts[::-1]:
        _assert_same(_composed(text, face, size), F._raster_ink(text, F.load_font(face, size)))


def test_glyphs_inked_three_deep_take_the_in_order_blend():
    # at 2-4.5 px per em neighbours' neighbours share columns: not a pairwise overlap
    taken = []
    real = F._overlaps_pairwise

    def spy(left, right):
        taken.append(real(left, right))
        return taken[-1]

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(F, "_overlaps_pairwise", spy)
        for face, size in (("stix", 4.5), ("serif", 2.0), ("sans", 3.0), ("stix", 6.0)):
            for text in ("fff", "f/j", "W/A", "VAV", "LTA", "jjj", "_-_", "'''"):
                _assert_same(_composed(text, face, size),
                             F._raster_ink(text, F.load_font(face, size)))
    assert False in taken and True in taken


def test_pairwise_blend_is_pillows_in_either_order():
    s, t = np.meshgrid(np.arange(256), np.arange(256), indexing="ij")
    tmp = t * (255 - s) + 128  # Pillow: s over t
    pillow = np.where(t > 0, np.minimum(255, s + (((tmp >> 8) + tmp) >> 8)), s)
    assert np.array_equal(pillow, pillow.T)  # commutative for two layers
    canvas = np.zeros(2 * 65536, np.uint16)
    flat = np.concatenate([np.arange(65536), np.arange(65536)])
    vals = np.concatenate([t.ravel(), s.ravel()]).astype(np.uint16)
    F._blend_pairwise(canvas, flat, vals, 65536)
    assert np.array_equal(canvas[:65536].reshape(256, 256), pillow)
    # three layers are not associative: why those lines keep the in-order blend
    assert not np.array_equal(pillow[pillow[10, 200], 90], pillow[10, pillow[200, 90]])


def test_overlaps_pairwise_needs_next_but_one_glyphs_apart():
    no = F._NO_INK
    assert F._overlaps_pairwise(np.array([0, 3, 6]), np.array([4, 7, 9]))
    assert not F._overlaps_pairwise(np.array([0, 3, 4]), np.array([4, 7, 9]))
    assert not F._overlaps_pairwise(np.array([0, no, 3, 4]), np.array([5, -no, 7, 9]))
    assert F._overlaps_pairwise(np.array([0, no, 6]), np.array([4, -no, 9]))
    assert F._overlaps_pairwise(np.array([0, 1]), np.array([9, 9]))


def test_blank_and_inkless_text_compose_to_none():
    assert _composed(" ", "sans", 12.0) is None
    assert _composed("   ", "serif", 30.0) is None
    assert F._raster_ink("   ", F.load_font("serif", 30.0)) is None
