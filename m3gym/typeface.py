"""The bundled TrueType faces, rendered with FreeType (Pillow's ``ImageFont``) into text patches.

The fonts ship inside the package (``m3gym/data/fonts/``, licences in its ``LICENSE``): DejaVu
Sans, Serif, Sans Mono and Sans Condensed, each regular and bold, and STIX General (a Times-like
serif), regular and bold. :func:`truetype_text` renders a string so that the measured ink height
of a capital "H" (rows with coverage >= 50 %) is ``glyph_height`` pixels, within half a pixel
where the hinted font allows it and always within one pixel. :func:`render_text` is the entry
point for a face name of :data:`ALL_FACES` (bold for ``thickness`` >= 2, slanted for ``italic``);
:func:`~m3gym.tasks.render.text.paste_text` composites a patch into an image.

This module sits in the bottom layer (it needs only Pillow, NumPy, OpenCV and the package's font
files), so the task renderers (:mod:`m3gym.tasks.render.fonts` and ``.text`` re-export it), the
logo drawer (:mod:`m3gym.web.logos`) and the OCR's glyph templates (:mod:`m3gym.agents.ocr`)
draw the same text.

Text is laid out with FreeType's basic layout (no Raqm), so the same string renders byte-identically
on every machine with the same Pillow and FreeType. These are the only text faces: the Hershey
stroke faces of ``cv2.putText`` were retired in benchmark v4.

Lines are composed from a per-face-and-size glyph atlas (each glyph rasterised once) exactly as
FreeType and Pillow draw them (:func:`_ink`); one-off sizes and short strings go straight to
FreeType, and rendered strings are cached (:data:`PATCH_CACHE_SIZE`).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources
from pathlib import Path

import cv2
import numpy as np
from PIL import Image, ImageFont

from m3gym.cache import LRUCache
from m3gym.geometry import Box


@dataclass(frozen=True)
class TextPatch:
    """A rendered string: anti-aliased coverage cropped tightly to the ink.

    Attributes:
        text: the string.
        alpha: ``uint8`` ``(h, w)`` coverage (255 = full ink).
        mask: ``bool`` ``(h, w)``, True where coverage >= 50 % (the strokes).
        glyph_height: measured ink height of a capital letter at these settings, pixels.
        baseline: row of the text's baseline within the patch (the row below the last ink row
            of a capital letter), or ``None`` when the renderer does not report it.
    """

    text: str
    alpha: np.ndarray
    mask: np.ndarray
    glyph_height: float
    baseline: int | None = None

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` of the patch."""
        return int(self.alpha.shape[1]), int(self.alpha.shape[0])


FONT_FILES: dict[str, str] = {
    "sans": "DejaVuSans.ttf",
    "sans-bold": "DejaVuSans-Bold.ttf",
    "serif": "DejaVuSerif.ttf",
    "serif-bold": "DejaVuSerif-Bold.ttf",
    "mono": "DejaVuSansMono.ttf",
    "mono-bold": "DejaVuSansMono-Bold.ttf",
    "condensed": "DejaVuSansCondensed.ttf",
    "condensed-bold": "DejaVuSansCondensed-Bold.ttf",
    "stix": "STIXGeneral.ttf",
    "stix-bold": "STIXGeneralBol.ttf",
}
"""Face name -> font file in ``m3gym/data/fonts/`` (insertion order is fixed)."""

FONT_FACES: tuple[str, ...] = tuple(FONT_FILES)
"""Every TrueType face name :func:`truetype_text` accepts."""

BOLD_FACES: tuple[str, ...] = tuple(f for f in FONT_FACES if f.endswith("-bold"))
"""The bold faces."""

SIZE_STEP: float = 0.25
"""Font sizes are multiples of this (pixels per em), which bounds the font cache."""

MIN_GLYPH_HEIGHT: float = 2.0
"""Smallest glyph height :func:`truetype_text` accepts, pixels."""

MAX_GLYPH_HEIGHT: float = 1000.0
"""Largest glyph height :func:`truetype_text` accepts, pixels."""


