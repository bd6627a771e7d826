"""Small countable objects seen from above: parked cars and bacterial colonies, with shading.

Each object keeps one dominant colour over its whole footprint (shading stays within about 30 %
of it), so a colour count still sees one blob per object; the details (a lighter roof and darker
windscreens on a car, a lit centre and a darker rim on a colony) make it read as a thing rather
than a flat rectangle or dot. Every function draws in place into an RGB ``uint8`` image.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import cv2
import numpy as np

from m3gym.tasks.render.util import Box, Color


def _shade(color: Sequence[int], factor: float) -> Color:
    """Return ``color`` scaled by ``factor`` (clipped to 0–255)."""
    return tuple(min(255, max(0, int(round(c * factor)))) for c in color)  # type: ignore[return-value]


def draw_car(img: np.ndarray, x: int, y: int, w: int, h: int, color: Color) -> None:
    """Draw a car seen from above in the box ``(x, y, w, h)`` (length along x).

    A body of ``color`` with a darker outline, darker windscreens front and back and a lighter
    roof between them.
    """
    cv2.rectangle(img, (x, y), (x + w - 1, y + h - 1), color, -1, cv2.LINE_AA)
    if w >= 8 and h >= 5:
        glass = _shade(color, 0.74)
        fx0, fx1 = x + int(round(w * 0.22)), x + int(round(w * 0.34))
        rx0, rx1 = x + int(round(w * 0.72)), x + int(round(w * 0.8))
        cv2.rectangle(img, (fx0, y + 1), (fx1, y + h - 2), glass, -1)
        cv2.rectangle(img, (rx0, y + 1), (rx1, y + h - 2), glass, -1)
        cv2.rectangle(img, (fx1 + 1, y + 1), (rx0 - 1, y + h - 2), _shade(color, 1.12), -1)
    cv2.rectangle(img, (x, y), (x + w - 1, y + h - 1), _shade(color, 0.8), 1, cv2.LINE_AA)


def draw_colony(img: np.ndarray, centre16: tuple[int, int], radius16: int, color: Color) -> None:
    """Draw a colony (coordinates in 1/16 px): a disk with a darker rim and a lit centre."""
    cv2.circle(img, centre16, radius16, _shade(color, 0.82), -1, cv2.LINE_AA, 4)
    cv2.circle(img, centre16, max(4, int(radius16 * 0.72)), color, -1, cv2.LINE_AA, 4)
    cx, cy = centre16
    off = int(radius16 * 0.18)
    cv2.circle(img, (cx - off, cy - off), max(4, int(radius16 * 0.32)), _shade(color, 1.12), -1,
               cv2.LINE_AA, 4)


LINE_WIDTH: int = 2
"""Thickness of a painted bay line (``cv2.line``'s ``thickness``)."""


def draw_parking_lines(img: np.ndarray, rng: np.random.Generator, bounds: Box, spacing: int,
                       length: int, paint: Color) -> None:
    """Paint rows of parking-bay lines (``spacing`` apart, ``length`` long) over ``bounds``.

    Rows alternate with driving lanes; the paint is worn (a random third of each line's
    brightness is lost). The pixels are those of one 2-px ``cv2.line`` per bay line, drawn
    left to right and row by row (:func:`line_footprint`; a row's lines never touch, since
    ``spacing`` is wider than a line), with the same draws from ``rng``.
    """
    x0, y0, x1, y1 = bounds
    h, w = img.shape[:2]
    if spacing <= LINE_WIDTH:
        raise ValueError(f"spacing must exceed the line's width, got {spacing}")
    paint_arr = np.asarray(paint, np.float64)
    y = y0 + int(rng.integers(0, length))
    while y < y1:
        x = x0 + int(rng.integers(0, spacing))
        if x < x1:
            n = -(-(x1 - x) // spacing)
            wear = rng.uniform(0.67, 1.0, size=n)  # the very numbers of n scalar draws
            colors = np.clip(np.rint(paint_arr[None, :] * wear[:, None]), 0, 255).astype(np.uint8)
            dy, dx = line_footprint(min(y1, y + length) - y)
            rows = np.broadcast_to(y + dy, (n, dy.size))
            cols = (x + spacing * np.arange(n))[:, None] + dx[None, :]
            inside = (rows >= 0) & (rows < h) & (cols >= 0) & (cols < w)
            which = np.broadcast_to(np.arange(n)[:, None], inside.shape)[inside]
            img[rows[inside], cols[inside]] = colors[which]
        y += int(length * 2.2)


@functools.lru_cache(maxsize=64)
def line_footprint(length: int) -> tuple[np.ndarray, np.ndarray]:
    """Return the pixel offsets ``(dy, dx)`` that a vertical ``cv2.line`` of ``length`` inks.

    The line runs from ``(0, 0)`` to ``(0, length)`` with thickness :data:`LINE_WIDTH`; its
    pixels do not depend on where it is drawn (integer end points), so one raster serves every
    line of that length. The arrays are read-only.
    """
    pad = LINE_WIDTH + 2
    canvas = np.zeros((length + 2 * pad + 1, 2 * pad + 1), np.uint8)
    cv2.line(canvas, (pad, pad), (pad, pad + length), 1, LINE_WIDTH)
    dy, dx = np.nonzero(canvas)
    dy, dx = dy - pad, dx - pad
    dy.setflags(write=False)
    dx.setflags(write=False)
    return dy, dx
