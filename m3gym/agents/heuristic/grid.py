"""Periods of a repetitive pattern (the ``grid_period`` plan): rows, columns, objects.

The plan finds the dark frame around the printed square in the view (:func:`framed_square`),
crops it zoomed, binarizes the dots inside the frame (:func:`dot_grid`) and counts the lattice
(:func:`grid_shape`: chains of alike blobs along and across the grid's direction).
:func:`grid_threshold` picks a level for a stretched photo of a coarser pattern.
"""

from __future__ import annotations

import cv2
import numpy as np

from m3gym.agents.heuristic import vision as hv
from m3gym.agents.heuristic.calls import crop_call, full_size
from m3gym.agents.heuristic.view import EpisodeView, Plan


def count_runs(profile: np.ndarray, level: float = 0.5) -> int:
    """Return how many runs of ``profile`` lie above ``level`` of its range (peaks counted)."""
    lo, hi = float(profile.min()), float(profile.max())
    if hi - lo <= 1e-6:
        return 0
    above = profile >= lo + level * (hi - lo)
    return int(np.count_nonzero(above[1:] & ~above[:-1]) + int(above[0]))


MAX_GRID_BLOBS: int = 1000
"""More alike blobs than this is speckle, not a pattern to count."""

GRID_LEVELS: tuple[float, ...] = (0.3, 0.4, 0.5, 0.6, 0.7)
"""Threshold levels (fractions of 255) tried beside Otsu's by :func:`grid_threshold`."""


def _uniform_blobs(mask: np.ndarray) -> np.ndarray:
    """Return the ``(n, 4)`` centroid x, y and width, height of the largest set of alike blobs.

    Components touching the border (a bench, a sky, the frame of a light box) and ragged ones
    (text, lines: under half of their box filled) are dropped; of the rest, the group whose
    areas lie within a factor 1.6 of each other and cover the most pixels is kept (the counted
    objects, not a label's smaller letters), less the members whose aspect ratio is off the
    group's median by more than a factor 1.5.
    """
    n, _, stats, cents = cv2.connectedComponentsWithStats(mask, connectivity=8)
    h, w = mask.shape
    x, y, bw, bh, area = (stats[1:, i] for i in range(5))
    keep = ((x > 0) & (y > 0) & (x + bw < w) & (y + bh < h) & (area >= 12)
            & (area >= 0.5 * bw * bh))
    idx = np.flatnonzero(keep) + 1
    if idx.size == 0:
        return np.zeros((0, 4))
    areas = stats[idx, 4].astype(np.float64)
    best = max(areas, key=lambda a: (float(areas[(areas >= a) & (areas <= 1.6 * a)].sum()), a))
    sel = idx[(areas >= best) & (areas <= 1.6 * best)]
    aspect = np.log(stats[sel, 2] / stats[sel, 3])
    sel = sel[np.abs(aspect - np.median(aspect)) <= np.log(1.5)]  # not a broken line's piece
    return np.column_stack([cents[sel], stats[sel, 2], stats[sel, 3]]).astype(np.float64)


