"""Image analysis for the heuristic agent: colour blobs, grid positions, orientation, boxes.

Everything works on what the agent sees (RGB ``uint8`` view images) with OpenCV whole-array ops.
Boxes are pixel ``(x0, y0, x1, y1)`` in the analysed image, exclusive ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.geometry import Box, box_to_bbox1000, grow_box

COLORS: dict[str, tuple[int, int, int]] = {
    "red": (206, 40, 40), "blue": (40, 90, 210), "green": (40, 150, 60),
    "yellow": (240, 210, 40), "orange": (240, 130, 30), "purple": (130, 60, 170),
    "pink": (240, 130, 180), "white": (245, 245, 240), "cyan": (40, 190, 210),
}
"""Colour words questions use and the RGB values scenes paint them with."""


@dataclass(frozen=True)
class Blob:
    """A connected region of one colour: its box, filled area and fill ratio."""

    box: Box
    area: int
    fill: float

    @property
    def center(self) -> tuple[float, float]:
        """Centre ``(x, y)`` of the box."""
        return (self.box[0] + self.box[2]) / 2, (self.box[1] + self.box[3]) / 2

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` of the box."""
        return self.box[2] - self.box[0], self.box[3] - self.box[1]


def color_mask(rgb: np.ndarray, color: Sequence[int], tol: float = 45.0) -> np.ndarray:
    """Return a ``uint8`` mask (255) of pixels within Euclidean RGB distance ``tol`` of color."""
    diff = rgb.astype(np.int16) - np.asarray(color, np.int16)
    dist2 = np.einsum("ijk,ijk->ij", diff, diff, dtype=np.int32)
    return np.where(dist2 <= int(tol * tol), 255, 0).astype(np.uint8)


def color_blobs(rgb: np.ndarray, color: Sequence[int], tol: float = 45.0,
                close: int = 3, min_area: int = 6) -> list[Blob]:
    """Return the blobs of ``color`` (after a morphological close of ``close`` px), big first."""
    mask = color_mask(rgb, color, tol)
    if close > 1:
        mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((close, close), np.uint8))
    n, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    blobs = []
    for i in range(1, n):
        x, y, w, h, area = (int(v) for v in stats[i])
        if area >= min_area:
            blobs.append(Blob((x, y, x + w, y + h), area, area / float(w * h)))
    return sorted(blobs, key=lambda b: -b.area)


def position_region(phrase: str | None) -> tuple[float, float, float, float]:
    """Return the 0-1 box of a 3x3-grid phrase ("top-left", "center", "right", ...)."""
    if phrase is None:
        return 0.0, 0.0, 1.0, 1.0
    cols = {"left": (0.0, 1 / 3), "right": (2 / 3, 1.0)}
    rows = {"top": (0.0, 1 / 3), "bottom": (2 / 3, 1.0)}
    if phrase == "center":
        return 1 / 3, 1 / 3, 2 / 3, 2 / 3
    parts = phrase.split("-")
    x0, x1 = (1 / 3, 2 / 3)
    y0, y1 = (1 / 3, 2 / 3)
    for p in parts:
        if p in cols:
            x0, x1 = cols[p]
        if p in rows:
            y0, y1 = rows[p]
    return x0, y0, x1, y1


def position_distance(center: tuple[float, float], shape: tuple[int, ...],
                      phrase: str | None) -> float:
    """Return how far (0-1 units) a point lies outside the grid cell a phrase names (0 inside)."""
    h, w = shape[:2]
    x, y = center[0] / w, center[1] / h
    x0, y0, x1, y1 = position_region(phrase)
    dx = max(x0 - x, 0.0, x - x1)
    dy = max(y0 - y, 0.0, y - y1)
    return float(np.hypot(dx, dy))


def grow(box: Sequence[float], margin_x: float, margin_y: float, w: int, h: int) -> Box:
    """Return ``box`` grown by the margins, rounded outward and clipped to a ``w`` x ``h`` image.

    :func:`m3gym.geometry.grow_box` with the margins given per axis.
    """
    return grow_box(box, margin_x, w, h, margin_y=margin_y)


def to_bbox1000(box: Sequence[float], w: int, h: int) -> list[int]:
    """Return a pixel box of a ``w`` x ``h`` image on the tools' 0-1000 scale (outward).

    :func:`m3gym.geometry.box_to_bbox1000`: the integer ``bbox_2d`` whose crop contains ``box``.
    """
    return box_to_bbox1000(box, w, h)


def zoom_for(box_px: Sequence[float], view_scale: float, want_scale: float,
             limit: int = 760) -> float:
    """Return a crop zoom (0.5-5) that magnifies by ``want_scale`` over full resolution.

    ``box_px`` is the crop box in view pixels and ``view_scale`` = view / full size; the output
    (full-resolution crop times zoom) is kept below ``limit`` pixels so it is not downscaled.
    """
    bw = (box_px[2] - box_px[0]) / view_scale
    bh = (box_px[3] - box_px[1]) / view_scale
    fit = limit / max(bw, bh, 1.0)
    return float(np.clip(min(want_scale, fit), 0.5, 5.0))


