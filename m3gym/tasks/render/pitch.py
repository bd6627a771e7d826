"""Drawing of a sports ground seen from a broadcast camera: stands, boards, pitch, players.

Shapes are anti-aliased (OpenCV ``LINE_AA`` with sub-pixel ``shift``), shaded (a lit and a
shaded side), outlined and drawn back to front (stands, boards, pitch, markings, shadows,
players), so a player reads as a small person in a shirt rather than a flat polygon.
Every function draws in place into an RGB ``uint8`` image and takes its randomness from the
``np.random.Generator`` it is given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import cv2
import numpy as np

from m3gym.tasks.render.fonts import truetype_text

Color = tuple[int, int, int]
Box = tuple[int, int, int, int]

SHIFT: int = 4
"""Sub-pixel bits of the OpenCV drawing calls (coordinates are multiplied by 16)."""

SKIN: tuple[Color, ...] = ((236, 196, 160), (198, 150, 110), (140, 96, 64), (96, 64, 44))
"""Skin tones of players and spectators."""

HAIR: tuple[Color, ...] = ((30, 24, 20), (70, 48, 30), (120, 90, 50), (200, 170, 110),
                           (40, 40, 40))
"""Hair colours."""

PITCH_LENGTH_M: float = 105.0
"""Length of a football pitch in metres (the markings are scaled from it)."""

PITCH_WIDTH_M: float = 68.0
"""Width of a football pitch in metres."""


def _p(x: float, y: float) -> tuple[int, int]:
    """Return the fixed-point point of ``(x, y)`` for OpenCV calls with :data:`SHIFT`."""
    return int(round(x * (1 << SHIFT))), int(round(y * (1 << SHIFT)))


def _poly(points: Sequence[tuple[float, float]]) -> np.ndarray:
    """Return a fixed-point ``int32`` polygon for ``cv2.fillPoly`` with :data:`SHIFT`."""
    return np.array([_p(x, y) for x, y in points], np.int32)


def shade(color: Sequence[int], factor: float) -> Color:
    """Return ``color`` scaled by ``factor`` (clipped to 0–255)."""
    return tuple(min(255, max(0, int(round(c * factor)))) for c in color)  # type: ignore[return-value]


def _crowd_tile(rng: np.random.Generator, rows: int, row_h: int, pitch_x: int, width: int,
                concrete: np.ndarray) -> np.ndarray:
    """Return ``rows`` terrace steps of seated spectators, ``width`` px wide (wraps around)."""
    tile = np.empty((rows * row_h, width, 3), np.uint8)
    sw, sh, hr = pitch_x * 0.42, row_h * 0.32, row_h * 0.2
    body_axes, lean_axes, hair_axes = _p(sw, sh), _p(sw * 0.6, sh * 0.9), _p(hr, hr)
    head_r = int(round(hr * 16))
    for r in range(rows):
        y = r * row_h
        # one step: a lit tread and a dark riser
        cv2.rectangle(tile, (0, y), (width - 1, y + row_h - 1), shade(concrete, 1.0), -1)
        cv2.rectangle(tile, (0, y + row_h - 3), (width - 1, y + row_h - 1),
                      shade(concrete, 0.6), -1)
        xs = np.arange(0, width, pitch_x)
        seated = rng.random(xs.size) < 0.86
        clothes = rng.integers(25, 235, (xs.size, 3))
        skins = rng.integers(len(SKIN), size=xs.size).tolist()
        hairs = rng.integers(len(HAIR), size=xs.size).tolist()
        jitter = rng.uniform(-1.5, 1.5, xs.size)
        # every spectator's fixed-point coordinates and shaded colours at once: the very
        # numbers _p and shade give one by one (float64 products, round half to even)
        cx = xs + pitch_x / 2 + jitter
        body_x, lean_x = _fixed(cx), _fixed(cx + sw * 0.35)
        lit, dim = _shaded(clothes, 0.95), _shaded(clothes, 0.75)
        body_y, head_y, hair_y = (_p(0.0, y + row_h * f)[1] for f in (0.78, 0.38, 0.36))
        for k in np.flatnonzero(seated).tolist():
            cv2.ellipse(tile, (body_x[k], body_y), body_axes, 0, 180, 360, lit[k], -1,
                        cv2.LINE_AA, SHIFT)
            cv2.ellipse(tile, (lean_x[k], body_y), lean_axes, 0, 180, 360, dim[k], -1,
                        cv2.LINE_AA, SHIFT)
            cv2.circle(tile, (body_x[k], head_y), head_r, SKIN[skins[k]], -1, cv2.LINE_AA,
                       SHIFT)
            cv2.ellipse(tile, (body_x[k], hair_y), hair_axes, 0, 180, 360, HAIR[hairs[k]], -1,
                        cv2.LINE_AA, SHIFT)
    return tile


def _fixed(values: np.ndarray) -> list[int]:
    """Return :func:`_p`'s fixed-point coordinate of each of ``values`` (Python ints)."""
    return np.rint(values * (1 << SHIFT)).astype(np.int64).tolist()


