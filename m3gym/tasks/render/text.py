"""Text at a given glyph height, pasted into task images: :class:`PlacedText` and pasting.

:func:`render_text` (from :mod:`m3gym.typeface`, re-exported here) renders a string so a capital
letter's ink is ``glyph_height`` pixels tall and returns a :class:`TextPatch`; :func:`paste_text`
/ :func:`draw_text` composite it and return a :class:`PlacedText` with the exact pixel box and ink
mask. Every face is a bundled TrueType face (FreeType via Pillow): the Hershey stroke faces of
``cv2.putText`` were retired in benchmark v4 (a strong OCR reader and real documents never see
them). A face is a name of :data:`ALL_FACES`; passing a ``cv2.FONT_HERSHEY_*`` id raises.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.cache import LRUCache
from m3gym.tasks.render.util import Box, Color, luminance, solid_image
from m3gym.typeface import (
    ALL_FACES,
    ITALIC_SHEAR,
    TextPatch,
    cap_height_at_unit_scale,
    render_text,
)

__all__ = [
    "ALL_FACES", "ITALIC_SHEAR", "READABLE_FACES", "PlacedText", "TextPatch",
    "cap_height_at_unit_scale", "draw_text", "paste_text", "random_font", "render_text",
]

READABLE_FACES: tuple[str, ...] = ("sans-bold", "serif-bold", "mono-bold", "condensed-bold")
"""TrueType faces that stay legible at small sizes (glyph evidence, distractor labels).

The bold DejaVu faces: hinting snaps a regular face's stems to one pixel at 8-16 px glyphs,
thinner than the anti-aliased strokes of the retired Hershey faces, so a zoomed crop of a
regular-face digit could stay under the legibility contrast; STIX bold is thinner still.
"""


@dataclass(frozen=True)
class PlacedText:
    """Text composited into an image: its tight pixel box and ink mask (mask shape = box shape)."""

    text: str
    box: Box
    mask: np.ndarray
    glyph_height: float


def paste_text(img: np.ndarray, patch: TextPatch, x: int, y: int, color: Color) -> PlacedText:
    """Composite ``patch`` in ``color`` into ``img`` (in place) with its top-left at ``(x, y)``.

    The patch must lie inside the image. Returns the exact box and ink mask of what was drawn.
    """
    w, h = patch.size
    if x < 0 or y < 0 or x + w > img.shape[1] or y + h > img.shape[0]:
        raise ValueError(f"text patch {w}x{h} at ({x}, {y}) leaves the {img.shape[1]}x"
                         f"{img.shape[0]} image")
    region = img[y:y + h, x:x + w]
    paper = _first_row_colour(region)
    table = None if paper is None else _reused_table(tuple(color), paper)
    if table is not None and _all_paper(region, paper):  # one colour: a lookup of the coverage
        rgba = table.take(patch.alpha).view(np.uint8)
        cv2.cvtColor(rgba.reshape(h, w, 4), cv2.COLOR_RGBA2RGB, dst=region)
    else:
        _blend(region, patch.alpha, color)
    return PlacedText(text=patch.text, box=(x, y, x + w, y + h), mask=patch.mask,
                      glyph_height=patch.glyph_height)


def _blend(region: np.ndarray, alpha: np.ndarray, color: Color) -> None:
    """Composite coverage ``alpha`` in ``color`` into ``region`` (in place): OpenCV's blend."""
    h, w = alpha.shape
    a = alpha.astype(np.float32)
    a *= np.float32(1.0 / 255.0)
    solid = (solid_image(h, w, color, region.dtype) if region.ndim == 3
             else np.full((h, w), round(luminance(color)), region.dtype))
    cv2.blendLinear(solid, region, a, np.float32(1.0) - a, dst=region)