def font_path(font: str) -> Path:
    """Return the path of the font file of face ``font`` (one of :data:`FONT_FACES`)."""
    if font not in FONT_FILES:
        raise ValueError(f"unknown font face {font!r}; known: {', '.join(FONT_FACES)}")
    return Path(str(resources.files("m3gym").joinpath(f"data/fonts/{FONT_FILES[font]}")))


def pick_font(rng: np.random.Generator, faces: tuple[str, ...] | list[str] | None = None) -> str:
    """Return one face of ``faces`` (default :data:`FONT_FACES`) chosen by ``rng``."""
    options = FONT_FACES if faces is None else tuple(faces)
    if not options:
        raise ValueError("pick_font needs at least one face")
    for f in options:
        if f not in FONT_FILES:
            raise ValueError(f"unknown font face {f!r}; known: {', '.join(FONT_FACES)}")
    return options[int(rng.integers(len(options)))]


@lru_cache(maxsize=256)
def load_font(font: str, size: float) -> ImageFont.FreeTypeFont:
    """Return the cached FreeType font of face ``font`` at ``size`` pixels per em."""
    return ImageFont.truetype(str(font_path(font)), size=size,
                              layout_engine=ImageFont.Layout.BASIC)


@lru_cache(maxsize=16)
def _cmap(font: str) -> frozenset[int]:
    """Return the code points face ``font`` has glyphs for."""
    from fontTools.ttLib import TTFont  # a core dependency; imported only here

    with TTFont(str(font_path(font)), lazy=True) as tt:
        return frozenset(tt.getBestCmap())


def font_covers(text: str, font: str = "sans") -> bool:
    """Return whether face ``font`` has a glyph for every non-space character of ``text``."""
    cmap = _cmap(font)
    return all(ord(c) in cmap for c in text if not c.isspace())


def _raster(text: str, font: ImageFont.FreeTypeFont) -> tuple[np.ndarray, int]:
    """Return the ``uint8`` coverage of ``text`` with some margin and the baseline's row.

    The text is drawn with its baseline on an integer row (anchor ``"ls"``), so every call puts
    glyphs on the same pixel grid and the "H" measured by :func:`_h_height` matches the H in
    any string.
    """
    # FreeType lays the text out once: ``getmask2`` returns the coverage bitmap of the ink box
    # and its offset from the anchor (what ``getbbox`` measures), and drawing it with ink 255 on
    # black copies it. The same pixels as ``ImageDraw.text`` on a canvas sized by ``getbbox``
    # (tests/render/test_fast_paths_same_bytes.py), without laying the text out twice.
    mask, (x0, y0) = font.getmask2(text, "L", anchor="ls")
    pad = 2
    mw, mh = mask.size
    canvas = Image.new("L", (mw + 2 * pad, mh + 2 * pad), 0)
    if mw and mh:
        canvas.im.paste(mask, (pad, pad, pad + mw, pad + mh))
    return np.asarray(canvas), pad - int(y0)


def _raster_ink(text: str, font: ImageFont.FreeTypeFont) -> tuple[np.ndarray, int] | None:
    """Return :func:`_raster` cropped to the ink (coverage > 0) and the baseline's row in it.

    ``None`` when ``text`` has no ink.
    """
    alpha, base = _raster(text, font)
    rows = np.flatnonzero(alpha.max(axis=1))
    cols = np.flatnonzero(alpha.max(axis=0))
    if rows.size == 0:
        return None
    patch = np.array(alpha[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1], dtype=np.uint8)
    return patch, int(base - rows[0])


ATLAS_MAX_SIZE: float = 64.0
"""Largest font size (pixels per em) whose glyphs :func:`_ink` composes from a glyph atlas;
larger text is rasterised whole by FreeType (:func:`_raster_ink`)."""

ATLAS_AFTER_USES: int = 4
"""A face and size's first strings are rasterised whole unless the atlas has their glyphs:
rasterising a glyph into the atlas costs about ten times its share of a whole-line raster, so
the atlas only pays where a size is used for many strings (prose, a receipt, a table)."""

