"""Flat documents (receipts, report pages with charts) and how they are photographed.

A :class:`Sheet` is a flat page drawn with TrueType text (:func:`put_text`) and OpenCV
primitives; every piece of text it holds can be *marked* under a key, which keeps its exact ink
mask in sheet coordinates. :func:`photograph` then places the sheet in a scene through a
homography (a quadrilateral, e.g. from :func:`sheet_quad`) and returns the composited scene, a
clean composite (the same scene with the sheet's undegraded, full-contrast ink) and, per marked
key, the warped ink mask: everything a family needs to build exact evidence of text that was
photographed at an angle.

Fading (thermal paper, a light data label) is linear towards the paper colour, so the clean
render is the same drawing at full contrast: :meth:`Sheet.faded` of a sheet drawn once.
Everything is deterministic given the ``np.random.Generator`` passed in.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

import cv2
import numpy as np

from m3gym.tasks import render as R

Box = tuple[int, int, int, int]
Color = tuple[int, int, int]


@dataclass
class Sheet:
    """A flat page: RGB pixels on a uniform ``paper`` colour, and marked ink per key.

    ``marks[key]`` is a list of placed texts (box + mask in sheet pixels) that together form one
    piece of evidence; ``glyphs[key]`` their glyph heights.
    """

    rgb: np.ndarray
    paper: Color
    marks: dict[str, list[R.PlacedText]] = field(default_factory=dict)

    @classmethod
    def blank(cls, width: int, height: int, paper: Color) -> Sheet:
        """Return an empty sheet of ``width x height`` pixels in ``paper`` colour."""
        return cls(R.solid_image(height, width, paper), paper)

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` of the sheet."""
        return int(self.rgb.shape[1]), int(self.rgb.shape[0])

    def mark(self, key: str, placed: R.PlacedText) -> R.PlacedText:
        """Record ``placed`` as (part of) the evidence ``key``; return it."""
        self.marks.setdefault(key, []).append(placed)
        return placed

    def mark_box(self, key: str) -> Box:
        """Return the union box of the texts marked under ``key``."""
        boxes = [p.box for p in self.marks[key]]
        return (min(b[0] for b in boxes), min(b[1] for b in boxes), max(b[2] for b in boxes),
                max(b[3] for b in boxes))

    def mark_mask(self, key: str) -> np.ndarray:
        """Return the ``uint8`` (0/255) ink mask of ``key`` over the whole sheet."""
        w, h = self.size
        out = np.zeros((h, w), np.uint8)
        for p in self.marks[key]:
            x0, y0, x1, y1 = p.box
            out[y0:y1, x0:x1][p.mask] = 255
        return out

    def faded(self, keep: float) -> np.ndarray:
        """Return the sheet's pixels with every ink faded to ``keep`` of its contrast (0..1)."""
        paper = np.asarray(self.paper, np.float32)
        out = paper + (self.rgb.astype(np.float32) - paper) * np.float32(keep)
        return (out + 0.5).astype(np.uint8)


def put_text(img: np.ndarray, text: str, glyph: float, x: float, y: float, color: Color,
             font: str = "sans", anchor: str = "left") -> R.PlacedText:
    """Draw ``text`` (TrueType ``font``, capital height ``glyph`` px) and return its placement.

    ``(x, y)`` is the top of the ink box at its ``anchor`` (``left``, ``right`` or ``center``).
    """
    patch = R.truetype_text(text, glyph, font)
    w, _ = patch.size
    left = {"left": x, "right": x - w, "center": x - w / 2.0}[anchor]
    return R.paste_text(img, patch, int(round(left)), int(round(y)), color)


def text_width(text: str, glyph: float, font: str = "sans") -> int:
    """Return the ink width, in pixels, ``text`` has when drawn by :func:`put_text`."""
    return R.truetype_text(text, glyph, font).size[0]


# --------------------------------------------------------------------------------------------
# placing a sheet in a photo