def _shaded(colors: np.ndarray, factor: float) -> list[Color]:
    """Return :func:`shade` of each row of the integer ``(n, 3)`` ``colors``."""
    rows = np.clip(np.rint(colors * factor), 0, 255).astype(np.int64).tolist()
    return [tuple(c) for c in rows]  # type: ignore[misc]


def draw_stands(img: np.ndarray, rng: np.random.Generator, tiles: int = 3, rows: int = 6,
                width: int = 640) -> None:
    """Fill ``img`` with terraces of seated spectators (the pitch is drawn over them later).

    Rows of concrete steps (a lit tread, a dark riser) carry spectators — shoulders in a
    clothing colour, a head in a skin tone with hair — with a few empty seats. ``tiles``
    different bands of ``rows`` steps are drawn once and laid across the image, each band
    picked at random, shifted by a random amount and sometimes mirrored, which costs a few
    hundred drawing calls instead of one per spectator of the crowd.
    """
    h = img.shape[0]
    concrete = np.array([rng.uniform(110, 150)] * 3) + rng.uniform(-8, 8, 3)
    row_h = int(rng.integers(13, 18))
    pitch_x = int(round(row_h * rng.uniform(0.75, 0.95)))
    width = pitch_x * max(1, width // pitch_x)  # a whole number of seats: the tile wraps
    bands = [_crowd_tile(rng, rows, row_h, pitch_x, width, concrete) for _ in range(tiles)]
    band_h = rows * row_h
    flipped: dict[int, np.ndarray] = {}
    for y in range(0, h, band_h):
        pick = int(rng.integers(tiles))
        band = bands[pick]
        if rng.random() < 0.5:
            if pick not in flipped:
                flipped[pick] = cv2.flip(band, 1)
            band = flipped[pick]
        _lay(img[y:y + band_h], band, -int(rng.integers(width)) % width)


def _lay(dst: np.ndarray, band: np.ndarray, start: int) -> None:
    """Fill ``dst`` with ``band``'s columns from ``start`` on, wrapping around (in place).

    This is ``np.tile(np.roll(band, -start, axis=1), (1, reps, 1))`` cut to ``dst``'s shape,
    copied in whole-band slices without the rolled and tiled intermediates.
    """
    rows, w = dst.shape[:2]
    width = band.shape[1]
    x = 0
    while x < w:
        n = min(width - start, w - x)
        dst[:, x:x + n] = band[:rows, start:start + n]
        x, start = x + n, 0


def blur_margin(sigma: float) -> int:
    """Return a margin (px) wider than the radius of ``cv2.GaussianBlur``'s kernel at ``sigma``.

    OpenCV sizes the kernel ``round(6 sigma + 1) | 1`` for ``uint8`` (``8 sigma`` otherwise).
    """
    return int(math.ceil(4 * sigma)) + 1


def blur_around(img: np.ndarray, hole: Box, sigma: float, fill: Color) -> np.ndarray:
    """Return ``cv2.GaussianBlur(img, (0, 0), sigma)`` with ``hole`` painted ``fill``.

    Only what lies around ``hole`` is blurred: the bands above and below it straight into the
    result, its two sides side by side in one image. Each piece carries a margin of
    :func:`blur_margin` on its inner edges (where a piece meets an image edge, OpenCV's border
    there is the whole image's), so the bytes are those of blurring the whole image and
    painting ``hole``, and no pixel deeper than the margin inside ``hole`` is read (a hole
    narrower than the margin: the whole image is blurred). ``img`` is left as it is.
    """
    h, w = img.shape[:2]
    x0, y0, x1, y1 = max(0, hole[0]), max(0, hole[1]), min(w, hole[2]), min(h, hole[3])
    m = blur_margin(sigma)
    if x1 - x0 < m or y1 - y0 < m:  # the margins would reach past the hole
        return _painted(cv2.GaussianBlur(img, (0, 0), sigma), (x0, y0, x1, y1), fill)
    out = np.empty_like(img)
    if y0 > 0:
        cv2.GaussianBlur(img[:y0 + m], (0, 0), sigma, dst=out[:y0 + m])
    if y1 < h:
        cv2.GaussianBlur(img[y1 - m:], (0, 0), sigma, dst=out[y1 - m:])
    if x0 > 0 or x1 < w:
        rows = slice(y0 - min(y0, m), y1 + m)
        sides = cv2.GaussianBlur(np.hstack((img[rows, :x0 + m if x0 else 0],
                                            img[rows, x1 - m if x1 < w else w:])), (0, 0), sigma)
        inner = sides[y0 - rows.start:y1 - rows.start]
        out[y0:y1, :x0] = inner[:, :x0]
        out[y0:y1, x1:] = inner[:, inner.shape[1] - (w - x1):]
    return _painted(out, (x0, y0, x1, y1), fill)


def _painted(img: np.ndarray, box: Box, fill: Color) -> np.ndarray:
    """Return ``img`` with ``box`` (inside it) painted ``fill`` (in place; nothing when empty)."""
    x0, y0, x1, y1 = box
    if x1 > x0 and y1 > y0:
        cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), fill, -1)
    return img