ATLAS_MIN_FILL_LENGTH: int = 16
"""Only strings at least this long add their missing glyphs to an atlas (a short one saves
less than one glyph's rasterisation); shorter ones use the atlas when it has all of theirs."""

ATLAS_SMALL_SIZE: float = 32.0
"""Atlases up to this size (pixels per em) are cached :data:`ATLAS_CACHE_SIZE` deep, larger
ones :data:`BIG_ATLAS_CACHE_SIZE` deep."""

ATLAS_CACHE_SIZE: int = 128
"""Glyph atlases (one per face and size) up to :data:`ATLAS_SMALL_SIZE` kept, least recently
used first out: at most about 150 kB each."""

BIG_ATLAS_CACHE_SIZE: int = 24
"""Glyph atlases above :data:`ATLAS_SMALL_SIZE` kept: at most about 500 kB each."""


class _GlyphAtlas:
    """The glyphs of one face at one size, each rasterised once by FreeType, to compose lines.

    Pillow's basic layout draws a line glyph by glyph: each hinted glyph bitmap (the same
    wherever it lands) goes to the pen position rounded to a whole pixel; the pen moves by the
    glyph's hinted advance (26.6 fixed point) plus, where the face has a ``kern`` table, the
    pair's kerning as Pillow adds it; a pixel already inked is blended as ``s + t * (255 - s)
    / 255`` (Pillow's ``MULDIV255``), in drawing order. :func:`_ink` redoes exactly that from
    the cached glyphs (tests/render/test_fast_paths_same_bytes.py compares it with FreeType's
    raster).

    Besides the per-character ``glyphs`` and ``pairs``, every glyph has a slot: its pixels lie
    in one run of the atlas-wide arrays of :meth:`table` (rebuilt after glyphs are added), its
    kerning before every other slot in the matrix ``kerns`` (:data:`_NO_KERN` until measured),
    so a line is composed with a few array operations whatever its length.
    """

    __slots__ = ("font", "kerned", "glyphs", "pairs", "uses", "slots", "latin", "kerns",
                 "_table")

    def __init__(self, face: str, size: float) -> None:
        self.font = load_font(face, size)
        self.kerned = _has_kern_table(face)
        self.uses = 0  # strings asked for at this face and size
        self.glyphs: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray, int]] = {}
        self.pairs: dict[str, int] = {}
        self.slots: dict[str, int] = {}  # char -> its index in the table's per-glyph arrays
        self.latin = np.full(256, -1, np.intp)  # Latin-1 code point -> slot (-1: none yet)
        self.kerns = np.full((0, 0), _NO_KERN, np.int64)  # [slot, next slot] -> kerning
        self._table: _GlyphTable | None = None

    def glyph(self, char: str) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """Return (and cache) ``char``'s inked rows and columns, coverages and advance.

        Rows and columns count from the pen on the baseline; the advance is in 26.6 units.
        """
        if char in self.glyphs:
            return self.glyphs[char]
        mask, (x0, y0) = self.font.getmask2(char, "L", anchor="ls")
        w, h = mask.size
        alpha = np.frombuffer(bytes(mask), np.uint8).reshape(h, w)
        rows, cols = np.nonzero(alpha)
        hit = ((rows + y0).astype(np.int16), (cols + x0).astype(np.int16), alpha[rows, cols],
               round(self.font.getlength(char) * 64))
        self.glyphs[char] = hit
        slot = self.slots[char] = len(self.slots)
        if ord(char) < 256:
            self.latin[ord(char)] = slot
        self._table = None
        return hit

    def kern(self, pair: str) -> int:
        """Return (and cache) what Pillow adds to the first glyph's advance before the second."""
        g = self.glyphs
        k = round(self.font.getlength(pair) * 64) - g[pair[0]][3] - g[pair[1]][3]
        self.pairs[pair] = k
        return k

    def lookup(self, text: str) -> np.ndarray | None:
        """Return the slots of ``text``'s characters (``intp``), or ``None`` if one has none."""
        try:
            codes = np.frombuffer(text.encode("latin-1"), np.uint8)
        except UnicodeEncodeError:
            slots = self.slots
            idx = np.fromiter((slots.get(c, -1) for c in text), np.intp, len(text))
        else:
            idx = self.latin[codes]
        return idx if idx.size and idx.min() >= 0 else None

    def table(self) -> _GlyphTable:
        """Return the per-slot arrays of every glyph so far (rebuilt after a glyph is added)."""
        if self._table is None:
            self._table = _GlyphTable.of(list(self.glyphs.values()))
            n = len(self.slots)
            if self.kerns.shape[0] < n:  # room for more slots: the kerning found so far stays
                kerns = np.full((2 * n, 2 * n), _NO_KERN, np.int64)
                m = self.kerns.shape[0]
                kerns[:m, :m] = self.kerns
                self.kerns = kerns
        return self._table

    def steps(self, text: str, idx: np.ndarray, advance: np.ndarray) -> np.ndarray:
        """Return how far the pen moves after each character of ``text`` but the last (26.6).

        ``idx`` are the characters' slots and ``advance`` the advances of all but the last.
        """
        if not self.kerned or idx.size < 2:
            return advance
        cap = self.kerns.shape[1]
        pair = idx[:-1] * cap + idx[1:]
        k = self.kerns.ravel().take(pair)
        if k.min() == _NO_KERN:  # pairs not measured yet
            for i in np.flatnonzero(k == _NO_KERN).tolist():
                known = self.pairs.get(text[i:i + 2])
                k[i] = self.kern(text[i:i + 2]) if known is None else known
            self.kerns.ravel()[pair] = k
        return advance + k