def _chains(points: np.ndarray, angle: float, reach: float) -> int:
    """Return how many chains link ``points`` to their nearest neighbour along ``angle``.

    A point links to the nearest point ahead within 15° of ``angle`` (radians) and ``reach``
    px; the chains are the connected groups (rows for the grid's row direction).
    """
    parent = list(range(len(points)))

    def root(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    d = points[None, :, :] - points[:, None, :]
    dist = np.hypot(d[..., 0], d[..., 1])
    ang = np.arctan2(d[..., 1], d[..., 0]) - angle
    ang = np.abs((ang + np.pi) % (2 * np.pi) - np.pi)
    ok = (ang < np.radians(15)) & (dist > 0) & (dist <= reach)
    for i in range(len(points)):
        js = np.flatnonzero(ok[i])
        if js.size:
            j = int(js[np.argmin(dist[i, js])])
            parent[root(i)] = root(j)
    return len({root(i) for i in range(len(points))})


def grid_shape(binary: np.ndarray) -> tuple[int, int, int] | None:
    """Return ``(rows, columns, objects)`` of a binarized repetitive pattern.

    The objects are the larger set of alike, compact blobs of either polarity
    (:func:`_uniform_blobs`; a 5-px median filter removes speckle first). The grid's direction
    is the median direction to each blob's nearest neighbour (folded into ±45°); rows are the
    chains of neighbours along it, columns the chains across it, so a slight perspective or
    roll does not merge or split them.
    """
    gray = binary if binary.ndim == 2 else cv2.cvtColor(binary, cv2.COLOR_RGB2GRAY)
    fg = (gray >= 128).astype(np.uint8) * 255
    found = [_uniform_blobs(cv2.medianBlur(m, 5) // 255) for m in (fg, 255 - fg)]
    blobs = max(found, key=len)
    if not 2 <= len(blobs) <= MAX_GRID_BLOBS:
        return None
    pts = blobs[:, :2]
    d = pts[None, :, :] - pts[:, None, :]
    dist = np.hypot(d[..., 0], d[..., 1])
    np.fill_diagonal(dist, np.inf)
    nn = np.argmin(dist, axis=1)
    vec = pts[nn] - pts
    folded = (np.arctan2(vec[:, 1], vec[:, 0]) + np.pi / 4) % (np.pi / 2) - np.pi / 4
    angle = float(np.median(folded))
    size = float(np.median(np.maximum(blobs[:, 2], blobs[:, 3])))
    reach = 3.5 * max(float(np.median(dist[np.arange(len(pts)), nn])), size)
    rows = _chains(pts, angle, reach)
    cols = _chains(pts, angle + np.pi / 2, reach)
    return rows, cols, len(blobs)


def grid_threshold(gray: np.ndarray) -> int:
    """Return the level that best separates a repetitive pattern in a stretched ``gray`` image.

    Otsu's level splits the largest areas, which in a photo may be a label or a light box's
    vignetted corners rather than the objects; so :data:`GRID_LEVELS` are tried too, and the
    level whose binary image holds a complete lattice (rows x columns = objects) of the most
    objects wins (Otsu's on ties or when none is complete).
    """
    otsu, _ = cv2.threshold(cv2.GaussianBlur(gray, (5, 5), 0), 0, 255,
                            cv2.THRESH_BINARY | cv2.THRESH_OTSU)
    best: tuple[bool, int, int] = (False, 0, int(otsu))
    for value in [int(otsu)] + [int(255 * f) for f in GRID_LEVELS]:
        shape = grid_shape(((gray > value) * 255).astype(np.uint8))
        if shape is not None:
            rows, cols, n = shape
            key = (rows * cols == n, n)
            if key > best[:2]:
                best = (key[0], key[1], value)
    return best[2]


def framed_square(rgb: np.ndarray, max_gray: int = 100) -> tuple[int, int, int, int] | None:
    """Return the box (view pixels) of the thin dark frame around the printed square, or None.

    The frame is the dark component whose box is 8-80 px wide and high, that fills little of
    its box (an outline, not a blot) and holds a light square; the largest such wins.
    """
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    dark = (gray <= max_gray).astype(np.uint8)
    n, _, stats, _ = cv2.connectedComponentsWithStats(dark, connectivity=8)
    best: tuple[int, tuple[int, int, int, int]] | None = None
    for i in range(1, n):
        x, y, w, h, area = (int(v) for v in stats[i])
        if not (8 <= w <= 80 and 8 <= h <= 80) or area > 0.75 * w * h:
            continue
        inside = gray[y + 3:y + h - 3, x + 3:x + w - 3]
        if inside.size == 0 or float(np.median(inside)) < 140:  # the light square in the frame
            continue
        if best is None or w * h > best[0]:
            best = (w * h, (x, y, x + w, y + h))
    return None if best is None else best[1]


def dot_grid(gray: np.ndarray) -> tuple[int, int, int] | None:
    """Return ``(rows, columns, dots)`` of the dot array inside a zoomed crop of the square.

    The inside of the frame is the largest light component that does not touch the crop's
    border (the dots are holes in it); dots are the pixels there darker than 30 % of the way
    from its darkest to its lightest level, and :func:`grid_shape` counts their lattice.
    """
    light = (gray >= 110).astype(np.uint8)
    n, labels, stats, _ = cv2.connectedComponentsWithStats(light, connectivity=4)
    h, w = gray.shape
    best = None
    for i in range(1, n):
        x, y, bw, bh, area = (int(v) for v in stats[i])
        if x == 0 or y == 0 or x + bw >= w or y + bh >= h:
            continue
        if best is None or area > best[1]:
            best = (i, area, (x, y, x + bw, y + bh))
    if best is None:
        return None
    x0, y0, x1, y1 = best[2]
    pad = 3
    inner = gray[y0 + pad:y1 - pad, x0 + pad:x1 - pad]
    if inner.size == 0:
        return None
    lo, hi = np.percentile(inner, 1), np.percentile(inner, 99)
    dots = ((inner < lo + 0.3 * (hi - lo)) * 255).astype(np.uint8)
    framed = cv2.copyMakeBorder(dots, 2, 2, 2, 2, cv2.BORDER_CONSTANT, value=0)
    return grid_shape(framed)


def plan_grid_period(view: EpisodeView) -> Plan:
    """Find the framed square, crop it zoomed 5 times, count the dot array's rows/columns."""
    img = view.images[0]
    s = view.view_scale(0)
    size = full_size(view, 0)
    square = framed_square(img)
    if square is None:
        return None
    box = (max(0.0, square[0] / s - 4), max(0.0, square[1] / s - 4),
           min(float(size[0]), square[2] / s + 4), min(float(size[1]), square[3] / s + 4))
    side = max(box[2] - box[0], box[3] - box[1])
    zoom = float(np.clip(np.floor(740 / side * 2) / 2, 1.0, 5.0))
    out = yield [crop_call(0, hv.to_bbox1000(box, size[0], size[1]), zoom)]
    if not out.images or out.images[0] is None:
        return None
    shape = dot_grid(cv2.cvtColor(out.images[0], cv2.COLOR_RGB2GRAY))
    if shape is None:
        return None
    rows, cols, objects = shape
    if "in total" in view.question.lower():
        return str(objects)
    return f"{rows}x{cols}"