def sheet_quad(rng: np.random.Generator, sheet_size: tuple[int, int], scale: float,
               center: tuple[float, float], angle_deg: float, strength: float) -> np.ndarray:
    """Return the ``(4, 2)`` scene corners (tl, tr, br, bl) of a photographed sheet.

    The sheet is scaled by ``scale``, turned ``angle_deg`` counter-clockwise about ``center``,
    then each corner moves by up to ``strength`` of the shorter scaled side (a perspective).
    """
    w, h = sheet_size[0] * scale, sheet_size[1] * scale
    pts = np.array([[-w / 2, -h / 2], [w / 2, -h / 2], [w / 2, h / 2], [-w / 2, h / 2]])
    a = math.radians(angle_deg)
    rot = np.array([[math.cos(a), math.sin(a)], [-math.sin(a), math.cos(a)]])
    pts = pts @ rot.T + np.asarray(center, float)
    jitter = rng.uniform(-1.0, 1.0, size=(4, 2)) * strength * min(w, h)
    return (pts + jitter).astype(np.float64)


def sheet_homography(sheet_size: tuple[int, int], quad: np.ndarray) -> np.ndarray:
    """Return the 3x3 homography taking sheet pixel-edge coordinates onto ``quad``."""
    w, h = sheet_size
    src = np.array([[0, 0], [w, 0], [w, h], [0, h]], np.float32)
    return cv2.getPerspectiveTransform(src, np.asarray(quad, np.float32))


COVER_MARGIN: float = 3.0
"""Sheet pixels :func:`covered_box` keeps from the sheet's edges: a warp's bilinear taps reach
one pixel and its 1/32-px grid rounds by 1/64 px, so every tap of a pixel it names is on the
sheet."""


def covered_box(sheet_size: tuple[int, int], quad: np.ndarray, width: int, height: int) -> Box:
    """Return a pixel box of a ``width x height`` scene that the sheet at ``quad`` covers wholly.

    The sheet's rectangle shrunk by :data:`COVER_MARGIN` maps onto a quad inside ``quad``; the
    box is the part of that quad's axis-aligned bounds that lies inside it (a quad whose
    corners keep their order, tl, tr, br, bl, as :func:`sheet_quad`'s turned well under 45
    degrees), clipped to the scene. There :func:`photograph` shows the sheet alone, whatever
    the background (``(0, 0, 0, 0)`` when there is no such box).
    """
    w, h = sheet_size
    m = COVER_MARGIN
    tl, tr, br, bl = map_points(sheet_homography(sheet_size, quad),
                                [[m, m], [w - m, m], [w - m, h - m], [m, h - m]])
    x0, x1 = max(0, math.ceil(max(tl[0], bl[0]))), min(width, math.floor(min(tr[0], br[0])))
    y0, y1 = max(0, math.ceil(max(tl[1], tr[1]))), min(height, math.floor(min(bl[1], br[1])))
    return (x0, y0, x1, y1) if x1 > x0 and y1 > y0 else (0, 0, 0, 0)


def map_points(hom: np.ndarray, pts: Sequence[Sequence[float]]) -> np.ndarray:
    """Return ``pts`` (sheet coordinates) mapped through ``hom`` into the scene."""
    arr = np.asarray(pts, np.float64).reshape(-1, 1, 2)
    return cv2.perspectiveTransform(arr, hom).reshape(-1, 2)


def _warp(src: np.ndarray, hom: np.ndarray, size: tuple[int, int]) -> np.ndarray:
    """Warp ``src`` by ``hom`` (pixel-edge coordinates) into a ``size`` canvas (bilinear)."""
    # OpenCV maps pixel centres: conjugate the edge-coordinate homography by a half-pixel shift
    shift = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.0, 0.0, 1.0]])
    centred = np.linalg.inv(shift) @ hom @ shift
    return R.warp_perspective(src, centred, size)


def _warp_with_cover(rgb: np.ndarray, hom: np.ndarray, size: tuple[int, int]
                     ) -> tuple[np.ndarray, np.ndarray]:
    """Return :func:`_warp` of an RGB ``uint8`` sheet and of its coverage (255 on the sheet).

    One four-channel warp of the sheet with an opaque alpha gives both, each channel byte for
    byte its own warp (see :func:`~m3gym.tasks.render.util.warp_perspective`).
    """
    both = _warp(cv2.cvtColor(rgb, cv2.COLOR_RGB2RGBA), hom, size)
    return cv2.cvtColor(both, cv2.COLOR_RGBA2RGB), cv2.extractChannel(both, 3)