def _first_row_colour(region: np.ndarray) -> tuple[int, int, int] | None:
    """Return the one colour of ``region``'s first row, or ``None``.

    ``None`` too for a ``region`` that is not a ``uint8`` RGB view OpenCV can write through
    (channels and pixels packed) or is over :data:`PLAIN_MAX_SIZE`.
    """
    if (region.ndim != 3 or region.dtype != np.uint8 or region.shape[2] != 3
            or region.strides[1:] != (3, 1) or region.strides[0] <= 0
            or not region.flags.writeable or not region.size
            or region.shape[0] > PLAIN_MAX_SIZE[0] or region.shape[1] > PLAIN_MAX_SIZE[1]):
        return None  # not an RGB view OpenCV writes through, or a big one (see PLAIN_MAX_SIZE)
    first = region[0]
    if not (first == first[0]).all():
        return None  # a textured region already differs along its first row
    return int(first[0, 0]), int(first[0, 1]), int(first[0, 2])


def _all_paper(region: np.ndarray, paper: tuple[int, int, int]) -> bool:
    """Return whether every pixel of ``region`` is ``paper`` (against a cached plain image)."""
    h, w = region.shape[:2]
    flat = _PLAIN.lookup(paper)
    if flat is None or flat.shape[0] < h or flat.shape[1] < w:
        size = (max(h, 64), max(w, 2048)) if flat is None else (max(h, flat.shape[0]),
                                                               max(w, flat.shape[1]))
        flat = _PLAIN[paper] = solid_image(size[0], size[1], paper)
    return cv2.norm(region, flat[:h, :w], cv2.NORM_INF) == 0


def _reused_table(color: Color, paper: tuple[int, int, int]) -> np.ndarray | None:
    """Return :func:`_blend_table` of ``color`` over ``paper`` from its second use on, else None.

    A table costs about as much as blending a small print; a page's prose reuses one ink and
    paper for every line, a label on a fresh paper colour (a shelf tag, a sticker) does not.
    """
    key = (color, paper)
    if _TABLES.lookup(key) is None and _SEEN.lookup(key) is None:
        _SEEN[key] = True
        return None
    return _blend_table(color, paper)


def _blend_table(color: Color, paper: tuple[int, int, int]) -> np.ndarray:
    """Return (and cache) :func:`_blend` of ``color`` over ``paper`` for each coverage.

    ``uint32`` ``(256,)``: coverage -> the blended pixel's bytes R, G, B, 0. OpenCV's blend is
    a function of the colour, coverage and pixel alone (the same wherever it lands: tests/
    render/test_text_paste.py), so a plain region's blend is this table's lookup.
    """
    key = (color, paper)
    hit = _TABLES.lookup(key)
    if hit is None:
        row = solid_image(1, 256, paper)
        _blend(row, np.arange(256, dtype=np.uint8)[None], color)
        rgba = np.zeros((256, 4), np.uint8)
        rgba[:, :3] = row[0]
        hit = _TABLES[key] = rgba.view(np.uint32).ravel()
    return hit


PLAIN_MAX_SIZE: tuple[int, int] = (256, 4096)
"""Largest ``(height, width)`` of a patch whose region :func:`paste_text` checks for one colour
(the comparison image of each paper colour grows to the largest region checked)."""

_PLAIN: LRUCache = LRUCache(8)
"""Paper colour -> a plain ``uint8`` RGB image of it (grown as needed) to compare regions with."""

_SEEN: LRUCache = LRUCache(256)
"""``(ink colour, paper colour)`` pairs pasted once (:func:`_reused_table` tables the second)."""

_TABLES: LRUCache = LRUCache(256)
"""``(ink colour, paper colour)`` -> :func:`_blend_table` (about 1 kB each)."""


def draw_text(
    img: np.ndarray, text: str, xy: tuple[int, int], glyph_height: float, color: Color,
    face: str = "sans", thickness: int = 1, italic: bool = False,
) -> PlacedText:
    """Render ``text`` and paste its ink box's top-left at ``xy`` (see :func:`paste_text`)."""
    patch = render_text(text, glyph_height, face, thickness, italic)
    return paste_text(img, patch, xy[0], xy[1], color)


def random_font(rng: np.random.Generator, readable: bool = True) -> tuple[str, bool]:
    """Return a random ``(face, italic)``; ``readable`` limits to :data:`READABLE_FACES`."""
    faces = READABLE_FACES if readable else ALL_FACES
    return faces[int(rng.integers(len(faces)))], bool(rng.random() < 0.25)
