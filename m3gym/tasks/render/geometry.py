"""Boxes and placement.

Overlap tests, free spots, position phrases and crop zoom. The 0–1000 ``bbox_2d`` conversion
(:func:`box_to_bbox1000`, :func:`bbox1000_to_box`, which rounds outward exactly as the crop tool
does) and :func:`grow_box` live in :mod:`m3gym.geometry` and are re-exported here.
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from m3gym.geometry import bbox1000_to_box, box_to_bbox1000, grow_box  # noqa: F401 - re-exported
from m3gym.tasks.render.util import Box
from m3gym.view import VIEW_SIZE, view_scale


def boxes_overlap(a: Sequence[float], b: Sequence[float], margin: float = 0.0) -> bool:
    """Return whether boxes ``a`` and ``b`` (x0, y0, x1, y1) overlap after growing ``a``."""
    return not (a[2] + margin <= b[0] or b[2] <= a[0] - margin
                or a[3] + margin <= b[1] or b[3] <= a[1] - margin)


def find_free_spot(
    rng: np.random.Generator, size: tuple[int, int], bounds: Box,
    occupied: Sequence[Sequence[float]], margin: int = 8, tries: int = 40,
) -> tuple[int, int] | None:
    """Return a top-left ``(x, y)`` where a ``(w, h)`` box fits in ``bounds`` without overlaps.

    Tries ``tries`` random positions; returns ``None`` when none is free.
    """
    w, h = size
    bx0, by0, bx1, by1 = bounds
    if bx1 - bx0 < w or by1 - by0 < h or tries < 1:
        return None
    # all candidates at once (one draw of 2 * tries integers), tested against every box at once
    xs = rng.integers(bx0, bx1 - w + 1, size=tries)
    ys = rng.integers(by0, by1 - h + 1, size=tries)
    x, y = int(xs[0]), int(ys[0])
    first = (x, y, x + w, y + h)
    if not any(boxes_overlap(first, o, margin) for o in occupied):
        return x, y  # the common case: no arrays built
    occ = np.asarray(occupied, dtype=np.float64).reshape(-1, 4)
    x0, y0 = xs[:, None].astype(np.float64), ys[:, None].astype(np.float64)
    apart = ((x0 + w + margin <= occ[:, 0]) | (occ[:, 2] <= x0 - margin)
             | (y0 + h + margin <= occ[:, 1]) | (occ[:, 3] <= y0 - margin))
    free = np.flatnonzero(apart.all(axis=1))
    if free.size == 0:
        return None
    return int(xs[free[0]]), int(ys[free[0]])


def position_phrase(box: Sequence[float], width: int, height: int) -> str:
    """Return where ``box``'s centre lies on a 3x3 grid ("top-left", "center", "bottom", ...)."""
    cx = (box[0] + box[2]) / 2 / width
    cy = (box[1] + box[3]) / 2 / height
    col = ("left", "", "right")[min(2, int(cx * 3))]
    row = ("top", "", "bottom")[min(2, int(cy * 3))]
    if row and col:
        return f"{row}-{col}"
    return row or col or "center"


def crop_zoom_for(
    crop_size: tuple[int, int], glyph_height: float, min_view_height: float,
    margin: float = 1.5, view_size: int = VIEW_SIZE, max_zoom: float = 5.0,
) -> float | None:
    """Return the smallest zoom (step 0.5, 1–``max_zoom``) at which a crop shows glyphs legibly.

    Legible means ``glyph_height * zoom * view_scale(crop * zoom) >= margin * min_view_height``.
    Returns ``None`` when no allowed zoom reaches it (the crop box is too large).
    """
    w, h = crop_size
    for zoom in np.arange(1.0, max_zoom + 0.25, 0.5):
        out_w, out_h = int(w * zoom), int(h * zoom)
        if glyph_height * zoom * view_scale(out_h, out_w, view_size) >= margin * min_view_height:
            return float(zoom)
    return None


def embed_mask(mask: np.ndarray, at: tuple[int, int], shape: tuple[int, int]) -> np.ndarray:
    """Return a ``bool`` array of ``shape``, False except ``mask`` placed at ``at = (x, y)``."""
    out = np.zeros(shape, bool)
    x, y = at
    out[y:y + mask.shape[0], x:x + mask.shape[1]] = mask
    return out
