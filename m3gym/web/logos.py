"""Procedural logos and emblems (OpenCV drawing) and the descriptors used by reverse image search.

A :class:`LogoSpec` is a small, hashable recipe (colours, shape, pattern, initials, ...). Specs are
drawn with the world's rng; :func:`render_logo` turns one into a ``uint8`` RGB image. Near-duplicate
entities get :func:`logo_variant` specs: the same design with one large element changed, so that a
sloppy crop may match the wrong logo while a faithful one matches exactly.

Reverse image search compares *descriptors*: the grayscale image (or a square window of it)
downsampled to ``DESCRIPTOR_SIZE``² and normalized to zero mean and unit norm, so a dot product is
a normalized correlation, invariant to brightness and contrast changes and to scale.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import cv2
import numpy as np

from m3gym.web.names import pick

PALETTE: dict[str, tuple[int, int, int]] = {
    "red": (214, 40, 40),
    "blue": (30, 80, 200),
    "green": (40, 150, 60),
    "yellow": (245, 210, 40),
    "orange": (245, 130, 20),
    "purple": (120, 50, 160),
    "black": (20, 20, 20),
    "white": (245, 245, 245),
    "navy": (15, 30, 90),
    "teal": (0, 128, 128),
    "maroon": (110, 20, 40),
    "gold": (200, 160, 60),
    "grey": (128, 128, 128),
    "pink": (240, 140, 180),
    "cyan": (60, 200, 230),
    "brown": (120, 75, 35),
}
"""Named RGB colours used by logos and stated in pages."""

KIT_COLOURS: tuple[str, ...] = ("red", "blue", "green", "yellow", "orange", "purple", "black",
                                "white")
"""The small palette sports teams draw their kit colour from."""

SHAPES: tuple[str, ...] = ("circle", "square", "triangle", "diamond", "hexagon", "star", "ring",
                           "shield")
PATTERNS: tuple[str, ...] = ("none", "hstripes", "vstripes", "diagonal", "dots", "cross",
                             "half", "chevron")
CORNERS: tuple[str, ...] = ("none", "tl", "tr", "bl", "br")
FONTS: tuple[int, ...] = (cv2.FONT_HERSHEY_SIMPLEX, cv2.FONT_HERSHEY_DUPLEX,
                          cv2.FONT_HERSHEY_TRIPLEX, cv2.FONT_HERSHEY_COMPLEX)
LOGO_SIZE = 128
DESCRIPTOR_SIZE = 24


def luminance(colour: str) -> float:
    """Return the 8-bit luma (ITU-R BT.601) of a palette colour."""
    r, g, b = PALETTE[colour]
    return 0.299 * r + 0.587 * g + 0.114 * b


@dataclass(frozen=True)
class LogoSpec:
    """The recipe of one logo; :func:`render_logo` draws it."""

    background: str
    shape: str
    shape_colour: str
    pattern: str
    pattern_colour: str
    text: str
    text_colour: str
    font: int
    frame: int
    frame_colour: str
    corner: str
    corner_colour: str
    scale: float
    dx: int
    dy: int
    angle: float
    size: int = LOGO_SIZE


def contrasting(rng: np.random.Generator, against: tuple[str, ...], min_gap: float = 60.0,
                pool: tuple[str, ...] | None = None) -> str:
    """Return a palette colour whose luma differs by ``min_gap`` from each one in ``against``."""
    names = pool or tuple(PALETTE)
    ok = tuple(c for c in names if all(abs(luminance(c) - luminance(a)) >= min_gap
                                       for a in against))
    return pick(rng, ok or names)


def random_logo_spec(rng: np.random.Generator, text: str, main_colour: str | None = None
                     ) -> LogoSpec:
    """Draw a logo recipe showing ``text`` (initials); ``main_colour`` fixes the shape colour."""
    shape_colour = main_colour or pick(rng, tuple(PALETTE))
    background = contrasting(rng, (shape_colour,), 70.0)
    pattern_colour = contrasting(rng, (shape_colour,), 50.0)
    text_colour = contrasting(rng, (shape_colour,), 90.0)
    return LogoSpec(
        background=background,
        shape=pick(rng, SHAPES),
        shape_colour=shape_colour,
        pattern=pick(rng, PATTERNS),
        pattern_colour=pattern_colour,
        text=text,
        text_colour=text_colour,
        font=int(rng.integers(len(FONTS))),
        frame=int(pick(rng, (0, 0, 3, 6))),
        frame_colour=contrasting(rng, (background,), 60.0),
        corner=pick(rng, CORNERS),
        corner_colour=contrasting(rng, (background,), 60.0),
        scale=float(np.round(rng.uniform(0.62, 0.86), 3)),
        dx=int(rng.integers(-8, 9)),
        dy=int(rng.integers(-8, 9)),
        angle=float(np.round(rng.uniform(0.0, 360.0), 1)),
    )


def logo_variant(rng: np.random.Generator, spec: LogoSpec) -> LogoSpec:
    """Return a near-duplicate of ``spec``: one large element changed, visible in grayscale too."""
    change = pick(rng, ("shape", "pattern", "shape_colour", "background"))
    if change == "shape":
        return replace(spec, shape=pick(rng, tuple(s for s in SHAPES if s != spec.shape)))
    if change == "pattern":
        return replace(spec, pattern=pick(rng, tuple(p for p in PATTERNS if p != spec.pattern)))
    if change == "shape_colour":
        return replace(spec, shape_colour=contrasting(
            rng, (spec.shape_colour, spec.background), 45.0))
    return replace(spec, background=contrasting(rng, (spec.background, spec.shape_colour), 45.0))


def shape_points(shape: str, cx: float, cy: float, r: float, angle: float) -> np.ndarray:
    """Return the polygon (int32 ``(N, 1, 2)``) of a polygonal shape centred on ``(cx, cy)``."""
    if shape == "square":
        t = np.deg2rad(45.0 + np.array([0, 90, 180, 270]))
        rad = np.full(4, r * 0.95)
    elif shape == "triangle":
        t = np.deg2rad(-90.0 + np.array([0, 120, 240]))
        rad = np.full(3, r * 1.05)
    elif shape == "diamond":
        t = np.deg2rad(np.array([-90, 0, 90, 180]))
        rad = np.array([r, r * 0.75, r, r * 0.75])
    elif shape == "hexagon":
        t = np.deg2rad(np.arange(6) * 60.0 + angle % 60.0)
        rad = np.full(6, r)
    elif shape == "star":
        t = np.deg2rad(-90.0 + np.arange(10) * 36.0)
        rad = np.where(np.arange(10) % 2 == 0, r, r * 0.45)
    else:  # shield
        pts = np.array([[-0.85, -0.9], [0.85, -0.9], [0.85, 0.1], [0.0, 1.0], [-0.85, 0.1]])
        xy = np.stack([cx + pts[:, 0] * r, cy + pts[:, 1] * r], axis=1)
        return np.round(xy).astype(np.int32).reshape(-1, 1, 2)
    xy = np.stack([cx + rad * np.cos(t), cy + rad * np.sin(t)], axis=1)
    return np.round(xy).astype(np.int32).reshape(-1, 1, 2)


def shape_mask(spec: LogoSpec) -> np.ndarray:
    """Return the ``uint8`` mask (255 inside) of the logo's main shape."""
    size = spec.size
    mask = np.zeros((size, size), np.uint8)
    cx, cy = size / 2 + spec.dx, size / 2 + spec.dy
    r = spec.scale * size / 2
    if spec.shape in ("circle", "ring"):
        cv2.circle(mask, (round(cx), round(cy)), round(r), 255, -1, cv2.LINE_AA)
        if spec.shape == "ring":
            cv2.circle(mask, (round(cx), round(cy)), round(r * 0.55), 0, -1, cv2.LINE_AA)
    else:
        cv2.fillPoly(mask, [shape_points(spec.shape, cx, cy, r, spec.angle)], 255, cv2.LINE_AA)
    return mask


