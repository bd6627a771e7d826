"""TrueType text for the task renderers: :mod:`m3gym.typeface` (re-exported) and pasting it.

The faces, their rendering (:func:`truetype_text`, :func:`truetype_lines`) and the caches live in
:mod:`m3gym.typeface`, in the package's bottom layer, so the logo drawer and the OCR's glyph
templates draw the same text without importing the task renderers; this module keeps the names
the renderers have always imported and adds :func:`draw_truetype`.
"""

from __future__ import annotations

import numpy as np

from m3gym.tasks.render.text import PlacedText, paste_text
from m3gym.tasks.render.util import Color
from m3gym.typeface import (
    ATLAS_AFTER_USES,
    ATLAS_CACHE_SIZE,
    ATLAS_MAX_SIZE,
    ATLAS_MIN_FILL_LENGTH,
    ATLAS_SMALL_SIZE,
    BIG_ATLAS_CACHE_SIZE,
    BOLD_FACES,
    FONT_FACES,
    FONT_FILES,
    MAX_GLYPH_HEIGHT,
    MIN_GLYPH_HEIGHT,
    PATCH_CACHE_MAX_PIXELS,
    PATCH_CACHE_SIZE,
    SIZE_STEP,
    font_covers,
    font_path,
    load_font,
    pick_font,
    size_for_glyph_height,
    truetype_lines,
    truetype_text,
)

__all__ = [
    "ATLAS_AFTER_USES", "ATLAS_CACHE_SIZE", "ATLAS_MAX_SIZE", "ATLAS_MIN_FILL_LENGTH",
    "ATLAS_SMALL_SIZE", "BIG_ATLAS_CACHE_SIZE", "BOLD_FACES", "FONT_FACES", "FONT_FILES",
    "MAX_GLYPH_HEIGHT", "MIN_GLYPH_HEIGHT", "PATCH_CACHE_MAX_PIXELS", "PATCH_CACHE_SIZE",
    "SIZE_STEP", "draw_truetype", "font_covers", "font_path", "load_font", "pick_font",
    "size_for_glyph_height", "truetype_lines", "truetype_text",
]


def draw_truetype(
    img: np.ndarray, text: str, xy: tuple[int, int], glyph_height: float, color: Color,
    font: str = "sans",
) -> PlacedText:
    """Render ``text`` with :func:`truetype_text` and paste its ink box's top-left at ``xy``."""
    return paste_text(img, truetype_text(text, glyph_height, font), xy[0], xy[1], color)