def _warp_planes(planes: list[np.ndarray], hom: np.ndarray, size: tuple[int, int]
                 ) -> list[np.ndarray]:
    """Return :func:`_warp` of each 2-D ``uint8`` plane (same size), four per warp.

    Planes are stacked four at a time (a group short of four padded with zeros) and warped
    in one four-channel call, which gives each plane's own warp byte for byte (see
    :func:`~m3gym.tasks.render.util.warp_perspective`); a lone plane is warped as it is.
    """
    out: list[np.ndarray] = []
    for i in range(0, len(planes), 4):
        group = planes[i:i + 4]
        if len(group) == 1:
            out.append(_warp(group[0], hom, size))
            continue
        stacked = _warp(cv2.merge(group + [np.zeros_like(group[0])] * (4 - len(group))), hom,
                        size)
        out += [cv2.extractChannel(stacked, j) for j in range(len(group))]
    return out


@dataclass(frozen=True)
class Photo:
    """A sheet composited into a scene.

    ``scene`` has the sheet's actual (possibly faded) pixels, ``clean`` the full-contrast ones
    (both before any photometric degradation); ``masks[key]`` is the warped ink of each marked
    key (``bool``, scene-sized); ``hom`` the sheet → scene homography; ``box`` the sheet's
    bounding box in the scene.
    """

    scene: np.ndarray
    clean: np.ndarray
    masks: dict[str, np.ndarray]
    hom: np.ndarray
    box: Box


def photograph(background: np.ndarray, sheet: Sheet, quad: np.ndarray,
               sheet_pixels: np.ndarray | None = None) -> Photo:
    """Composite ``sheet`` onto ``background`` through ``quad``; see :class:`Photo`.

    ``sheet_pixels`` are the pixels actually shown (default: the sheet's own, e.g. pass
    :meth:`Sheet.faded`); the clean composite always uses the sheet's full-contrast pixels.
    """
    hh, ww = background.shape[:2]
    hom = sheet_homography(sheet.size, quad)
    w, h = sheet.size
    if (hh, ww) == (h, w) and warps_as_identity(hom, w, h):
        return _flat_photo(sheet, sheet_pixels, hom)
    corners = map_points(hom, [[0, 0], [w, 0], [w, h], [0, h]])
    box = (max(0, int(corners[:, 0].min()) - 1), max(0, int(corners[:, 1].min()) - 1),
           min(ww, int(math.ceil(corners[:, 0].max())) + 1),
           min(hh, int(math.ceil(corners[:, 1].max())) + 1))
    x0, y0, x1, y1 = box
    # warp into the sheet's bounding box only (the rest of the scene is the background)
    local = np.array([[1.0, 0.0, -x0], [0.0, 1.0, -y0], [0.0, 0.0, 1.0]]) @ hom
    size = (x1 - x0, y1 - y0)
    shown = sheet.rgb if sheet_pixels is None else sheet_pixels
    warped_shown, cover = _warp_with_cover(shown, local, size)
    # where the sheet covers the pixel wholly, its warped pixels as they are; where not at all,
    # the background; on its anti-aliased border (a thin line), the two blended
    off = (cover == 0).view(np.uint8)  # a 0/1 copy mask (cv2.copyTo: no broadcast over RGB)
    edge = _nonzero_yx(cv2.inRange(cover, 1, 254))
    a = cover[edge].astype(np.float32)[:, None] * np.float32(1.0 / 255.0)
    base = background[y0:y1, x0:x1][edge].astype(np.float32)

    def composite(warped: np.ndarray) -> np.ndarray:
        out = background.copy()
        region = out[y0:y1, x0:x1]
        cv2.copyTo(region, off, warped)  # in place: the background where the sheet is absent
        # the warp fades the sheet's border into black; divide it out where the sheet covers
        sheet_part = warped[edge].astype(np.float32) / np.maximum(a, np.float32(1e-3))
        warped[edge] = np.clip(base * (1 - a) + sheet_part * a + 0.5, 0, 255).astype(np.uint8)
        region[...] = warped
        return out

    scene = composite(warped_shown)
    clean = scene if sheet_pixels is None else composite(_warp(sheet.rgb, local, size))
    keys = list(sheet.marks)
    warped_marks = _warp_planes([sheet.mark_mask(k) for k in keys], local, size)
    masks = {}
    for k, mark in zip(keys, warped_marks):
        full = np.zeros((hh, ww), bool)
        full[y0:y1, x0:x1] = mark >= 128
        masks[k] = full
    return Photo(scene, clean, masks, hom, box)


