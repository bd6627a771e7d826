"""Text reading for the heuristic agent: Tesseract when installed, a built-in glyph matcher else.

:func:`read_words` is the one entry point: it takes an RGB or gray image (what a tool returned at
view resolution), normalizes it (gray, dark ink on light paper, text upscaled to a height OCR
likes) and returns :class:`OcrWord` items with boxes in the input image's pixel coordinates.
:func:`read_words_batch` reads several images in one Tesseract process by tiling them into one
canvas with known offsets (a process start costs 30-80 ms).

The reader is chosen by :func:`ocr_backend`: ``$M3GYM_OCR`` (or :func:`forced_ocr_backend`) set
to ``tesseract`` or ``glyph`` fixes it, ``auto`` (the default) takes Tesseract when it is installed.
A measurement that must not depend on the machine (the difficulty-monotone check) fixes it.

When the ``tesseract`` binary is not on ``PATH`` the :class:`GlyphMatcher` reads instead: it
binarizes, splits the ink into connected components, groups them into lines and words, and
classifies each component by normalized correlation with templates rendered in the TrueType
faces m3gym draws its evidence text with (:data:`TEMPLATE_FACES`, regular and bold). It is
made for the clean printed codes of m3gym scenes, not for general text.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np

from m3gym.pixels import to_gray

TESSERACT_TIMEOUT_S = 20.0
"""Seconds one Tesseract process may run before it is abandoned (its words count as none)."""

TARGET_GLYPH_PX = 32.0
"""Capital-letter height (pixels) text is scaled to before reading."""

GLYPH_CHARS = "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789$%"
"""Characters the fallback glyph matcher knows (plus ``-``, ``.``, ``:`` found by shape)."""

TEMPLATE_FACES: tuple[str, ...] = ("sans", "serif", "mono", "condensed", "stix")
"""The TrueType families m3gym renders text with, each drawn regular and bold (templates of the
glyph matcher; :data:`m3gym.tasks.render.READABLE_FACES` are among the bold ones)."""


@dataclass(frozen=True)
class OcrWord:
    """One word read from an image: text, confidence 0-100 and pixel box (x0, y0, x1, y1)."""

    text: str
    conf: float
    box: tuple[int, int, int, int]
    line: int = 0


def tesseract_available() -> bool:
    """Return whether the ``tesseract`` binary is on ``PATH`` (checked on every call)."""
    return shutil.which("tesseract") is not None


OCR_ENV = "M3GYM_OCR"
"""Environment variable that fixes the reader: ``auto`` (default), ``tesseract`` or ``glyph``."""

OCR_BACKENDS: tuple[str, ...] = ("auto", "tesseract", "glyph")
"""The accepted values of :data:`OCR_ENV` and :func:`forced_ocr_backend`."""

_forced: list[str] = []  # a stack: the innermost forced_ocr_backend wins


class OcrUnavailable(RuntimeError):
    """The reader that was asked for is not installed."""


def ocr_backend() -> str:
    """Return the name of the reader :func:`read_words` uses now: ``tesseract`` or ``glyph``.

    Raises :class:`OcrUnavailable` when Tesseract is asked for (by :func:`forced_ocr_backend` or
    ``$M3GYM_OCR``) and is not installed, and ``ValueError`` for an unknown setting.
    """
    choice = _forced[-1] if _forced else (os.environ.get(OCR_ENV) or "auto").strip().lower()
    if choice not in OCR_BACKENDS:
        raise ValueError(f"{OCR_ENV}={choice!r}; use one of {', '.join(OCR_BACKENDS)}")
    if choice == "tesseract" and not tesseract_available():
        raise OcrUnavailable("the tesseract OCR backend was asked for but `tesseract` is not on "
                             "PATH (Debian/Ubuntu: apt-get install tesseract-ocr)")
    if choice == "auto":
        return "tesseract" if tesseract_available() else "glyph"
    return choice


@contextlib.contextmanager
def forced_ocr_backend(name: str) -> Iterator[str]:
    """Read with ``name`` (``tesseract``/``glyph``/``auto``) inside the block; yield the reader.

    Raises :class:`OcrUnavailable` on entry when ``name`` is ``tesseract`` and it is absent.
    """
    if name not in OCR_BACKENDS:
        raise ValueError(f"unknown OCR backend {name!r}; use one of {', '.join(OCR_BACKENDS)}")
    _forced.append(name)
    try:
        backend = ocr_backend()
    except OcrUnavailable:
        _forced.pop()
        raise
    try:
        yield backend
    finally:
        _forced.pop()


# --------------------------------------------------------------------------------------------
# normalization


def stretch(gray: np.ndarray, cutoff: float = 1.0) -> np.ndarray:
    """Return ``gray`` with its ``cutoff``..``100-cutoff`` percentile range stretched to 0..255.

    The percentiles are taken over the central 80 % of the image, so a frame or border around
    a cropped label does not mask faint ink.
    """
    h, w = gray.shape[:2]
    core = gray[h // 10:h - h // 10, w // 10:w - w // 10] if min(h, w) >= 10 else gray
    lo, hi = np.percentile(core, (cutoff, 100.0 - cutoff))
    if hi - lo < 1.0:
        return gray
    lut = np.clip((np.arange(256, dtype=np.float32) - lo) * (255.0 / (hi - lo)), 0, 255)
    return cv2.LUT(gray, lut.astype(np.uint8))


def dark_on_light(gray: np.ndarray) -> np.ndarray:
    """Return ``gray`` inverted when its background (the median) is darker than mid-gray."""
    return cv2.bitwise_not(gray) if float(np.median(gray)) < 128.0 else gray



def prepare(image: np.ndarray, scale: float = 1.0, enhance: bool = True,
            invert: bool | None = None) -> np.ndarray:
    """Return the gray, optionally contrast-stretched image scaled by ``scale``.

    ``invert`` None makes it dark-on-light by its median; True/False inverts or keeps it.
    """
    gray = to_gray(image)
    if enhance:
        gray = stretch(gray)
    gray = dark_on_light(gray) if invert is None else (cv2.bitwise_not(gray) if invert else gray)
    if abs(scale - 1.0) > 0.05:
        h, w = gray.shape
        interp = cv2.INTER_CUBIC if scale > 1 else cv2.INTER_AREA
        gray = cv2.resize(gray, (max(1, round(w * scale)), max(1, round(h * scale))),
                          interpolation=interp)
    return gray


# --------------------------------------------------------------------------------------------
# tesseract


def _parse_tsv(tsv: str) -> list[OcrWord]:
    """Return the words of Tesseract's TSV output (level-5 rows with text)."""
    words: list[OcrWord] = []
    for row in tsv.splitlines()[1:]:
        parts = row.split("\t")
        if len(parts) < 12 or parts[0] != "5" or not parts[11].strip():
            continue
        x, y, w, h = (int(p) for p in parts[6:10])
        line = int(parts[2]) * 10000 + int(parts[3]) * 100 + int(parts[4])
        words.append(OcrWord(parts[11].strip(), float(parts[10]), (x, y, x + w, y + h), line))
    return words