def draw_boards(img: np.ndarray, rng: np.random.Generator, pitch: Box, gap: int,
                depth: int, names: Sequence[str] = ()) -> list[Box]:
    """Draw advertising boards in a ring ``gap`` px outside ``pitch``, ``depth`` px deep.

    Each panel is a coloured rectangle with a dark frame and, on the long sides, a lighter top
    edge; panel ``k`` advertises ``names[k % len(names)]`` in bold TrueType (turned a quarter
    on the end boards; shortened to its first word, or left off, when too long). Returns the
    panel boxes.
    """
    h, w = img.shape[:2]
    x0, y0, x1, y1 = pitch
    panels: list[Box] = []
    sides = [
        (x0 - gap - depth, y0 - gap - depth, x1 + gap + depth, y0 - gap, True),   # far side
        (x0 - gap - depth, y1 + gap, x1 + gap + depth, y1 + gap + depth, True),   # near side
        (x0 - gap - depth, y0 - gap, x0 - gap, y1 + gap, False),                  # left end
        (x1 + gap, y0 - gap, x1 + gap + depth, y1 + gap, False),                  # right end
    ]
    for bx0, by0, bx1, by1, horizontal in sides:
        bx0, by0, bx1, by1 = max(0, bx0), max(0, by0), min(w, bx1), min(h, by1)
        if bx1 - bx0 < 4 or by1 - by0 < 4:
            continue
        length = (bx1 - bx0) if horizontal else (by1 - by0)
        n = max(1, int(round(length / rng.uniform(220, 360))))
        cuts = np.linspace(0, length, n + 1).astype(int)
        for a, b in zip(cuts[:-1], cuts[1:]):
            col = rng.integers(20, 236, 3).tolist()
            box = ((bx0 + a, by0, bx0 + b, by1) if horizontal else (bx0, by0 + a, bx1, by0 + b))
            cv2.rectangle(img, box[:2], (box[2] - 1, box[3] - 1), col, -1)
            cv2.rectangle(img, box[:2], (box[2] - 1, box[3] - 1), shade(col, 0.55), 1)
            if horizontal:
                cv2.line(img, (box[0], box[1]), (box[2] - 1, box[1]), shade(col, 1.3), 2)
            if names:
                _board_text(img, names[len(panels) % len(names)], box, horizontal, col)
            panels.append(box)
    return panels


def _board_text(img: np.ndarray, name: str, box: Box, horizontal: bool, color: Color) -> None:
    """Print ``name`` centred on a board panel (in place), in the panel's contrasting ink."""
    x0, y0, x1, y1 = box
    length, depth = (x1 - x0, y1 - y0) if horizontal else (y1 - y0, x1 - x0)
    glyph = max(4.0, depth * 0.42)
    for text in (name, name.split()[0].strip(",")):
        patch = truetype_text(text.upper(), glyph, "sans-bold")
        if patch.size[0] <= length - 12 and patch.size[1] <= depth - 4:
            break
    else:
        return
    alpha = patch.alpha if horizontal else np.ascontiguousarray(np.rot90(patch.alpha, 1))
    h, w = alpha.shape
    x, y = x0 + (x1 - x0 - w) // 2, y0 + (y1 - y0 - h) // 2
    ink = np.asarray((250, 250, 250) if sum(color) / 3 < 140 else (20, 20, 24), np.float32)
    region = img[y:y + h, x:x + w]
    a = alpha.astype(np.float32)[..., None] * (1.0 / 255.0)
    region[:] = (region * (1.0 - a) + ink * a + 0.5).astype(np.uint8)