_NO_KERN: int = np.iinfo(np.int64).min
""":attr:`_GlyphAtlas.kerns` of a pair whose kerning is not measured yet."""

_NO_INK: int = 1 << 40
"""The column and row extents of a glyph without ink (a space): never a line's minimum or
maximum (stored as ``+_NO_INK`` minimum and ``-_NO_INK`` maximum)."""


@dataclass(frozen=True)
class _GlyphTable:
    """The glyphs of an atlas as arrays indexed by slot, their pixels in one run per glyph.

    Attributes:
        meta: ``int64`` ``(slots, 7)``: per slot its hinted advance (26.6 units), pixel count,
            first pixel's index in ``rows``/``cols``/``vals``, first and last ink column and
            first and last ink row from the pen on the baseline (``±_NO_INK`` for a glyph
            without ink); the columns are named by ``_ADVANCE`` ... ``_ROW_MAX``.
        rows, cols: ``int64`` every glyph's inked pixels, from the pen on the baseline.
        vals: ``uint16`` their coverages.
        flats: canvas stride -> ``rows * stride + cols`` (filled on demand).
    """

    meta: np.ndarray
    rows: np.ndarray
    cols: np.ndarray
    vals: np.ndarray
    flats: dict[int, np.ndarray]

    @classmethod
    def of(cls, glyphs: list[tuple[np.ndarray, np.ndarray, np.ndarray, int]]) -> _GlyphTable:
        """Return the table of ``glyphs`` (``_GlyphAtlas.glyph`` entries, in slot order)."""
        meta = np.zeros((len(glyphs), 7), np.int64)
        meta[:, _ADVANCE] = [g[3] for g in glyphs]
        meta[:, _COUNT] = [g[2].size for g in glyphs]
        meta[:, _START] = np.cumsum(meta[:, _COUNT]) - meta[:, _COUNT]
        none = np.zeros(0, np.int16)
        rows = np.concatenate([g[0] for g in glyphs] + [none]).astype(np.int64)
        cols = np.concatenate([g[1] for g in glyphs] + [none]).astype(np.int64)
        inked = meta[:, _COUNT] > 0
        if inked.any():  # each glyph's first and last ink column and row: segment reductions
            starts = meta[inked, _START]
            for first, coords in ((_COL_MIN, cols), (_ROW_MIN, rows)):
                meta[inked, first] = np.minimum.reduceat(coords, starts)
                meta[inked, first + 1] = np.maximum.reduceat(coords, starts)
        meta[~inked, _COL_MIN:] = (_NO_INK, -_NO_INK, _NO_INK, -_NO_INK)
        return cls(meta=meta, rows=rows, cols=cols,
                   vals=np.concatenate([g[2] for g in glyphs] + [none]).astype(np.uint16),
                   flats={})

    def flat(self, stride: int) -> np.ndarray:
        """Return (and cache) every pixel's offset ``row * stride + col`` from the pen."""
        hit = self.flats.get(stride)
        if hit is None:
            hit = self.flats[stride] = self.rows * stride + self.cols
        return hit


