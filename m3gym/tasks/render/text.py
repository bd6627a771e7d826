"""Text at a given glyph height: the :class:`TextPatch` / :class:`PlacedText` types and pasting.

:func:`render_text` renders a string so a capital letter's ink is ``glyph_height`` pixels tall
and returns a :class:`TextPatch`; :func:`paste_text` / :func:`draw_text` composite it and return
a :class:`PlacedText` with the exact pixel box and ink mask. Every face is a bundled TrueType
face (:mod:`m3gym.tasks.render.fonts`, FreeType via Pillow): the Hershey stroke faces of
``cv2.putText`` were retired in benchmark v4 (a strong OCR reader and real documents never see
them). A face is a name of :data:`ALL_FACES`; passing a ``cv2.FONT_HERSHEY_*`` id raises.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.tasks.render.util import Box, Color, luminance, solid_image

READABLE_FACES: tuple[str, ...] = ("sans-bold", "serif-bold", "mono-bold", "condensed-bold")
"""TrueType faces that stay legible at small sizes (glyph evidence, distractor labels).

The bold DejaVu faces: hinting snaps a regular face's stems to one pixel at 8-16 px glyphs,
thinner than the anti-aliased strokes of the retired Hershey faces, so a zoomed crop of a
regular-face digit could stay under the legibility contrast; STIX bold is thinner still.
"""

ALL_FACES: tuple[str, ...] = (
    "sans", "sans-bold", "serif", "serif-bold", "mono", "mono-bold", "condensed",
    "condensed-bold", "stix", "stix-bold",
)
"""Every face :func:`render_text` accepts (= :data:`~m3gym.tasks.render.fonts.FONT_FACES`)."""

ITALIC_SHEAR: float = 0.2
"""Horizontal shear (x shift per row of height) of the slanted text ``italic=True`` asks for."""


def cap_height_at_unit_scale(face: str, thickness: int = 1) -> float:
    """Return the ink height of a capital "H" in ``face`` per pixel of em size (measured at 100)."""
    from m3gym.tasks.render.fonts import _h_height

    return _h_height(_face(face, thickness), 100.0) / 100.0


def _face(face: str, thickness: int) -> str:
    """Return the TrueType face for ``face`` drawn ``thickness`` strokes wide (>= 2 means bold)."""
    if not isinstance(face, str) or face not in ALL_FACES:
        raise ValueError(f"unknown text face {face!r}: the Hershey stroke faces are retired; "
                         f"use a TrueType face of {ALL_FACES}")
    if thickness >= 2 and not face.endswith("-bold"):
        return f"{face}-bold"
    return face



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



@dataclass(frozen=True)
class PlacedText:
    """Text composited into an image: its tight pixel box and ink mask (mask shape = box shape)."""

    text: str
    box: Box
    mask: np.ndarray
    glyph_height: float



def render_text(
    text: str, glyph_height: float, face: str = "sans", thickness: int = 1,
    italic: bool = False,
) -> TextPatch:
    """Render ``text`` so a capital letter's ink is ``glyph_height`` pixels tall.

    ``face`` is a TrueType face of :data:`ALL_FACES`; ``thickness`` >= 2 takes its bold variant
    and ``italic`` slants the ink by :data:`ITALIC_SHEAR`. Returns a :class:`TextPatch` cropped
    tightly to the ink (the patch is its own box).
    """
    from m3gym.tasks.render.fonts import MIN_GLYPH_HEIGHT, truetype_text

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
    face: str = "sans", thickness: int = 1, italic: bool = False,
) -> PlacedText:
    """Render ``text`` and paste its ink box's top-left at ``xy`` (see :func:`paste_text`)."""
    patch = render_text(text, glyph_height, face, thickness, italic)
    return paste_text(img, patch, xy[0], xy[1], color)



def random_font(rng: np.random.Generator, readable: bool = True) -> tuple[str, bool]:
    """Return a random ``(face, italic)``; ``readable`` limits to :data:`READABLE_FACES`."""
    faces = READABLE_FACES if readable else ALL_FACES
    return faces[int(rng.integers(len(faces)))], bool(rng.random() < 0.25)
