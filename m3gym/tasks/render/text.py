"""Hershey stroke-font text at a given glyph height.

:func:`render_text` renders a string so a capital letter's ink is ``glyph_height`` pixels tall
and returns a :class:`TextPatch`; :func:`paste_text` / :func:`draw_text` composite it and return
a :class:`PlacedText` with the exact pixel box and ink mask. TrueType text with the same
:class:`TextPatch` lives in :mod:`m3gym.tasks.render.fonts`.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

import cv2
import numpy as np

from m3gym.tasks.render.util import Box, Color, luminance, solid_image

READABLE_FACES: tuple[int, ...] = (
    cv2.FONT_HERSHEY_SIMPLEX,
    cv2.FONT_HERSHEY_DUPLEX,
    cv2.FONT_HERSHEY_COMPLEX,
    cv2.FONT_HERSHEY_TRIPLEX,
    cv2.FONT_HERSHEY_PLAIN,
)
"""Hershey faces that stay legible at small sizes (used for evidence text)."""



ALL_FACES: tuple[int, ...] = (
    *READABLE_FACES,
    cv2.FONT_HERSHEY_COMPLEX_SMALL,
    cv2.FONT_HERSHEY_SCRIPT_SIMPLEX,
    cv2.FONT_HERSHEY_SCRIPT_COMPLEX,
)
"""Every Hershey face (script faces only for decoration and distractors)."""



@lru_cache(maxsize=64)
def cap_height_at_unit_scale(face: int, thickness: int = 1) -> float:
    """Return the ink height of a capital "H" for ``face`` at ``fontScale`` 1 (measured once)."""
    scale = 10.0
    (tw, th), _ = cv2.getTextSize("H", face, scale, thickness)
    canvas = np.zeros((th * 2 + 20, tw + 20), np.uint8)
    cv2.putText(canvas, "H", (10, th + 10), face, scale, 255, thickness, cv2.LINE_8)
    rows = np.flatnonzero(canvas.max(axis=1))
    return float(rows[-1] - rows[0] + 1 - (thickness - 1)) / scale



@dataclass(frozen=True)
class TextPatch:
    """A rendered string: anti-aliased coverage cropped tightly to the ink.

    Attributes:
        text: the string.
        alpha: ``uint8`` ``(h, w)`` coverage (255 = full ink).
        mask: ``bool`` ``(h, w)``, True where coverage >= 50 % (the strokes).
        glyph_height: measured ink height of a capital letter at these settings, pixels.
        baseline: row of the text's baseline within the patch (the row below the last ink row
            of a capital letter), or ``None`` when the renderer does not report it (Hershey).
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



@dataclass(frozen=True)
class PlacedText:
    """Text composited into an image: its tight pixel box and ink mask (mask shape = box shape)."""

    text: str
    box: Box
    mask: np.ndarray
    glyph_height: float



def render_text(
    text: str, glyph_height: float, face: int = cv2.FONT_HERSHEY_SIMPLEX, thickness: int = 1,
    italic: bool = False,
) -> TextPatch:
    """Render ``text`` so a capital letter's ink is ``glyph_height`` pixels tall.

    Returns a :class:`TextPatch` cropped tightly to the ink (the patch is its own box).
    """
    if not text.strip():
        raise ValueError("render_text needs non-blank text")
    font = face | (cv2.FONT_ITALIC if italic else 0)
    scale = max(0.05, (glyph_height - (thickness - 1)) / cap_height_at_unit_scale(face, 1))
    (tw, th), base = cv2.getTextSize(text, font, scale, thickness)
    pad = thickness + 2 + int(th * 0.4 if italic else 0)
    canvas = np.zeros((th + base + th // 2 + 2 * pad, tw + 2 * pad), np.uint8)
    cv2.putText(canvas, text, (pad, pad + th), font, scale, 255, thickness, cv2.LINE_AA)
    rows = np.flatnonzero(canvas.max(axis=1))
    cols = np.flatnonzero(canvas.max(axis=0))
    alpha = canvas[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    return TextPatch(text=text, alpha=alpha, mask=alpha >= 128,
                     glyph_height=_glyph_height(face, scale, thickness))



@lru_cache(maxsize=512)
def _glyph_height(face: int, scale: float, thickness: int) -> float:
    """Return the measured anti-aliased ink height (coverage >= 50 %) of "H" at these settings."""
    (tw, th), _ = cv2.getTextSize("H", face, scale, thickness)
    pad = thickness + 4
    canvas = np.zeros((th * 2 + 2 * pad, tw + 2 * pad), np.uint8)
    cv2.putText(canvas, "H", (pad, pad + th), face, scale, 255, thickness, cv2.LINE_AA)
    rows = np.flatnonzero((canvas >= 128).any(axis=1))
    return float(rows[-1] - rows[0] + 1) if rows.size else float(th)



def paste_text(img: np.ndarray, patch: TextPatch, x: int, y: int, color: Color) -> PlacedText:
    """Composite ``patch`` in ``color`` into ``img`` (in place) with its top-left at ``(x, y)``.

    The patch must lie inside the image. Returns the exact box and ink mask of what was drawn.
    """
    w, h = patch.size
    if x < 0 or y < 0 or x + w > img.shape[1] or y + h > img.shape[0]:
        raise ValueError(f"text patch {w}x{h} at ({x}, {y}) leaves the {img.shape[1]}x"
                         f"{img.shape[0]} image")
    region = img[y:y + h, x:x + w]
    a = patch.alpha.astype(np.float32)
    a *= np.float32(1.0 / 255.0)
    solid = (solid_image(h, w, color, region.dtype) if region.ndim == 3
             else np.full((h, w), round(luminance(color)), region.dtype))
    cv2.blendLinear(solid, region, a, np.float32(1.0) - a, dst=region)
    return PlacedText(text=patch.text, box=(x, y, x + w, y + h), mask=patch.mask,
                      glyph_height=patch.glyph_height)



def draw_text(
    img: np.ndarray, text: str, xy: tuple[int, int], glyph_height: float, color: Color,
    face: int = cv2.FONT_HERSHEY_SIMPLEX, thickness: int = 1, italic: bool = False,
) -> PlacedText:
    """Render ``text`` and paste its ink box's top-left at ``xy`` (see :func:`paste_text`)."""
    patch = render_text(text, glyph_height, face, thickness, italic)
    return paste_text(img, patch, xy[0], xy[1], color)



def random_font(rng: np.random.Generator, readable: bool = True) -> tuple[int, bool]:
    """Return a random ``(face, italic)``; ``readable`` limits to :data:`READABLE_FACES`."""
    faces = READABLE_FACES if readable else ALL_FACES
    return faces[int(rng.integers(len(faces)))], bool(rng.random() < 0.25)