_ADVANCE, _COUNT, _START, _COL_MIN, _COL_MAX, _ROW_MIN, _ROW_MAX = range(7)
"""The columns of :attr:`_GlyphTable.meta`."""


@lru_cache(maxsize=16)
def _has_kern_table(font: str) -> bool:
    """Return whether face ``font`` has a TrueType ``kern`` table (FreeType's basic kerning)."""
    from fontTools.ttLib import TTFont

    with TTFont(str(font_path(font)), lazy=True) as tt:
        return "kern" in tt


def _atlas(font: str, size: float) -> _GlyphAtlas:
    """Return the cached glyph atlas of face ``font`` at ``size``."""
    return _small_atlas(font, size) if size <= ATLAS_SMALL_SIZE else _big_atlas(font, size)


@lru_cache(maxsize=ATLAS_CACHE_SIZE)
def _small_atlas(font: str, size: float) -> _GlyphAtlas:
    """Return the cached glyph atlas of face ``font`` at ``size`` (a small size)."""
    return _GlyphAtlas(font, size)


@lru_cache(maxsize=BIG_ATLAS_CACHE_SIZE)
def _big_atlas(font: str, size: float) -> _GlyphAtlas:
    """Return the cached glyph atlas of face ``font`` at ``size`` (a large size)."""
    return _GlyphAtlas(font, size)