def ink_mask(gray: np.ndarray) -> np.ndarray:
    """Return a binary ink mask (dark strokes on lighter paper) by adaptive thresholding."""
    return cv2.adaptiveThreshold(gray, 255, cv2.ADAPTIVE_THRESH_MEAN_C, cv2.THRESH_BINARY_INV,
                                 15, 12)


def text_lines_horizontal(gray: np.ndarray) -> bool:
    """Return whether the text in ``gray`` runs in horizontal lines (else vertical).

    Text lines make the ink profile across them spiky: the profile perpendicular to the lines
    varies more (relative to its mean) than the one along them.
    """
    ink = ink_mask(gray).astype(np.float32)
    rows = ink.mean(axis=1)
    cols = ink.mean(axis=0)
    rv = float(np.std(np.diff(rows))) / (float(rows.mean()) + 1e-6)
    cv = float(np.std(np.diff(cols))) / (float(cols.mean()) + 1e-6)
    return rv >= cv


def nearest_first(blobs: Sequence[Blob], shape: tuple[int, ...], where: str | None) -> list[Box]:
    """Return the boxes of ``blobs``, the nearest to the grid cell ``where`` first.

    Distances are compared to 0.01; ties go to the better filled blob, then to the box
    that sorts first (the leftmost).
    """
    scored = sorted((round(position_distance(b.center, shape, where), 2), -b.fill, b.box)
                    for b in blobs)
    return [box for _, _, box in scored]


def largest_component(mask: np.ndarray) -> tuple[int, int, int, int, int] | None:
    """Return ``(x, y, w, h, area)`` of the largest 8-connected component of ``mask``, or None."""
    n, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    if n <= 1:
        return None
    k = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    x, y, w, h, area = (int(v) for v in stats[k])
    return x, y, w, h, area


def bright_region(rgb: np.ndarray, min_level: int = 200, min_fraction: float = 0.02
                  ) -> Box | None:
    """Return the box of the largest bright (paper-like) low-saturation region.

    ``None`` when there is none or it covers less than ``min_fraction`` of the image.
    """
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
    mask = ((hsv[..., 2] >= min_level) & (hsv[..., 1] <= 60)).astype(np.uint8) * 255
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((9, 9), np.uint8))
    largest = largest_component(mask)
    if largest is None:
        return None
    x, y, w, h, area = largest
    if area < min_fraction * rgb.shape[0] * rgb.shape[1]:
        return None
    return x, y, x + w, y + h


def apply_fix(img: np.ndarray, fix: tuple[str, object]) -> np.ndarray:
    """Return ``img`` with a ``("rotate", angle)`` (CCW, multiples of 90) or ``("flip", dir)``."""
    op, arg = fix
    if op == "rotate":
        code = {90: cv2.ROTATE_90_COUNTERCLOCKWISE, -90: cv2.ROTATE_90_CLOCKWISE,
                180: cv2.ROTATE_180}[int(arg)]  # type: ignore[call-overload]
        return cv2.rotate(img, code)
    flip = {"horizontal": 1, "vertical": 0, "both": -1}[str(arg)]
    return cv2.flip(img, flip)


def flood_region(rgb: np.ndarray, seed: tuple[int, int], tol: int = 18) -> Box | None:
    """Return the box of the uniform region grown from ``seed`` (x, y) within ``tol`` levels."""
    h, w = rgb.shape[:2]
    x, y = int(seed[0]), int(seed[1])
    if not (0 <= x < w and 0 <= y < h):
        return None
    mask = np.zeros((h + 2, w + 2), np.uint8)
    flags = 8 | cv2.FLOODFILL_FIXED_RANGE | cv2.FLOODFILL_MASK_ONLY | (255 << 8)
    img = np.ascontiguousarray(rgb)
    _, _, _, rect = cv2.floodFill(img.copy(), mask, (x, y), (0, 0, 0), (tol,) * 3, (tol,) * 3,
                                  flags)
    rx, ry, rw, rh = rect
    if rw * rh <= 4:
        return None
    return rx, ry, rx + rw, ry + rh


def plain_plates(rgb: np.ndarray, min_level: int = 150, max_std: float = 9.0) -> list[Blob]:
    """Return light, flat (low local variation) rectangular regions: tags and label plates."""
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.float32)
    mean = cv2.blur(gray, (3, 3))
    var = cv2.blur(gray * gray, (3, 3)) - mean * mean
    flat = ((var <= max_std * max_std) & (gray >= min_level)).astype(np.uint8) * 255
    flat = cv2.morphologyEx(flat, cv2.MORPH_CLOSE, np.ones((3, 3), np.uint8))
    n, _, stats, _ = cv2.connectedComponentsWithStats(flat, connectivity=4)
    out = []
    for i in range(1, n):
        x, y, w, h, area = (int(v) for v in stats[i])
        if area >= 20:
            out.append(Blob((x, y, x + w, y + h), area, area / float(w * h)))
    return out
