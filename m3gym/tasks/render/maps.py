"""Drawing of printed city maps: building footprints, street names, a legend and a title.

Text is TrueType (:func:`m3gym.tasks.render.fonts.truetype_text`); names come from Faker seeded
by the caller's generator, so every map is deterministic. Every function draws in place into an
RGB ``uint8`` image.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from m3gym.tasks.render.fonts import truetype_text
from m3gym.tasks.render.geometry import find_free_spot
from m3gym.tasks.render.text import TextPatch, paste_text
from m3gym.tasks.render.util import Box, Color

FOOTPRINT_SHADE: float = 0.82
"""Building footprints are the block colour times this."""


def _shade(color: Sequence[int], factor: float) -> Color:
    """Return ``color`` scaled by ``factor`` (clipped to 0–255)."""
    return tuple(min(255, max(0, int(round(c * factor)))) for c in color)  # type: ignore[return-value]


def draw_footprints(img: np.ndarray, rng: np.random.Generator, block: Box, fill: Color,
                    occupied: list[Box], count: int) -> None:
    """Draw up to ``count`` building footprints inside ``block``, away from ``occupied``.

    Footprints are small rectangles a shade darker than the block with a darker outline; each
    is appended to ``occupied``.
    """
    x0, y0, x1, y1 = block
    face, edge = _shade(fill, FOOTPRINT_SHADE), _shade(fill, 0.62)
    for _ in range(count):
        fw = int(rng.integers(18, max(19, min(70, (x1 - x0) // 4))))
        fh = int(rng.integers(14, max(15, min(55, (y1 - y0) // 4))))
        spot = find_free_spot(rng, (fw, fh), (x0 + 6, y0 + 6, x1 - 6, y1 - 6), occupied,
                              margin=8, tries=12)
        if spot is None:
            continue
        sx, sy = spot
        cv2.rectangle(img, (sx, sy), (sx + fw - 1, sy + fh - 1), face, -1)
        cv2.rectangle(img, (sx, sy), (sx + fw - 1, sy + fh - 1), edge, 1)
        occupied.append((sx, sy, sx + fw, sy + fh))


def draw_street_name(img: np.ndarray, text: str, centre: tuple[float, float], vertical: bool,
                     glyph: float, ink: Color, font: str = "sans") -> Box | None:
    """Print ``text`` centred at ``centre`` along a street (turned a quarter when vertical).

    Returns the box drawn, or ``None`` when the name does not fit inside the image.
    """
    patch = truetype_text(text, glyph, font)
    alpha = np.ascontiguousarray(np.rot90(patch.alpha, 1)) if vertical else patch.alpha
    h, w = alpha.shape
    x, y = int(round(centre[0] - w / 2)), int(round(centre[1] - h / 2))
    if x < 0 or y < 0 or x + w > img.shape[1] or y + h > img.shape[0]:
        return None
    region = img[y:y + h, x:x + w]
    a = alpha.astype(np.float32)[..., None] * (1.0 / 255.0)
    region[:] = (region * (1.0 - a) + np.asarray(ink, np.float32) * a + 0.5).astype(np.uint8)
    return (x, y, x + w, y + h)


def _legend_layout(entries: Sequence[tuple[str, Color, str]], glyph: float,
                   ) -> tuple[list[TextPatch], int, int, list[int]]:
    """Return the text patches, swatch width, row height and per-entry widths of a legend."""
    patches = [truetype_text(text, glyph, "sans") for _, _, text in entries]
    sw = int(round(glyph * 2.2))
    row = int(round(max(glyph * 2.0, max(p.size[1] for p in patches) + 6)))
    widths = [sw + 10 + p.size[0] for p in patches]
    return patches, sw, row, widths


def legend_size(entries: Sequence[tuple[str, Color, str]], glyph: float) -> tuple[int, int]:
    """Return ``(width, height)`` of the one-row legend :func:`draw_legend` draws."""
    _, _, row, widths = _legend_layout(entries, glyph)
    return sum(widths) + 18 * (len(widths) - 1) + 16, row + 8


def draw_legend(img: np.ndarray, at: tuple[int, int], entries: Sequence[tuple[str, Color, str]],
                glyph: float, ink: Color) -> Box:
    """Draw a one-row legend panel whose top-left is ``at``; return its box.

    ``entries`` are ``(kind, colour, text)`` with kind ``"area"`` (a swatch), ``"dot"`` (a
    disk) or ``"line"`` (a street stroke). The panel is white with a thin frame.
    """
    patches, sw, row, widths = _legend_layout(entries, glyph)
    width, height = legend_size(entries, glyph)
    x, y = at
    box = (x, y, x + width, y + height)
    cv2.rectangle(img, (x, y), (box[2] - 1, box[3] - 1), (250, 250, 248), -1)
    cv2.rectangle(img, (x, y), (box[2] - 1, box[3] - 1), _shade(ink, 1.6), 1)
    cy = y + height // 2
    sx = x + 8
    for (kind, col, _), patch, wid in zip(entries, patches, widths):
        if kind == "dot":
            cv2.circle(img, (sx + sw // 2, cy), max(3, sw // 4), col, -1, cv2.LINE_AA)
        elif kind == "line":
            cv2.line(img, (sx, cy), (sx + sw, cy), _shade(col, 0.7), max(3, row // 3) + 2)
            cv2.line(img, (sx, cy), (sx + sw, cy), col, max(3, row // 3))
        else:
            cv2.rectangle(img, (sx, cy - row // 3), (sx + sw, cy + row // 3), col, -1)
            cv2.rectangle(img, (sx, cy - row // 3), (sx + sw, cy + row // 3), _shade(col, 0.7), 1)
        paste_text(img, patch, sx + sw + 10, cy - patch.size[1] // 2, ink)
        sx += wid + 18
    return box


def draw_building(img: np.ndarray, rng: np.random.Generator, box: Box) -> None:
    """Draw a building seen from the street in ``box``: facade, side wall, cornice, windows.

    The facade is lit, a narrow side wall on its right is in shade, a lighter cornice caps the
    roof line, and the windows (a regular grid) have light frames and a sky reflection that
    fades downwards.
    """
    x0, y0, x1, y1 = box
    col = tuple(int(v) for v in rng.integers(70, 221, 3))
    side = max(4, (x1 - x0) // 9)
    cv2.rectangle(img, (x0, y0), (x1 - side, y1), col, -1)
    cv2.rectangle(img, (x1 - side, y0 + 4), (x1, y1), _shade(col, 0.68), -1)
    cv2.rectangle(img, (x0 - 2, y0 - 5), (x1 - side + 2, y0 + 2), _shade(col, 1.22), -1)
    cv2.line(img, (x0 - 2, y0 + 3), (x1 - side + 2, y0 + 3), _shade(col, 0.7), 1)
    glass = np.array([60, 80, 110]) + rng.integers(-30, 31, 3)
    frame = _shade(col, 1.3)
    step = int(rng.integers(28, 44))
    win = step // 2
    for wy in range(y0 + 14, y1 - 40, step):
        for wx in range(x0 + 12, x1 - side - 20, step):
            cv2.rectangle(img, (wx - 2, wy - 2), (wx + win + 2, wy + win + 2), frame, -1)
            top = np.clip(glass + 55, 0, 255).astype(np.float32)
            ramp = np.linspace(0.0, 1.0, win + 1, dtype=np.float32)[:, None, None]
            pane = top * (1.0 - ramp) + glass.astype(np.float32) * ramp
            full = np.broadcast_to(pane, (win + 1, win + 1, 3)).astype(np.uint8)
            cx0, cx1 = max(0, wx), min(img.shape[1], wx + win + 1)
            cy0, cy1 = max(0, wy), min(img.shape[0], wy + win + 1)
            if cx1 > cx0 and cy1 > cy0:
                img[cy0:cy1, cx0:cx1] = full[cy0 - wy:cy1 - wy, cx0 - wx:cx1 - wx]
            cv2.line(img, (wx, wy + win // 2), (wx + win, wy + win // 2), frame, 1)
