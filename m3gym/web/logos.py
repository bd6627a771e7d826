"""Procedural logos and emblems (OpenCV drawing).

A :class:`LogoSpec` is a small, hashable recipe (colours, shape, pattern, initials, ...). Specs are
drawn with the world's rng; :func:`render_logo` turns one into a ``uint8`` RGB image. Near-duplicate
entities get :func:`logo_variant` specs: the same design with one large element changed, so that a
sloppy crop may match the wrong logo while a faithful one matches exactly.

The descriptors and the matching of reverse image search live in :mod:`m3gym.web.logo_search`;
this module re-exports the names its readers import (:class:`LogoIndex`, :func:`match_logos`, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import lru_cache

import cv2
import numpy as np

from m3gym.web.logo_search import (
    DESCRIPTOR_SIZE,
    LogoIndex,
    build_logo_index,
    logo_descriptors,
    match_logos,
)
from m3gym.web.names import pick

__all__ = [
    "CORNERS", "DESCRIPTOR_SIZE", "FONTS", "KIT_COLOURS", "LOGO_SIZE", "PALETTE", "PATTERNS",
    "SHAPES", "LogoIndex", "LogoSpec", "build_logo_index", "contrasting", "draw_shape",
    "logo_descriptors", "logo_variant", "luminance", "match_logos", "paint", "pattern_layer",
    "random_logo_spec", "render_logo", "shape_mask", "shape_points",
]


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
FONTS: tuple[str, ...] = ("sans-bold", "serif-bold", "condensed-bold", "mono-bold")
"""TrueType faces of the initials (``LogoSpec.font`` indexes them; no Hershey faces since v4)."""
LOGO_SIZE = 128


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


def _blend(canvas: np.ndarray, alpha: np.ndarray, colour: str) -> None:
    """Blend ``colour`` into ``canvas`` (in place) with ``uint8`` coverage ``alpha``."""
    a = alpha.astype(np.float32)[..., None] * np.float32(1.0 / 255.0)
    solid = np.asarray(PALETTE[colour], np.float32)
    canvas[:] = (canvas * (1.0 - a) + solid * a + 0.5).astype(np.uint8)


def _draw_initials(canvas: np.ndarray, spec: LogoSpec) -> None:
    """Draw ``spec.text`` centred (plus the offset) in ``FONTS[spec.font]`` (in place).

    Letters filled with the background colour inside a rim of the text colour.
    """
    from m3gym.typeface import render_text

    size = spec.size
    glyph = size / 128 * (35.0 if len(spec.text) == 1 else 25.0)
    patch = render_text(spec.text, glyph, FONTS[spec.font])
    rim = max(1, size // 80) + 1
    ph, pw = patch.alpha.shape
    inner = np.zeros((size, size), np.uint8)
    x0 = round(size / 2 + spec.dx - pw / 2)
    y0 = round(size / 2 + spec.dy - ph / 2)
    cx0, cy0 = max(0, x0), max(0, y0)
    cx1, cy1 = min(size, x0 + pw), min(size, y0 + ph)
    if cx1 <= cx0 or cy1 <= cy0:
        return
    inner[cy0:cy1, cx0:cx1] = patch.alpha[cy0 - y0:cy1 - y0, cx0 - x0:cx1 - x0]
    disk = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * rim + 1, 2 * rim + 1))
    _blend(canvas, cv2.dilate(inner, disk), spec.text_colour)
    _blend(canvas, inner, spec.background)


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
    _draw_initials(canvas, spec)
    canvas.setflags(write=False)
    return canvas
