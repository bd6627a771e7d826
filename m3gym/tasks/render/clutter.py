"""Clutter drawn away from reserved boxes.

Shapes, boxes, stripes, fake photos, icons (:func:`add_clutter`) and readable distractor labels
(:func:`add_distractor_labels`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import cv2
import numpy as np

from m3gym.tasks.render.backgrounds import background
from m3gym.tasks.render.geometry import find_free_spot
from m3gym.tasks.render.text import PlacedText, paste_text, random_font, render_text
from m3gym.tasks.render.util import Box, ink_for, rand_color

DISTRACTOR_WORDS: tuple[str, ...] = (
    "SALE", "NEW", "FRAGILE", "ORGANIC", "FRESH", "EXIT", "OPEN", "PRIORITY", "THIS SIDE UP",
    "HANDLE WITH CARE", "BEST BEFORE", "MADE IN EU", "RECYCLE", "ECO", "PREMIUM", "LIMITED",
    "WARNING", "NO ENTRY", "STAFF ONLY", "DELIVERY", "EXPRESS", "HOT DEAL", "2 FOR 1", "-30%",
    "$4.99", "$12.50", "$0.89", "LOT 7", "ZONE C", "AISLE 4", "GATE 12", "ROOM 5",
)
"""Short readable strings for distractor labels."""



def fake_photo(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Return a small ``uint8`` RGB "photo": sky/ground split, a sun or blob, soft shading."""
    img = background(rng, h, w, kind=("sky", "gradient", "noise")[int(rng.integers(3))],
                     vignette=0.0, detail=max(1, min(h, w) // 24))
    horizon = int(h * rng.uniform(0.45, 0.8))
    ground = rand_color(rng, 30, 180)
    pts = np.array([[0, horizon], [w // 3, horizon - int(h * rng.uniform(0, 0.3))],
                    [2 * w // 3, horizon - int(h * rng.uniform(0, 0.2))], [w, horizon],
                    [w, h], [0, h]], np.int32)
    cv2.fillPoly(img, [pts], ground, cv2.LINE_AA)
    cx, cy = int(rng.integers(w)), int(rng.integers(max(1, horizon)))
    cv2.circle(img, (cx, cy), max(2, min(h, w) // 8), rand_color(rng, 150, 256), -1, cv2.LINE_AA)
    return img



def _draw_icon(img: np.ndarray, rng: np.random.Generator, box: Box) -> None:
    """Draw a simple pictogram (circle+cross, triangle+bar, arrow or star) inside ``box``."""
    x0, y0, x1, y1 = box
    cx, cy, r = (x0 + x1) // 2, (y0 + y1) // 2, max(3, min(x1 - x0, y1 - y0) // 2 - 1)
    col, ink = rand_color(rng, 30, 230), rand_color(rng, 0, 256)
    kind = int(rng.integers(4))
    if kind == 0:
        cv2.circle(img, (cx, cy), r, col, -1, cv2.LINE_AA)
        cv2.line(img, (cx - r // 2, cy), (cx + r // 2, cy), ink, max(1, r // 5), cv2.LINE_AA)
        cv2.line(img, (cx, cy - r // 2), (cx, cy + r // 2), ink, max(1, r // 5), cv2.LINE_AA)
    elif kind == 1:
        tri = np.array([[cx, cy - r], [cx - r, cy + r], [cx + r, cy + r]], np.int32)
        cv2.fillPoly(img, [tri], col, cv2.LINE_AA)
        cv2.line(img, (cx, cy - r // 3), (cx, cy + r // 3), ink, max(1, r // 5), cv2.LINE_AA)
    elif kind == 2:
        t = max(1, r // 3)
        e = t // 2 + 1  # the line's caps reach half its thickness past its ends
        cv2.arrowedLine(img, (cx - r + e, cy), (cx + r - e, cy), col, t, cv2.LINE_AA,
                        tipLength=0.45)
    else:
        ang = np.linspace(0, 2 * np.pi, 11)[:-1] - np.pi / 2
        rad = np.where(np.arange(10) % 2 == 0, r, r * 0.45)
        star = np.stack([cx + rad * np.cos(ang), cy + rad * np.sin(ang)], 1).astype(np.int32)
        cv2.fillPoly(img, [star], col, cv2.LINE_AA)



CLUTTER_KINDS: tuple[str, ...] = ("shape", "box", "stripes", "photo", "icon", "ellipse", "line")
"""Kinds of clutter drawn by :func:`add_clutter`."""


def _rotated_axes(bw: int, bh: int, angle_deg: float) -> tuple[int, int]:
    """Return semi-axes ``(a, b)`` of an ellipse rotated by ``angle_deg`` that fits ``bw x bh``.

    The ``(bw // 2, bh // 2)`` ellipse scaled down until its rotated extent (half-widths
    ``sqrt(a^2 cos^2 + b^2 sin^2)`` and ``sqrt(a^2 sin^2 + b^2 cos^2)``) stays one pixel (the
    anti-aliasing) inside the box around the centre ``(bw // 2, bh // 2)``.
    """
    a, b = bw // 2, bh // 2
    c, s = math.cos(math.radians(angle_deg)), math.sin(math.radians(angle_deg))
    half_w = math.sqrt((a * c) ** 2 + (b * s) ** 2)
    half_h = math.sqrt((a * s) ** 2 + (b * c) ** 2)
    room_w = min(bw // 2, bw - 1 - bw // 2) - 1  # pixels from the centre to the box's edge
    room_h = min(bh // 2, bh - 1 - bh // 2) - 1
    k = min(1.0, room_w / max(half_w, 1e-6), room_h / max(half_h, 1e-6))
    return max(1, int(a * k)), max(1, int(b * k))



def add_clutter(
    img: np.ndarray, rng: np.random.Generator, count: int,
    avoid: Sequence[Sequence[float]] = (), size_range: tuple[float, float] = (0.04, 0.16),
    bounds: Box | None = None,
) -> list[Box]:
    """Draw ``count`` clutter objects into ``img`` (in place) away from the ``avoid`` boxes.

    Object sizes are fractions ``size_range`` of the image's longest side. Returns the boxes
    drawn (objects that found no free spot are skipped). Each object lies inside ``bounds``, at
    least 6 px from every ``avoid`` box and earlier object, and is drawn only inside its
    returned box (clipped to it: rotated ellipses, line caps and outlines included).
    """
    h, w = img.shape[:2]
    bounds = bounds or (0, 0, w, h)
    placed: list[Box] = []
    occupied = list(avoid)
    longest = max(h, w)
    for _ in range(count):
        kind = CLUTTER_KINDS[int(rng.integers(len(CLUTTER_KINDS)))]
        bw = int(longest * rng.uniform(*size_range))
        bh = int(bw * rng.uniform(0.5, 1.5))
        spot = find_free_spot(rng, (bw, bh), bounds, occupied, margin=6, tries=12)
        if spot is None:
            continue
        x, y = spot
        box = (x, y, x + bw, y + bh)
        # every object is drawn into its own box (a view of ``img``): OpenCV clips at the view's
        # edges, so no cap, rotated extent, outline or anti-aliasing can leave the box
        sub = img[y:y + bh, x:x + bw]
        col = rand_color(rng, 20, 236)
        if kind == "shape":
            n = int(rng.integers(3, 7))
            ang = np.sort(rng.uniform(0, 2 * np.pi, n))
            # vertices on the ellipse inscribed one pixel inside the box (anti-aliasing)
            pts = np.stack([bw / 2 + (bw / 2 - 1) * np.cos(ang),
                            bh / 2 + (bh / 2 - 1) * np.sin(ang)], 1)
            cv2.fillPoly(sub, [pts.astype(np.int32)], col, cv2.LINE_AA)
        elif kind == "box":
            sub[:] = col
            edge = tuple(int(c * 0.6) for c in col)
            cv2.rectangle(sub, (0, 0), (bw - 1, bh - 1), edge, max(1, bw // 40))
            cv2.line(sub, (0, bh // 3), (bw - 1, bh // 3), edge, 1, cv2.LINE_AA)
        elif kind == "stripes":
            alt = rand_color(rng, 20, 236)
            step = max(3, int(bw // rng.integers(4, 10)))
            for i, sx in enumerate(range(0, bw, step)):
                sub[:, sx:sx + step] = col if i % 2 else alt
        elif kind == "photo":
            sub[:] = fake_photo(rng, bh, bw)
            cv2.rectangle(sub, (0, 0), (bw - 1, bh - 1), (250, 250, 250), max(2, bw // 30))
        elif kind == "icon":
            _draw_icon(sub, rng, (0, 0, bw, bh))
        elif kind == "ellipse":
            angle = float(rng.uniform(0, 180))
            cv2.ellipse(sub, (bw // 2, bh // 2), _rotated_axes(bw, bh, angle), angle, 0, 360, col,
                        -1, cv2.LINE_AA)
        else:
            t = int(rng.integers(2, 6))
            e = (t + 1) // 2 + 1  # the round caps reach half the thickness past the ends
            cv2.line(sub, (e, e), (bw - 1 - e, bh - 1 - e), col, t, cv2.LINE_AA)
        placed.append(box)
        occupied.append(box)
    return placed



def add_distractor_labels(
    img: np.ndarray, rng: np.random.Generator, count: int,
    avoid: Sequence[Sequence[float]] = (), glyph_range: tuple[float, float] = (16.0, 40.0),
    texts: Sequence[str] | None = None, bounds: Box | None = None, plate: bool = True,
) -> list[PlacedText]:
    """Draw ``count`` readable text labels (optionally on a coloured plate) away from ``avoid``.

    Texts come from ``texts`` or :data:`DISTRACTOR_WORDS`. Returns the labels drawn.
    """
    h, w = img.shape[:2]
    bounds = bounds or (0, 0, w, h)
    words = list(texts) if texts is not None else list(DISTRACTOR_WORDS)
    occupied = list(avoid)
    out: list[PlacedText] = []
    for _ in range(count):
        text = words[int(rng.integers(len(words)))]
        face, italic = random_font(rng, readable=rng.random() < 0.8)
        patch = render_text(text, float(rng.uniform(*glyph_range)), face,
                            int(rng.integers(1, 4)), italic)
        pw, ph = patch.size
        pad = max(4, int(patch.glyph_height * 0.4)) if plate else 0
        spot = find_free_spot(rng, (pw + 2 * pad, ph + 2 * pad), bounds, occupied, tries=12)
        if spot is None:
            continue
        x, y = spot
        if plate:
            plate_col = rand_color(rng, 30, 240)
            cv2.rectangle(img, (x, y), (x + pw + 2 * pad - 1, y + ph + 2 * pad - 1), plate_col, -1)
            ink = ink_for(plate_col)
        else:
            ink = rand_color(rng, 0, 256)
        out.append(paste_text(img, patch, x + pad, y + pad, ink))
        occupied.append((x, y, x + pw + 2 * pad, y + ph + 2 * pad))
    return out