IDENTITY_TOLERANCE: float = 1e-12
"""Largest entry-wise distance from the identity at which :func:`warps_as_identity` holds."""

IDENTITY_MAX_SIDES: int = 20_000
"""Largest ``width + height`` for which :func:`warps_as_identity` can hold."""


def warps_as_identity(hom: np.ndarray, width: int, height: int) -> bool:
    """Return whether :func:`_warp` by ``hom`` copies a ``width x height`` image pixel for pixel.

    ``cv2.getPerspectiveTransform`` of a sheet onto its own rectangle gives the identity up to
    rounding (at most 2.3e-16 for pages 2000-3500 px wide). OpenCV's warp samples at the mapped
    coordinate rounded to 1/32 px. With every entry within ``e`` = :data:`IDENTITY_TOLERANCE`
    of the identity, the mapped coordinate of pixel ``(x, y)`` is off by at most about
    ``32 * 3e * s * (1 + s)`` steps, ``s = width + height`` (the numerator's error plus the
    denominator's, which scales a coordinate up to ``s``): under 0.04 step at
    :data:`IDENTITY_MAX_SIDES`, far from the half step that would round it off the pixel itself.
    So every output pixel is its source pixel, with weight one.
    """
    if width + height > IDENTITY_MAX_SIDES:
        return False
    return bool(np.abs(np.asarray(hom, np.float64) - np.eye(3)).max() <= IDENTITY_TOLERANCE)


def _flat_photo(sheet: Sheet, sheet_pixels: np.ndarray | None, hom: np.ndarray) -> Photo:
    """Return :func:`photograph`'s result for a sheet that fills its background exactly.

    Each warp is then a copy (:func:`warps_as_identity`): the scene is the shown pixels, the
    clean composite the sheet's, each mask the marked ink; no warp is run.
    """
    w, h = sheet.size
    scene = np.array(sheet.rgb if sheet_pixels is None else sheet_pixels, np.uint8, copy=True)
    clean = scene if sheet_pixels is None else sheet.rgb.copy()
    masks = {k: sheet.mark_mask(k) >= 128 for k in sheet.marks}
    return Photo(scene, clean, masks, hom, (0, 0, w, h))