def pitch_markings(box: Box) -> tuple[float, float, float, float, float, float]:
    """Return ``(x0, y0, x1, y1, sx, sy)``: the touchline box inside ``box`` and px per metre.

    The markings sit 3.5 % of the ground's width inside ``box`` on every side (symmetric, so
    the halfway line is the box's vertical centre line).
    """
    bx0, by0, bx1, by1 = box
    inset = 0.035 * (bx1 - bx0)
    x0, y0, x1, y1 = bx0 + inset, by0 + inset, bx1 - inset, by1 - inset
    return x0, y0, x1, y1, (x1 - x0) / PITCH_LENGTH_M, (y1 - y0) / PITCH_WIDTH_M


def draw_pitch(img: np.ndarray, rng: np.random.Generator, box: Box, surface: Color,
               line: Color, line_width: float) -> Box:
    """Draw a playing surface over ``box`` with mowing stripes and full football markings.

    Markings: touchlines and goal lines, halfway line, centre circle and spot, penalty and goal
    areas, penalty spots and arcs, corner arcs, and a goal with a net behind each goal line.
    Returns the touchline box (pixels).
    """
    bx0, by0, bx1, by1 = box
    fw = bx1 - bx0
    cv2.rectangle(img, (bx0, by0), (bx1 - 1, by1 - 1), surface, -1)
    bands = int(rng.integers(8, 16))
    darker = shade(surface, 0.93)
    for b in range(1, bands, 2):  # mowing stripes
        cv2.rectangle(img, (bx0 + b * fw // bands, by0), (bx0 + (b + 1) * fw // bands - 1, by1 - 1),
                      darker, -1)
    x0, y0, x1, y1, sx, sy = pitch_markings(box)
    lw = max(1, int(round(line_width)))
    aa, sh = cv2.LINE_AA, SHIFT
    cv2.rectangle(img, _p(x0, y0), _p(x1, y1), line, lw, aa, sh)
    mx, my = (x0 + x1) / 2, (y0 + y1) / 2
    cv2.line(img, _p(mx, y0), _p(mx, y1), line, lw, aa, sh)
    r = 9.15 * math.sqrt(sx * sy)  # circles stay round when the box is not 105:68
    cv2.circle(img, _p(mx, my), int(round(r * 16)), line, lw, aa, sh)
    cv2.circle(img, _p(mx, my), int(round(max(1.5, 0.15 * sx) * 16)), line, -1, aa, sh)
    for side in (1, -1):
        gx = x0 if side == 1 else x1
        pa = (gx, my - 20.16 * sy, gx + side * 16.5 * sx, my + 20.16 * sy)
        ga = (gx, my - 9.16 * sy, gx + side * 5.5 * sx, my + 9.16 * sy)
        for a in (pa, ga):
            cv2.rectangle(img, _p(min(a[0], a[2]), a[1]), _p(max(a[0], a[2]), a[3]), line, lw,
                          aa, sh)
        spot = gx + side * 11.0 * sx
        cv2.circle(img, _p(spot, my), int(round(max(1.5, 0.12 * sx) * 16)), line, -1, aa, sh)
        # the penalty arc: the part of the 9.15 m circle round the spot outside the area
        half = math.degrees(math.acos(min(1.0, 5.5 * sx / r)))
        start = -half if side == 1 else 180 - half
        cv2.ellipse(img, _p(spot, my), _p(r, r), 0, start, start + 2 * half, line, lw, aa, sh)
        for cy, a0 in ((y0, 0 if side == 1 else 90), (y1, 270 if side == 1 else 180)):
            cv2.ellipse(img, _p(gx, cy), _p(1.2 * sx, 1.2 * sx), 0, a0, a0 + 90, line, lw,
                        aa, sh)
        # the goal: posts, a shaded net with a diagonal mesh behind the goal line
        depth = max(6.0, 2.0 * sx) * side
        top, bot = my - 3.66 * sy, my + 3.66 * sy
        net = (min(gx, gx - depth), top, max(gx, gx - depth), bot)
        cv2.rectangle(img, _p(net[0], net[1]), _p(net[2], net[3]), shade(surface, 0.8), -1,
                      aa, sh)
        nx0, ny0 = int(net[0]), int(net[1])
        mesh = img[ny0:int(math.ceil(net[3])) + 1, nx0:int(math.ceil(net[2])) + 1]
        step = max(2.5, 0.45 * sx)
        span = mesh.shape[1]
        t = -float(span)
        while t < mesh.shape[0]:  # a diagonal mesh, clipped to the net by the sub-image
            cv2.line(mesh, _p(0, t), _p(span, t + span), (178, 178, 178), 1, aa, sh)
            cv2.line(mesh, _p(0, t + span), _p(span, t), (160, 160, 160), 1, aa, sh)
            t += step
        cv2.rectangle(img, _p(net[0], net[1]), _p(net[2], net[3]), (245, 245, 245), lw, aa, sh)
    return int(x0), int(y0), int(math.ceil(x1)), int(math.ceil(y1))
