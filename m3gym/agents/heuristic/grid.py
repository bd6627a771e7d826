"""Periods of a repetitive pattern (the ``grid_period`` plan): rows, columns, objects.

The plan stretches the faint photo (autocontrast), thresholds it at the level where the
pattern separates (:func:`grid_threshold`) and counts the lattice in the binary image
(:func:`grid_shape`: chains of alike blobs along and across the grid's direction).
"""

from __future__ import annotations

import cv2
import numpy as np

from m3gym.agents.heuristic.calls import op_call
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


def plan_grid_period(view: EpisodeView) -> Plan:
    """Stretch the faint photo, threshold it where the pattern separates, count rows/columns."""
    out = yield [op_call("autocontrast", 0, cutoff=0.5)]
    if not out.images or out.images[0] is None or out.indices[0] is None:
        return None
    value = grid_threshold(cv2.cvtColor(out.images[0], cv2.COLOR_RGB2GRAY))
    out = yield [op_call("threshold", int(out.indices[0]), value=int(value), mode="binary")]
    if not out.images or out.images[0] is None:
        return None
    shape = grid_shape(out.images[0])
    if shape is None:
        return None
    rows, cols, objects = shape
    if "in total" in view.question.lower():
        answer = str(objects)
    else:
        answer = f"{rows}x{cols}"
    return answer