def run_tesseract(gray: np.ndarray, psm: int = 11) -> list[OcrWord]:
    """Return the words Tesseract reads in ``gray`` (one process; PNG through stdin)."""
    ok, png = cv2.imencode(".png", gray)
    if not ok:
        return []
    try:
        proc = subprocess.run(
            ["tesseract", "stdin", "stdout", "--psm", str(psm), "-l", "eng", "tsv"],
            input=png.tobytes(), capture_output=True, timeout=TESSERACT_TIMEOUT_S, check=False,
            env={**os.environ, "OMP_THREAD_LIMIT": "1"})  # threads slow small images down
    except (OSError, subprocess.TimeoutExpired):
        return []
    return _parse_tsv(proc.stdout.decode("utf-8", errors="replace"))


def tile(images: Sequence[np.ndarray], gap: int = 24) -> tuple[np.ndarray, list[tuple[int, int]]]:
    """Return the gray ``images`` stacked vertically on white with gaps, and each one's offset."""
    width = max(im.shape[1] for im in images) + 2 * gap
    height = sum(im.shape[0] for im in images) + gap * (len(images) + 1)
    canvas = np.full((height, width), 255, np.uint8)
    offsets: list[tuple[int, int]] = []
    y = gap
    for im in images:
        canvas[y:y + im.shape[0], gap:gap + im.shape[1]] = im
        offsets.append((gap, y))
        y += im.shape[0] + gap
    return canvas, offsets