@lru_cache(maxsize=64)
def pattern_layer(pattern: str, size: int) -> np.ndarray:
    """Return the read-only ``uint8`` mask (255 on strokes) of a pattern, before clipping."""
    layer = np.zeros((size, size), np.uint8)
    step = max(8, size // 8)
    if pattern == "hstripes":
        layer[(np.arange(size) // (step // 2)) % 2 == 1, :] = 255
    elif pattern == "vstripes":
        layer[:, (np.arange(size) // (step // 2)) % 2 == 1] = 255
    elif pattern == "diagonal":
        yy, xx = np.mgrid[0:size, 0:size]
        layer[((xx + yy) // (step // 2)) % 2 == 1] = 255
    elif pattern == "dots":
        for y in range(step // 2, size, step):
            for x in range(step // 2, size, step):
                cv2.circle(layer, (x, y), step // 4, 255, -1, cv2.LINE_AA)
    elif pattern == "cross":
        c = size // 2
        w = size // 10
        layer[c - w:c + w, :] = 255
        layer[:, c - w:c + w] = 255
    elif pattern == "half":
        layer[size // 2:, :] = 255
    elif pattern == "chevron":
        pts = np.array([[0, size // 3], [size // 2, 2 * size // 3], [size, size // 3]], np.int32)
        cv2.polylines(layer, [pts.reshape(-1, 1, 2)], False, 255, size // 9, cv2.LINE_AA)
    layer.setflags(write=False)
    return layer


def paint(canvas: np.ndarray, mask: np.ndarray, colour: str) -> None:
    """Paint ``colour`` onto ``canvas`` (in place) where ``mask`` is at least half on."""
    solid = np.empty_like(canvas)
    size = canvas.shape[0]
    cv2.rectangle(solid, (0, 0), (size, size), PALETTE[colour], -1)
    _, binary = cv2.threshold(mask, 127, 255, cv2.THRESH_BINARY)
    cv2.copyTo(solid, binary, canvas)


def draw_shape(canvas: np.ndarray, spec: LogoSpec) -> None:
    """Draw the logo's main shape (antialiased) onto ``canvas`` in place."""
    size = spec.size
    cx, cy = size / 2 + spec.dx, size / 2 + spec.dy
    r = spec.scale * size / 2
    colour = PALETTE[spec.shape_colour]
    if spec.shape in ("circle", "ring"):
        cv2.circle(canvas, (round(cx), round(cy)), round(r), colour, -1, cv2.LINE_AA)
        if spec.shape == "ring":
            cv2.circle(canvas, (round(cx), round(cy)), round(r * 0.55), PALETTE[spec.background],
                       -1, cv2.LINE_AA)
    else:
        cv2.fillPoly(canvas, [shape_points(spec.shape, cx, cy, r, spec.angle)], colour,
                     cv2.LINE_AA)


def render_logo(spec: LogoSpec) -> np.ndarray:
    """Draw ``spec`` and return a read-only ``uint8`` RGB image of ``spec.size``²."""
    size = spec.size
    canvas = np.empty((size, size, 3), np.uint8)
    cv2.rectangle(canvas, (0, 0), (size, size), PALETTE[spec.background], -1)
    if spec.frame:
        cv2.rectangle(canvas, (0, 0), (size - 1, size - 1), PALETTE[spec.frame_colour],
                      spec.frame * 2)
    if spec.corner != "none":
        c = size // 7
        x = c if spec.corner in ("tl", "bl") else size - c
        y = c if spec.corner in ("tl", "tr") else size - c
        cv2.circle(canvas, (x, y), c // 2 + 2, PALETTE[spec.corner_colour], -1, cv2.LINE_AA)
    draw_shape(canvas, spec)
    if spec.pattern != "none":
        paint(canvas, cv2.min(pattern_layer(spec.pattern, size), shape_mask(spec)),
              spec.pattern_colour)
    font = FONTS[spec.font]
    font_scale = size / 128 * (1.6 if len(spec.text) == 1 else 1.15)
    thickness = max(2, size // 40)
    (tw, th), _ = cv2.getTextSize(spec.text, font, font_scale, thickness)
    org = (round(size / 2 + spec.dx - tw / 2), round(size / 2 + spec.dy + th / 2))
    cv2.putText(canvas, spec.text, org, font, font_scale, PALETTE[spec.text_colour],
                thickness + 2, cv2.LINE_AA)
    cv2.putText(canvas, spec.text, org, font, font_scale, PALETTE[spec.background],
                max(1, thickness - 1), cv2.LINE_AA)
    canvas.setflags(write=False)
    return canvas


def to_gray_float(image: np.ndarray) -> np.ndarray:
    """Return a ``float32`` grayscale copy of a ``uint8`` RGB, RGBA or gray image."""
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[..., 0]
    if image.ndim == 3 and image.shape[2] == 4:
        image = image[..., :3]
    if image.ndim == 3:
        image = cv2.cvtColor(np.ascontiguousarray(image), cv2.COLOR_RGB2GRAY)
    return image.astype(np.float32)


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Return ``matrix`` with each row shifted to zero mean and scaled to unit norm."""
    centred = matrix - matrix.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(centred, axis=1, keepdims=True)
    return centred / np.maximum(norms, 1e-6)


def descriptor(gray: np.ndarray, size: int = DESCRIPTOR_SIZE) -> np.ndarray:
    """Return the unit-norm, zero-mean ``size``² descriptor of a grayscale image."""
    small = cv2.resize(gray, (size, size), interpolation=cv2.INTER_AREA)
    return normalize_rows(small.reshape(1, -1))[0]


COARSE_SIZE = 16
WINDOW_FRACTIONS: tuple[float, ...] = (1.0, 0.9, 0.8, 0.7, 0.6)
WINDOW_POSITIONS = 5
REFINE_SCALES: tuple[float, ...] = (0.94, 0.97, 1.0, 1.03, 1.06)
REFINE_SHIFTS: tuple[float, ...] = (-0.5, -0.25, 0.0, 0.25, 0.5)
MATCH_CANDIDATES = 48
MATCH_REFINE = 4

Window = tuple[float, float, float]
"""A square window ``(x, y, side)`` in pixels of the reduced query image."""


def reduced_query(image: np.ndarray) -> np.ndarray:
    """Return the query as ``float32`` gray with its short side reduced to ~4 × descriptor size."""
    gray = to_gray_float(image)
    h, w = gray.shape
    target = 4 * DESCRIPTOR_SIZE
    if min(h, w) > target:
        f = target / min(h, w)
        gray = cv2.resize(gray, (max(1, round(w * f)), max(1, round(h * f))),
                          interpolation=cv2.INTER_AREA)
    return gray


def coarse_windows(shape: tuple[int, ...]) -> list[list[Window]]:
    """Return square windows of 60–100 % of the short side on a 5×5 grid, grouped by size."""
    h, w = shape[:2]
    short = min(h, w)
    groups = []
    for frac in WINDOW_FRACTIONS:
        side = max(1.0, short * frac)
        groups.append([(float(x), float(y), side)
                       for y in np.linspace(0, h - side, WINDOW_POSITIONS)
                       for x in np.linspace(0, w - side, WINDOW_POSITIONS)])
    return groups


def refined_windows(window: Window, shape: tuple[int, ...], spread: float = 1.0
                    ) -> list[list[Window]]:
    """Return windows around ``window`` (±6 % size, ± 5 % shift, times ``spread``), by size."""
    h, w = shape[:2]
    x0, y0, side0 = window
    step = max(0.5, min(h, w) * 0.1 * spread)
    cx, cy = x0 + side0 / 2, y0 + side0 / 2
    groups = []
    for f in REFINE_SCALES:
        side = min(side0 * (1.0 + (f - 1.0) * spread), float(min(h, w)))
        groups.append([(min(max(cx - side / 2 + dx * step, 0.0), w - side),
                        min(max(cy - side / 2 + dy * step, 0.0), h - side), side)
                       for dy in REFINE_SHIFTS for dx in REFINE_SHIFTS])
    return groups


def window_descriptors(gray: np.ndarray, groups: list[list[Window]], size: int) -> np.ndarray:
    """Return the ``size``² descriptors of square windows (all windows of a group share a size).

    Each group costs one resize of the whole image (so that its windows become ``size`` pixels)
    and a strided gather; no per-window resampling.
    """
    h, w = gray.shape
    rows = []
    for group in groups:
        f = size / group[0][2]
        sw, sh = max(size, round(w * f)), max(size, round(h * f))
        scaled = cv2.resize(gray, (sw, sh), interpolation=cv2.INTER_AREA if f < 1
                            else cv2.INTER_LINEAR)
        views = np.lib.stride_tricks.sliding_window_view(scaled, (size, size))
        xs = np.clip(np.round(np.array([g[0] for g in group]) * f).astype(int), 0, sw - size)
        ys = np.clip(np.round(np.array([g[1] for g in group]) * f).astype(int), 0, sh - size)
        rows.append(views[ys, xs].reshape(len(group), -1))
    return normalize_rows(np.concatenate(rows).astype(np.float32))


def match_logos(image: np.ndarray, coarse_matrix: np.ndarray, fine_matrix: np.ndarray
                ) -> tuple[np.ndarray, np.ndarray]:
    """Match a query image against every logo; return ``(logo indices, scores)``, best first.

    Coarse stage: 125 square windows (5 sizes × 5×5 positions) at ``COARSE_SIZE``² against every
    logo, as one matrix product; it keeps the ``MATCH_CANDIDATES`` best logos. Fine stage: the
    coarse windows plus 125 finer windows around each of the ``MATCH_REFINE`` best ones, at
    ``DESCRIPTOR_SIZE``², against the candidates only. Scores are normalized correlations.
    """
    gray = reduced_query(image)
    coarse = coarse_windows(gray.shape)
    per_window = window_descriptors(gray, coarse, COARSE_SIZE) @ coarse_matrix.T
    top = np.argsort(-per_window.max(axis=0), kind="stable")[:MATCH_CANDIDATES]
    candidates = fine_matrix[top].T
    windows = [w for g in coarse for w in g]
    per_window = window_descriptors(gray, coarse, DESCRIPTOR_SIZE) @ candidates
    scores = per_window.max(axis=0)
    for spread, keep in ((1.0, MATCH_REFINE),):
        best = np.argsort(-per_window.max(axis=1), kind="stable")[:keep]
        groups = [g for i in best for g in refined_windows(windows[int(i)], gray.shape, spread)]
        windows = [w for g in groups for w in g]
        per_window = window_descriptors(gray, groups, DESCRIPTOR_SIZE) @ candidates
        scores = np.maximum(scores, per_window.max(axis=0))
    order = np.argsort(-scores, kind="stable")
    return top[order], scores[order]