def _ink(text: str, font: str, size: float) -> tuple[np.ndarray, int] | None:
    """Return ``text``'s raster in face ``font`` at ``size`` cropped to the ink, and its baseline.

    The same pixels as :func:`_raster_ink` (FreeType's raster of the whole line); up to
    :data:`ATLAS_MAX_SIZE` composed from the glyph atlas, several times faster. ``None`` when
    ``text`` has no ink.
    """
    if size > ATLAS_MAX_SIZE:
        return _raster_ink(text, load_font(font, size))
    at = _atlas(font, size)
    at.uses += 1
    idx = at.lookup(text)
    if idx is None:
        if at.uses <= ATLAS_AFTER_USES or len(text) < ATLAS_MIN_FILL_LENGTH:
            return _raster_ink(text, at.font)  # filling the atlas would cost more than it saves
        for c in text:
            at.glyph(c)
        idx = at.lookup(text)
        if idx is None:
            return None
    table = at.table()
    meta = table.meta.take(idx, axis=0)  # per character: advance, pixels, extents
    pen = np.zeros(idx.size, np.int64)
    np.cumsum(at.steps(text, idx, meta[:-1, _ADVANCE]), out=pen[1:])
    x = (pen + 32) >> 6  # PIXEL(): round
    left, right = meta[:, _COL_MIN] + x, meta[:, _COL_MAX] + x
    r0 = int(meta[:, _ROW_MIN].min())
    if r0 == _NO_INK:
        return None
    c0 = int(left.min())
    h, w = int(meta[:, _ROW_MAX].max()) - r0 + 1, int(right.max()) - c0 + 1
    stride = 1 << max(8, (w - 1).bit_length())
    pairs = _overlaps_pairwise(left, right)
    if pairs:  # even-numbered glyphs first, then the odd ones
        meta = np.concatenate([meta[0::2], meta[1::2]])
        x = np.concatenate([x[0::2], x[1::2]])
    count = meta[:, _COUNT]
    end = np.cumsum(count)
    pick = np.repeat(meta[:, _START] - end + count, count) + np.arange(int(end[-1]))
    flat = table.flat(stride).take(pick) + np.repeat(x - (r0 * stride + c0), count)
    vals = table.vals.take(pick)
    canvas = np.zeros(h * stride, np.uint16)
    if pairs:
        _blend_pairwise(canvas, flat, vals, int(end[(idx.size + 1) // 2 - 1]))
    else:
        _blend_in_order(canvas, flat, vals)
    return canvas.reshape(h, stride)[:, :w].astype(np.uint8), -r0


def _overlaps_pairwise(left: np.ndarray, right: np.ndarray) -> bool:
    """Return whether no column holds ink of more than two glyphs, and only of neighbours.

    ``left``/``right`` are the glyphs' first and last ink columns in drawing order (``±_NO_INK``
    for a glyph without ink): true when every glyph ends left of every glyph from the
    next-but-one on, so a pixel is inked by at most two glyphs, consecutive ones.
    """
    if left.size < 3:
        return True
    return bool((np.maximum.accumulate(right[:-2])
                 < np.minimum.accumulate(left[::-1])[::-1][2:]).all())


def _blend_pairwise(canvas: np.ndarray, flat: np.ndarray, vals: np.ndarray, split: int) -> None:
    """Draw pixels ``vals`` at ``flat`` into ``canvas`` (``uint16``, zero), pairs over each other.

    The first ``split`` pixels (the even-numbered glyphs) never share a pixel, nor do the rest:
    where one of each meets, Pillow's blend of the later over the earlier, ``s + round(t * (255
    - s) / 255)``, is ``s + t - round(s * t / 255)`` (no ties: 255 is odd), the same in either
    order, so drawing all the first and then blending the rest over them gives Pillow's pixels.
    """
    canvas[flat[:split]] = vals[:split]
    at, s = flat[split:], vals[split:]
    t = canvas[at]
    prod = s * t + 128  # MULDIV255 in 16 bits: s * t + 128 + 254 < 2 ** 16
    canvas[at] = s + t - ((prod + (prod >> 8)) >> 8)


def _blend_in_order(canvas: np.ndarray, flat: np.ndarray, vals: np.ndarray) -> None:
    """Draw pixels ``vals`` at ``flat`` (in drawing order) into ``canvas`` as Pillow does.

    A pixel inked by several glyphs is blended over in drawing order, each ``s + t * (255 -
    s) / 255`` with Pillow's rounding (three layers do not blend associatively).
    """
    canvas[flat] = vals  # right where one glyph inks a pixel; overlaps are redone below
    multi = np.bincount(flat, minlength=canvas.size)[flat] > 1
    if not multi.any():
        return
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
    canvas[where[first]] = acc


@lru_cache(maxsize=1 << 14)
def _h_height(font: str, size: float) -> int:
    """Return the ink height (rows with coverage >= 50 %) of "H" in ``font`` at ``size``."""
    alpha, _ = _raster("H", load_font(font, size))
    rows = np.flatnonzero((alpha >= 128).any(axis=1))
    return int(rows[-1] - rows[0] + 1) if rows.size else 0


@lru_cache(maxsize=4096)
def size_for_glyph_height(font: str, glyph_height: float) -> float:
    """Return the font size (a multiple of :data:`SIZE_STEP`) whose "H" is ``glyph_height`` tall.

    Starts from the size that the unhinted cap-height ratio predicts and walks in steps of
    :data:`SIZE_STEP` towards the target; of the sizes tried, returns the one whose measured
    height is nearest (the smallest such size on ties).
    """
    if not (MIN_GLYPH_HEIGHT <= glyph_height <= MAX_GLYPH_HEIGHT) or math.isnan(glyph_height):
        raise ValueError(f"glyph_height must be in [{MIN_GLYPH_HEIGHT}, {MAX_GLYPH_HEIGHT}] px, "
                         f"got {glyph_height}")
    ratio = _h_height(font, 200.0) / 200.0
    size = max(SIZE_STEP, round(glyph_height / ratio / SIZE_STEP) * SIZE_STEP)
    best = (abs(_h_height(font, size) - glyph_height), size)
    for direction in (1.0, -1.0):
        s = size
        for _ in range(int(4 / SIZE_STEP / ratio) + 4):  # about four pixels of glyph height
            s += direction * SIZE_STEP
            if s < SIZE_STEP:
                break
            h = _h_height(font, s)
            best = min(best, (abs(h - glyph_height), s))
            if (h - glyph_height) * direction > 0.5:  # past the target on this side
                break
    return best[1]


def truetype_text(text: str, glyph_height: float, font: str = "sans") -> TextPatch:
    """Render ``text`` in TrueType face ``font`` with a capital "H" ``glyph_height`` px tall.

    Returns a :class:`TextPatch` cropped tightly to the ink (coverage > 0), its ``mask`` the
    pixels with coverage >= 50 %, its ``glyph_height`` the measured ink height of "H" at the
    chosen size (an integer number of pixels within one of the request) and its ``baseline``
    the baseline's row in the patch (to align several strings on one line).
    """
    if not text.strip():
        raise ValueError("truetype_text needs non-blank text")
    if "\n" in text:
        raise ValueError("truetype_text renders one line; split multi-line text yourself")
    size = size_for_glyph_height(font, float(glyph_height))
    key = (text, size, font)
    hit = _PATCHES.lookup(key)
    if hit is None:
        inked = _ink(text, font, size)
        if inked is None:
            raise ValueError(f"{text!r} has no visible glyphs in face {font!r}")
        patch, baseline = inked
        mask = patch >= 128
        patch.flags.writeable = False  # shared by every later call: nobody may change it
        mask.flags.writeable = False
        hit = (patch, mask, baseline)
        if patch.size <= PATCH_CACHE_MAX_PIXELS:
            _PATCHES[key] = hit
    patch, mask, baseline = hit
    return TextPatch(text=text, alpha=patch, mask=mask,
                     glyph_height=float(_h_height(font, size)), baseline=baseline)


PATCH_CACHE_SIZE: int = 1024
"""Rendered strings :func:`truetype_text` keeps (least recently used first out)."""

PATCH_CACHE_MAX_PIXELS: int = 1 << 13
"""Largest patch (pixels) :func:`truetype_text` caches: 16 MiB at most in all (alpha and mask)."""

_PATCHES: LRUCache = LRUCache(PATCH_CACHE_SIZE)
"""``(text, font size, face) -> (alpha, mask, baseline)``: read-only arrays, per process. The
raster depends only on these and the packaged font file (Pillow and FreeType are fixed per
process)."""


def truetype_lines(
    lines: list[str] | tuple[str, ...], glyph_height: float, font: str = "sans",
    line_spacing: float = 1.6, align: str = "left", width: int | None = None,
) -> tuple[TextPatch, list[Box]]:
    """Render several lines (a label, an address, a receipt) as one :class:`TextPatch`.

    Baselines are ``round(glyph_height * line_spacing)`` px apart; lines are aligned
    ``"left"``, ``"right"`` or ``"center"`` within ``width`` px (default: the widest line).
    Blank lines keep their space. Returns the patch (cropped tightly to the ink; its ``text`` the
    lines joined by newlines, its ``baseline`` the first line's) and each line's ink box in the
    patch (``(0, 0, 0, 0)`` for a blank line).
    """
    if align not in ("left", "right", "center"):
        raise ValueError(f"align must be 'left', 'right' or 'center', got {align!r}")
    if not any(line.strip() for line in lines):
        raise ValueError("truetype_lines needs at least one non-blank line")
    patches = [truetype_text(line, glyph_height, font) if line.strip() else None for line in lines]
    drawn = [p for p in patches if p is not None]
    widest = max(p.alpha.shape[1] for p in drawn)
    if width is not None and width < widest:
        raise ValueError(f"width {width} px is narrower than the widest line ({widest} px)")
    span = widest if width is None else width
    pitch = max(1, round(glyph_height * line_spacing))
    ascent = max(int(p.baseline or 0) for p in drawn)
    descent = max(p.alpha.shape[0] - int(p.baseline or 0) for p in drawn)
    canvas = np.zeros((ascent + pitch * (len(lines) - 1) + descent, span), np.uint8)
    boxes: list[Box] = []
    for i, p in enumerate(patches):
        if p is None:
            boxes.append((0, 0, 0, 0))
            continue
        pw, ph = p.size
        x = {"left": 0, "right": span - pw, "center": (span - pw) // 2}[align]
        y = ascent + i * pitch - int(p.baseline or 0)
        np.maximum(canvas[y:y + ph, x:x + pw], p.alpha, out=canvas[y:y + ph, x:x + pw])
        boxes.append((x, y, x + pw, y + ph))
    rows = np.flatnonzero(canvas.max(axis=1))
    cols = np.flatnonzero(canvas.max(axis=0))
    r0, c0 = int(rows[0]), int(cols[0])
    alpha = np.ascontiguousarray(canvas[r0:rows[-1] + 1, c0:cols[-1] + 1])
    shifted = [(b[0] - c0, b[1] - r0, b[2] - c0, b[3] - r0) if b[2] else b for b in boxes]
    patch = TextPatch(text="\n".join(lines), alpha=alpha, mask=alpha >= 128,
                      glyph_height=drawn[0].glyph_height, baseline=ascent - r0)
    return patch, shifted


ALL_FACES: tuple[str, ...] = (
    "sans", "sans-bold", "serif", "serif-bold", "mono", "mono-bold", "condensed",
    "condensed-bold", "stix", "stix-bold",
)
"""Every face :func:`render_text` accepts (= :data:`FONT_FACES`)."""

ITALIC_SHEAR: float = 0.2
"""Horizontal shear (x shift per row of height) of the slanted text ``italic=True`` asks for."""


def cap_height_at_unit_scale(face: str, thickness: int = 1) -> float:
    """Return the ink height of a capital "H" in ``face`` per pixel of em size (measured at 100)."""
    return _h_height(_face(face, thickness), 100.0) / 100.0


def _face(face: str, thickness: int) -> str:
    """Return the TrueType face for ``face`` drawn ``thickness`` strokes wide (>= 2 means bold)."""
    if not isinstance(face, str) or face not in ALL_FACES:
        raise ValueError(f"unknown text face {face!r}: the Hershey stroke faces are retired; "
                         f"use a TrueType face of {ALL_FACES}")
    if thickness >= 2 and not face.endswith("-bold"):
        return f"{face}-bold"
    return face


def render_text(
    text: str, glyph_height: float, face: str = "sans", thickness: int = 1,
    italic: bool = False,
) -> TextPatch:
    """Render ``text`` so a capital letter's ink is ``glyph_height`` pixels tall.

    ``face`` is a TrueType face of :data:`ALL_FACES`; ``thickness`` >= 2 takes its bold variant
    and ``italic`` slants the ink by :data:`ITALIC_SHEAR`. Returns a :class:`TextPatch` cropped
    tightly to the ink (the patch is its own box).
    """
    if not text.strip():
        raise ValueError("render_text needs non-blank text")
    patch = truetype_text(text, max(float(glyph_height), MIN_GLYPH_HEIGHT), _face(face, thickness))
    return _slanted(patch) if italic else patch


def _slanted(patch: TextPatch) -> TextPatch:
    """Return ``patch`` sheared right by :data:`ITALIC_SHEAR` (rows unchanged), cropped to ink."""
    h, w = patch.alpha.shape
    shift = int(np.ceil(ITALIC_SHEAR * h)) + 1
    m = np.float32([[1.0, -ITALIC_SHEAR, ITALIC_SHEAR * (h - 1)], [0.0, 1.0, 0.0]])
    sheared = cv2.warpAffine(patch.alpha, m, (w + shift, h), flags=cv2.INTER_LINEAR)
    rows = np.flatnonzero(sheared.max(axis=1))
    cols = np.flatnonzero(sheared.max(axis=0))
    alpha = np.ascontiguousarray(sheared[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1])
    baseline = None if patch.baseline is None else patch.baseline - int(rows[0])
    return TextPatch(text=patch.text, alpha=alpha, mask=alpha >= 128,
                     glyph_height=patch.glyph_height, baseline=baseline)