def _split_tiles(words: list[OcrWord], images: Sequence[np.ndarray],
                 offsets: list[tuple[int, int]]) -> list[list[OcrWord]]:
    """Return ``words`` assigned to the tile holding their centre, boxes made tile-relative."""
    out: list[list[OcrWord]] = [[] for _ in images]
    for w in words:
        cy = (w.box[1] + w.box[3]) / 2
        for k, ((ox, oy), im) in enumerate(zip(offsets, images)):
            if oy <= cy < oy + im.shape[0]:
                x0, y0, x1, y1 = w.box
                out[k].append(OcrWord(w.text, w.conf, (x0 - ox, y0 - oy, x1 - ox, y1 - oy),
                                      w.line))
                break
    return out


# --------------------------------------------------------------------------------------------
# public reading API


def read_words(image: np.ndarray, scale: float = 1.0, enhance: bool = True,
               psm: int = 11, both_polarities: bool = False) -> list[OcrWord]:
    """Return the words in ``image`` (boxes in the input's pixels), by Tesseract or glyphs."""
    return read_words_batch([image], scale, enhance, psm, both_polarities)[0]


def read_words_batch(images: Sequence[np.ndarray], scale: float = 1.0, enhance: bool = True,
                     psm: int = 11, both_polarities: bool = False) -> list[list[OcrWord]]:
    """Return the words of each image, read in one Tesseract process (tiled) when available.

    With ``both_polarities`` each image is also read inverted (for light ink on a dark plate
    inside a lighter surround) and the words of the more confident reading are kept.
    """
    if not images:
        return []
    if both_polarities:
        grays = [prepare(im, scale, enhance, inv) for inv in (False, True) for im in images]
    else:
        grays = [prepare(im, scale, enhance) for im in images]
    if ocr_backend() == "tesseract":
        if len(grays) == 1:
            words_per = [run_tesseract(grays[0], psm)]
        else:
            canvas, offsets = tile(grays)
            words_per = _split_tiles(run_tesseract(canvas, psm), grays, offsets)
    else:
        matcher = glyph_matcher()
        words_per = [matcher.read(g) for g in grays]
    if both_polarities:
        n = len(images)
        words_per = [max(words_per[k], words_per[k + n], key=_reading_score) for k in range(n)]
    if abs(scale - 1.0) <= 0.05:
        return words_per
    inv = 1.0 / scale
    return [[OcrWord(w.text, w.conf, tuple(int(round(v * inv)) for v in w.box), w.line)
             for w in ws] for ws in words_per]


def words_text(words: Sequence[OcrWord]) -> str:
    """Return the words joined line by line (a newline between lines)."""
    lines: dict[int, list[OcrWord]] = {}
    for w in words:
        lines.setdefault(w.line, []).append(w)
    return "\n".join(" ".join(w.text for w in sorted(ws, key=lambda w: w.box[0]))
                     for _, ws in sorted(lines.items()))


def mean_confidence(words: Sequence[OcrWord]) -> float:
    """Return the character-weighted mean confidence of ``words`` (0 when there are none)."""
    alnum = [(sum(c.isalnum() for c in w.text), max(0.0, w.conf)) for w in words]
    total = sum(n for n, _ in alnum)
    return sum(n * c for n, c in alnum) / total if total else 0.0


def _reading_score(words: Sequence[OcrWord]) -> float:
    """Return confidence times the number of letters/digits read (prefers more, surer text)."""
    return mean_confidence(words) * sum(sum(c.isalnum() for c in w.text) for w in words)


# --------------------------------------------------------------------------------------------
# fallback: glyph matcher

_TEMPLATE_SIZE = (16, 24)  # (w, h) every glyph is compared at


def _normalize_glyph(mask: np.ndarray) -> np.ndarray:
    """Return a binary glyph crop resized to the template size, zero-mean unit-norm float."""
    g = cv2.resize(mask.astype(np.float32), _TEMPLATE_SIZE, interpolation=cv2.INTER_AREA)
    g -= g.mean()
    n = float(np.linalg.norm(g))
    return (g / n).ravel() if n > 1e-6 else g.ravel()