def _nonzero_yx(mask: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Return ``np.nonzero(mask)`` of a 2-D ``uint8`` mask (rows, cols; row-major order).

    ``cv2.findNonZero`` scans the mask several times faster than numpy.
    """
    pts = cv2.findNonZero(mask)
    if pts is None:
        empty = np.zeros(0, np.intp)
        return empty, empty.copy()
    yx = pts.reshape(-1, 2)
    return yx[:, 1].astype(np.intp), yx[:, 0].astype(np.intp)


def mapped_box(hom: np.ndarray, box: Sequence[float], width: int, height: int,
               pad: float = 0.0) -> Box:
    """Return the integer scene box covering sheet ``box`` (grown by ``pad`` sheet px) mapped."""
    x0, y0, x1, y1 = box
    pts = map_points(hom, [[x0 - pad, y0 - pad], [x1 + pad, y0 - pad], [x1 + pad, y1 + pad],
                           [x0 - pad, y1 + pad]])
    return (max(0, int(math.floor(pts[:, 0].min()))), max(0, int(math.floor(pts[:, 1].min()))),
            min(width, int(math.ceil(pts[:, 0].max()))),
            min(height, int(math.ceil(pts[:, 1].max()))))


def mapped_glyph(hom: np.ndarray, placed: Iterable[R.PlacedText]) -> float:
    """Return the smallest scene height of the glyphs of ``placed`` (sheet → scene lengths).

    The capital height is measured along the sheet's vertical at each text's two ends, where a
    perspective shrinks it most; the length is taken whatever its direction (a sideways sheet).
    """
    out = math.inf
    for p in placed:
        x0, y0, x1, _ = p.box
        g = p.glyph_height
        for x in (x0, x1):
            a, b = map_points(hom, [[x, y0], [x, y0 + g]])
            out = min(out, float(np.hypot(*(b - a))))
    return out


def curl_shading(img: np.ndarray, box: Box, strength: float, vertical: bool = False
                 ) -> np.ndarray:
    """Return ``img`` with a brightness dip towards two edges of ``box`` (curled paper).

    The ramp runs across the box's width (its height with ``vertical``); ``strength`` in
    ``[0, 0.3]`` is the darkening at the edges. Smooth, so it keeps the ink's fine detail.
    """
    x0, y0, x1, y1 = box
    n = (y1 - y0) if vertical else (x1 - x0)
    if n <= 1 or strength <= 0:
        return img
    t = np.linspace(0.0, 1.0, n, dtype=np.float32)
    ramp = 1.0 - np.float32(strength) * (1.0 - np.sin(np.pi * t)) ** 2
    out = img.copy()
    region = out[y0:y1, x0:x1].astype(np.float32)
    region *= ramp[:, None, None] if vertical else ramp[None, :, None]
    out[y0:y1, x0:x1] = np.clip(region + 0.5, 0, 255).astype(np.uint8)
    return out


# --------------------------------------------------------------------------------------------
# things on the table


def _radial(size: int, inner: Color, outer: Color) -> np.ndarray:
    """Return a ``size x size`` RGB disc shading from ``inner`` (centre) to ``outer`` (rim)."""
    yy, xx = np.mgrid[0:size, 0:size].astype(np.float32)
    c = (size - 1) / 2.0
    t = np.clip(np.hypot(xx - c * 0.8, yy - c * 0.8) / (size * 0.6), 0.0, 1.0)[..., None]
    return (np.asarray(inner, np.float32) * (1 - t) + np.asarray(outer, np.float32) * t)


def _paste_disc(img: np.ndarray, x: int, y: int, disc: np.ndarray) -> Box:
    """Composite a shaded disc (anti-aliased edge) with its top-left at ``(x, y)``."""
    size = disc.shape[0]
    h, w = img.shape[:2]
    if x < 0 or y < 0 or x + size > w or y + size > h:
        return (x, y, x, y)
    cover = np.zeros((size * 4, size * 4), np.uint8)
    cv2.circle(cover, (size * 2, size * 2), size * 2 - 4, 255, -1, cv2.LINE_AA)
    a = cv2.resize(cover, (size, size), interpolation=cv2.INTER_AREA).astype(np.float32)[..., None]
    a /= 255.0
    region = img[y:y + size, x:x + size].astype(np.float32)
    img[y:y + size, x:x + size] = np.clip(region * (1 - a) + disc * a + 0.5, 0, 255).astype(
        np.uint8)
    return (x, y, x + size, y + size)


def desk_props(img: np.ndarray, rng: np.random.Generator, avoid: Sequence[Sequence[float]],
               count: int) -> list[Box]:
    """Draw ``count`` shaded things lying on a table (coins, a mug seen from above, a pen).

    Each is placed away from the ``avoid`` boxes; returns the boxes drawn (in place).
    """
    h, w = img.shape[:2]
    placed: list[Box] = []
    occupied = list(avoid)
    for _ in range(count):
        kind = ("coin", "coin", "mug", "pen")[int(rng.integers(4))]
        if kind == "coin":
            size = int(rng.integers(38, 64))
            metal = ((214, 184, 110), (150, 118, 60)) if rng.random() < 0.5 else (
                (222, 222, 218), (128, 128, 126))
            spot = R.find_free_spot(rng, (size, size), (0, 0, w, h), occupied, margin=8,
                                    tries=20)
            if spot is None:
                continue
            disc = _radial(size, *metal)
            box = _paste_disc(img, spot[0], spot[1], disc)
            c = size // 2
            cv2.circle(img, (spot[0] + c, spot[1] + c), int(c * 0.78), metal[1], 1, cv2.LINE_AA)
        elif kind == "mug":
            size = int(rng.integers(170, 250))
            spot = R.find_free_spot(rng, (size, size), (0, 0, w, h), occupied, margin=10,
                                    tries=20)
            if spot is None:
                continue
            body = R.jitter_color(rng, (236, 232, 226), 14)
            box = _paste_disc(img, spot[0], spot[1], _radial(size, body, tuple(
                int(v * 0.7) for v in body)))
            inner = int(size * 0.8)
            off = (size - inner) // 2
            _paste_disc(img, spot[0] + off, spot[1] + off,
                        _radial(inner, (92, 58, 34), (40, 24, 14)))
        else:
            length = int(rng.integers(260, 380))
            thick = int(rng.integers(12, 18))
            spot = R.find_free_spot(rng, (length, length // 3), (0, 0, w, h), occupied,
                                    margin=8, tries=20)
            if spot is None:
                continue
            x, y = spot
            y1 = y + int(rng.integers(0, length // 3))
            col = R.jitter_color(rng, ((30, 50, 120), (25, 25, 28), (170, 30, 30))[
                int(rng.integers(3))], 12)
            cv2.line(img, (x, y1), (x + length, y + length // 6), col, thick, cv2.LINE_AA)
            hi = tuple(min(255, int(v) + 70) for v in col)
            cv2.line(img, (x + 4, y1 - thick // 4), (x + length - 4, y + length // 6 - thick // 4),
                     hi, max(1, thick // 5), cv2.LINE_AA)
            cv2.line(img, (x + length, y + length // 6), (x + length + 22, y + length // 6 + 3),
                     (200, 190, 170), max(2, thick // 2), cv2.LINE_AA)
            box = (x, y, x + length + 24, y + length // 3)
        placed.append(box)
        occupied.append(box)
    return placed


# --------------------------------------------------------------------------------------------
# charts

CHART_PALETTE: tuple[Color, ...] = (
    (31, 119, 180), (255, 127, 14), (44, 160, 44), (214, 39, 40), (148, 103, 189),
    (140, 86, 75), (23, 190, 207), (188, 189, 34),
)
"""Series colours of a chart (a familiar plotting-library palette), distinct at view size."""

AXIS_MAXIMA: tuple[int, ...] = (400, 500, 600, 800)
"""Round y-axis maxima a chart picks from: large enough that a value's decimals move its bar by
well under a pixel of the view (0.9 units of 400 over a ~100-px plot are 0.2 px), so the bar
height cannot tell a data label's look-alike decimals apart."""

TEXT_GRAY: Color = (60, 60, 64)
GRID_GRAY: Color = (222, 222, 226)
LABEL_GRAY: Color = (96, 96, 104)
"""Data labels are printed lighter than the axes, as plotting styles often do."""


@dataclass(frozen=True)
class BarChart:
    """What a drawn grouped bar chart holds, in sheet coordinates.

    ``values[series][category]`` in units of the last printed decimal, the axis maximum, the
    placed texts keyed ``legend/<s>``, ``category/<c>`` and ``label/<s>/<c>`` (legend names,
    category names, data labels), the bar boxes keyed ``<s>/<c>`` and the chart's box.
    """

    values: tuple[tuple[int, ...], ...]
    axis_max: int
    texts: dict[str, R.PlacedText]
    bars: dict[str, Box]
    box: Box


def chart_width(n_series: int, n_categories: int, glyph: float, max_label: str) -> int:
    """Return the plot width a grouped bar chart needs so no two data labels touch."""
    label = text_width(max_label, glyph) + max(4, int(glyph * 0.5))
    return n_categories * (n_series * label + int(2.5 * glyph))


def draw_bar_chart(img: np.ndarray, box: Box, series: Sequence[str],
                   categories: Sequence[str], values: Sequence[Sequence[int]], axis_max: int,
                   glyph: float, legend_top: bool, decimals: int = 1) -> BarChart:
    """Draw a grouped bar chart with gridlines, tick labels, legend and data labels in ``box``.

    ``values`` are in units of ``10 ** -decimals`` of the axis unit and lie below ``axis_max``;
    the data labels print them with ``decimals`` decimals (1 or 2). Text is ``glyph`` px tall
    (sans); returns the :class:`BarChart`.
    """
    if decimals not in (1, 2):
        raise ValueError(f"decimals must be 1 or 2, got {decimals}")
    unit = 10 ** decimals
    x0, y0, x1, y1 = box
    texts: dict[str, R.PlacedText] = {}
    bars: dict[str, Box] = {}
    step = axis_max // (4 if axis_max % 4 == 0 and axis_max // 4 % 5 == 0 else 5)
    ticks = list(range(0, axis_max + 1, step))
    tick_w = max(text_width(str(t), glyph) for t in ticks)
    # legend: a row of swatch + name above the plot, or a column at its right
    sw = int(round(glyph * 1.1))
    top = y0
    right = x1
    if legend_top:
        x = x0 + tick_w + 12
        for i, name in enumerate(series):
            cv2.rectangle(img, (x, top), (x + sw - 1, top + sw - 1), CHART_PALETTE[i], -1)
            texts[f"legend/{i}"] = put_text(img, name, glyph, x + sw + 6, top + (sw - glyph) / 2,
                                            TEXT_GRAY)
            x = texts[f"legend/{i}"].box[2] + int(2 * glyph)
        top += int(3 * glyph)
    else:
        widest = max(text_width(n, glyph) for n in series)
        right = x1 - widest - sw - 18
        for i, name in enumerate(series):
            y = top + int(glyph * 2) + int(i * 2.0 * glyph)
            cv2.rectangle(img, (right + 12, y), (right + 12 + sw - 1, y + sw - 1),
                          CHART_PALETTE[i], -1)
            texts[f"legend/{i}"] = put_text(img, name, glyph, right + 18 + sw,
                                            y + (sw - glyph) / 2, TEXT_GRAY)
    px0, px1 = x0 + tick_w + 10, right
    py0, py1 = top + int(2.2 * glyph), y1 - int(2.6 * glyph)
    for t in ticks:
        y = py1 - (py1 - py0) * t / axis_max
        yi = int(round(y))
        cv2.line(img, (px0, yi), (px1, yi), GRID_GRAY if t else TEXT_GRAY, 1)
        put_text(img, str(t), glyph, px0 - 6, y - glyph / 2, TEXT_GRAY, anchor="right")
    cv2.line(img, (px0, py0 - int(glyph)), (px0, py1), TEXT_GRAY, 1)
    n_cat, n_ser = len(categories), len(series)
    group = (px1 - px0) / n_cat
    bar_w = (group - 2.0 * glyph) / n_ser
    for c, cat in enumerate(categories):
        gx = px0 + group * c + glyph
        texts[f"category/{c}"] = put_text(img, cat, glyph, px0 + group * (c + 0.5),
                                          py1 + 0.8 * glyph, TEXT_GRAY, anchor="center")
        for s in range(n_ser):
            v = values[s][c]
            bx0 = int(round(gx + s * bar_w))
            bx1 = int(round(gx + (s + 1) * bar_w)) - 2
            by0 = int(round(py1 - (py1 - py0) * v / (unit * axis_max)))
            col = CHART_PALETTE[s]
            cv2.rectangle(img, (bx0, by0), (bx1 - 1, py1 - 1), col, -1)
            edge = tuple(int(v * 0.75) for v in col)
            cv2.rectangle(img, (bx0, by0), (bx1 - 1, py1 - 1), edge, 1)
            bars[f"{s}/{c}"] = (bx0, by0, bx1, py1)
            label = f"{v // unit}.{v % unit:0{decimals}d}"
            texts[f"label/{s}/{c}"] = put_text(img, label, glyph, (bx0 + bx1) / 2,
                                               by0 - 0.6 * glyph - glyph, LABEL_GRAY,
                                               anchor="center")
    return BarChart(tuple(tuple(v) for v in values), axis_max, texts, bars, box)