class GlyphMatcher:
    """A tiny OCR for m3gym's rendered text: components matched against glyph templates."""

    def __init__(self) -> None:
        feats: list[np.ndarray] = []
        labels: list[str] = []
        aspects: list[float] = []
        for face in TEMPLATE_FACES:
            for thick in (1, 2):
                for ch in GLYPH_CHARS:
                    mask = _render_glyph(ch, face, thick)
                    if mask is None:
                        continue
                    feats.append(_normalize_glyph(mask))
                    labels.append(ch)
                    aspects.append(mask.shape[1] / mask.shape[0])
        self.features = np.stack(feats)
        self.labels = labels
        self.aspects = np.array(aspects, np.float32)

    def classify(self, mask: np.ndarray) -> tuple[str, float]:
        """Return the best character for a binary glyph mask and its correlation (0..1)."""
        f = _normalize_glyph(mask)
        aspect = mask.shape[1] / mask.shape[0]
        scores = self.features @ f - 0.35 * np.abs(np.log(self.aspects / max(aspect, 1e-3)))
        k = int(np.argmax(scores))
        return self.labels[k], float(scores[k])

    def read(self, gray: np.ndarray) -> list[OcrWord]:
        """Return the words found in a dark-on-light gray image."""
        _, ink = cv2.threshold(gray, 0, 255, cv2.THRESH_BINARY_INV | cv2.THRESH_OTSU)
        n, _, stats, _ = cv2.connectedComponentsWithStats(ink, connectivity=8)
        comps = [tuple(int(v) for v in stats[i]) for i in range(1, n)
                 if stats[i, cv2.CC_STAT_AREA] >= 4]
        if not comps:
            return []
        tall = [c for c in comps if 6 <= c[3] <= gray.shape[0] * 0.9 and c[2] <= 3 * c[3]]
        if not tall:
            return []
        lines = _group_lines(tall)
        words: list[OcrWord] = []
        for li, line in enumerate(lines):
            hmed = float(np.median([c[3] for c in line]))
            y0 = min(c[1] for c in line)
            y1 = max(c[1] + c[3] for c in line)
            members = [c for c in line if c[3] >= 0.55 * hmed]
            # small marks (hyphens, dots) lying inside the line band
            members += [c for c in comps if c not in line and c[1] >= y0 - 2
                        and c[1] + c[3] <= y1 + 2 and c[3] < 0.55 * hmed and c[2] < 2 * hmed]
            members.sort(key=lambda c: c[0])
            words += _line_words(self, ink, members, hmed, li)
        return words


def _render_glyph(ch: str, face: str, thickness: int) -> np.ndarray | None:
    """Return the tight binary mask of ``ch`` in ``face`` (bold when ``thickness`` >= 2)."""
    from m3gym.typeface import render_text

    mask = render_text(ch, 40.0, face, thickness).mask
    ys, xs = np.nonzero(mask)
    if ys.size == 0:
        return None
    return mask[ys.min():ys.max() + 1, xs.min():xs.max() + 1]


def _group_lines(comps: list[tuple[int, ...]]) -> list[list[tuple[int, ...]]]:
    """Return components grouped into text lines by vertical overlap, top to bottom."""
    lines: list[list[tuple[int, ...]]] = []
    for c in sorted(comps, key=lambda c: c[1] + c[3] / 2):
        cy = c[1] + c[3] / 2
        for line in lines:
            ly0 = min(d[1] for d in line)
            ly1 = max(d[1] + d[3] for d in line)
            if ly0 <= cy <= ly1:
                line.append(c)
                break
        else:
            lines.append([c])
    return lines


def _line_words(matcher: GlyphMatcher, ink: np.ndarray, members: list[tuple[int, ...]],
                hmed: float, line_id: int) -> list[OcrWord]:
    """Return the words of one line of components (split at gaps wider than 0.6 glyph)."""
    words: list[OcrWord] = []
    chars: list[str] = []
    confs: list[float] = []
    box = [0, 0, 0, 0]
    prev_x1: int | None = None
    for x, y, w, h, _area in members:
        if prev_x1 is not None and x - prev_x1 > 0.6 * hmed and chars:
            words.append(OcrWord("".join(chars), 100.0 * float(np.mean(confs)), tuple(box),
                                 line_id))
            chars, confs = [], []
        if not chars:
            box = [x, y, x + w, y + h]
        box = [min(box[0], x), min(box[1], y), max(box[2], x + w), max(box[3], y + h)]
        if h < 0.55 * hmed:
            ch, conf = ("-" if w > 1.3 * h else "."), 0.8
        else:
            ch, conf = matcher.classify(ink[y:y + h, x:x + w] > 0)
        chars.append(ch)
        confs.append(max(0.0, conf))
        prev_x1 = x + w
    if chars:
        words.append(OcrWord("".join(chars), 100.0 * float(np.mean(confs)), tuple(box), line_id))
    return words


@lru_cache(maxsize=1)
def glyph_matcher() -> GlyphMatcher:
    """Return the process-wide glyph matcher (templates built once)."""
    return GlyphMatcher()
