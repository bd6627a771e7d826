"""Image analysis for the heuristic agent: colour blobs, grid positions, orientation, boxes.

Everything works on what the agent sees (RGB ``uint8`` view images) with OpenCV whole-array ops.
Boxes are pixel ``(x0, y0, x1, y1)`` in the analysed image, exclusive ends.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

Box = tuple[int, int, int, int]

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
    """Return ``box`` grown by the margins and clipped to a ``w`` x ``h`` image."""
    return (max(0, int(box[0] - margin_x)), max(0, int(box[1] - margin_y)),
            min(w, int(np.ceil(box[2] + margin_x))), min(h, int(np.ceil(box[3] + margin_y))))


def to_bbox1000(box: Sequence[float], w: int, h: int) -> list[int]:
    """Return a pixel box of a ``w`` x ``h`` image on the tools' 0-1000 scale (outward)."""
    x0 = int(np.floor(box[0] * 1000 / w))
    y0 = int(np.floor(box[1] * 1000 / h))
    x1 = int(np.ceil(box[2] * 1000 / w))
    y1 = int(np.ceil(box[3] * 1000 / h))
    return [max(0, x0), max(0, y0), min(1000, max(x1, x0 + 1)), min(1000, max(y1, y0 + 1))]


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


def bright_region(rgb: np.ndarray, min_level: int = 200, min_fraction: float = 0.02
                  ) -> Box | None:
    """Return the box of the largest bright (paper-like) low-saturation region.

    ``None`` when there is none or it covers less than ``min_fraction`` of the image.
    """
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
    mask = ((hsv[..., 2] >= min_level) & (hsv[..., 1] <= 60)).astype(np.uint8) * 255
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((9, 9), np.uint8))
    n, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    if n <= 1:
        return None
    k = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    x, y, w, h, area = (int(v) for v in stats[k])
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


# --------------------------------------------------------------------------------------------
# dials: circle candidates, polar profiles, clock hands and gauge needles


@dataclass(frozen=True)
class Circle:
    """A circle found in an image: centre ``(x, y)``, radius (pixels) and a dial-likeness score."""

    x: float
    y: float
    r: float
    score: float = 0.0

    def box(self, margin: float = 0.0) -> tuple[float, float, float, float]:
        """Return the circle's bounding box grown by ``margin`` pixels (may leave the image)."""
        m = self.r + margin
        return self.x - m, self.y - m, self.x + m, self.y + m


def light_face_mask(rgb: np.ndarray, min_value: int = 165, max_sat: int = 90) -> np.ndarray:
    """Return a ``float32`` 0/1 mask of light, weakly saturated pixels (dial faces, plates)."""
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
    return ((hsv[..., 2] >= min_value) & (hsv[..., 1] <= max_sat)).astype(np.float32)


def _ring_mean(mask: np.ndarray, x: float, y: float, r0: float, r1: float) -> float:
    """Return the mean of ``mask`` over the annulus ``r0 <= d <= r1`` around ``(x, y)``."""
    h, w = mask.shape[:2]
    x0, y0 = max(0, int(x - r1 - 1)), max(0, int(y - r1 - 1))
    x1, y1 = min(w, int(x + r1 + 2)), min(h, int(y + r1 + 2))
    if x1 <= x0 or y1 <= y0:
        return 0.0
    yy, xx = np.mgrid[y0:y1, x0:x1]
    d = np.hypot(xx - x, yy - y)
    sel = (d >= r0) & (d <= r1)
    return float(mask[y0:y1, x0:x1][sel].mean()) if sel.any() else 0.0


def dial_candidates(rgb: np.ndarray, r_min: float, r_max: float, where: str | None = None,
                    limit: int = 80) -> list[Circle]:
    """Return circles of radius ``r_min..r_max`` that look like light dial faces, best first.

    Hough circles (a permissive accumulator threshold) are scored by how light the inside of
    the disk is against its surround, minus a penalty for lying outside the named grid cell.
    """
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    found = cv2.HoughCircles(gray, cv2.HOUGH_GRADIENT, dp=1, minDist=3, param1=60, param2=8,
                             minRadius=max(2, int(r_min)), maxRadius=int(np.ceil(r_max)))
    if found is None:
        return []
    light = light_face_mask(rgb)
    out = []
    for x, y, r in found[0][:limit].tolist():
        inner = _ring_mean(light, x, y, 0.0, 0.75 * r)
        outer = _ring_mean(light, x, y, 1.15 * r, 1.4 * r)
        dist = position_distance((x, y), rgb.shape, where)
        out.append(Circle(x, y, r, inner - 0.5 * outer - 2.0 * dist))
    out.sort(key=lambda c: -c.score)
    return out


def polar_samples(img: np.ndarray, x: float, y: float, radii: np.ndarray,
                  step_deg: float = 1.0) -> np.ndarray:
    """Return ``img`` sampled on a polar grid: rows = angle clockwise from 12 o'clock, cols = radii.

    Angle row ``k`` is ``k * step_deg`` degrees; 0 points up (image y decreases).
    """
    theta = np.deg2rad(np.arange(0.0, 360.0, step_deg, dtype=np.float32))[:, None]
    rr = np.asarray(radii, np.float32)[None, :]
    map_x = (x + rr * np.sin(theta)).astype(np.float32)
    map_y = (y - rr * np.cos(theta)).astype(np.float32)
    return cv2.remap(img, map_x, map_y, cv2.INTER_LINEAR, borderMode=cv2.BORDER_REPLICATE)


def circular_peak(profile: np.ndarray, step_deg: float = 1.0, half_window: int = 6) -> float:
    """Return the angle (degrees) of a circular profile's strongest peak.

    The peak is refined by the weighted circular mean of the window around it.
    """
    k = int(np.argmax(profile))
    n = profile.size
    idx = np.arange(k - half_window, k + half_window + 1) % n
    wts = np.clip(profile[idx] - 0.5 * profile[k], 0.0, None)
    ang = np.deg2rad(idx * step_deg)
    if wts.sum() <= 0:
        return float(k * step_deg)
    mean = np.arctan2((wts * np.sin(ang)).sum(), (wts * np.cos(ang)).sum())
    return float(np.rad2deg(mean) % 360.0)


def refine_circle(gray: np.ndarray, guess: Circle, search: float = 0.25) -> Circle:
    """Return the dial circle near ``guess`` in a zoomed crop (Hough on the crop, else guess)."""
    found = cv2.HoughCircles(cv2.medianBlur(gray, 5), cv2.HOUGH_GRADIENT, dp=1,
                             minDist=max(4, int(guess.r)), param1=80, param2=20,
                             minRadius=int(guess.r * (1 - search)),
                             maxRadius=int(guess.r * (1 + search)))
    if found is None:
        return guess
    best = min(found[0].tolist(), key=lambda c: np.hypot(c[0] - guess.x, c[1] - guess.y))
    if np.hypot(best[0] - guess.x, best[1] - guess.y) > search * guess.r:
        return guess
    return Circle(best[0], best[1], best[2], guess.score)


def tick_radius(gray: np.ndarray, dial: Circle, step_frac: float) -> Circle:
    """Return ``dial`` with its radius measured from the ring of scale ticks.

    Averaged over all directions, darkness jumps where the dense (minor) ticks start, at
    ``step_frac`` of the radius; the first radius whose mean darkness passes 60 % of the tick
    band's level marks it. The hands cover only a few directions and barely move the mean.
    """
    radii = np.linspace(0.4 * dial.r, 1.25 * dial.r, 86)
    dark = darkness(gray, dial, 0.3, 0.55)
    prof = polar_samples(dark, dial.x, dial.y, radii).mean(axis=0)
    band = float(prof.max())
    if band < 5.0:
        return dial
    k = int(np.argmax(prof >= 0.6 * band))
    return Circle(dial.x, dial.y, float(radii[k]) / step_frac, dial.score)


def tick_centre(gray: np.ndarray, dial: Circle) -> Circle:
    """Return ``dial`` re-centred on the centroid of its filled light face.

    The face is the light region connected to the centre (within 1.05 r of the guess); its
    holes (ticks, hands, marker) are filled, so the centroid is the disk's centre.
    """
    dark = darkness(gray, dial, 0.3, 0.55)
    light = (dark < 40.0).astype(np.uint8)
    h, w = gray.shape[:2]
    keep = np.zeros((h, w), np.uint8)
    cv2.circle(keep, (int(round(dial.x)), int(round(dial.y))), int(1.05 * dial.r), 1, -1)
    light &= keep
    n, labels, stats, cents = cv2.connectedComponentsWithStats(light, connectivity=4)
    if n <= 1:
        return dial
    k = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    face = (labels == k).astype(np.uint8) * 255
    contours, _ = cv2.findContours(face, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_NONE)
    if not contours:
        return dial
    hull = cv2.convexHull(max(contours, key=cv2.contourArea))
    m = cv2.moments(hull)
    if m["m00"] < 0.5 * np.pi * dial.r ** 2:
        return dial
    return Circle(m["m10"] / m["m00"], m["m01"] / m["m00"], dial.r, dial.score)


def tick_phase(gray: np.ndarray, dial: Circle, r0: float, r1: float,
               period: float = 30.0) -> float | None:
    """Return the phase (deg, ``0..period``) of the long major ticks seen in annulus r0..r1."""
    dark = darkness(gray, dial, 0.3, 0.55)
    prof = polar_samples(dark, dial.x, dial.y, np.linspace(r0 * dial.r, r1 * dial.r, 6),
                         step_deg=0.5).mean(axis=1)
    if float(prof.max()) < 10.0:
        return None
    n = int(round(period / 0.5))
    folded = prof.reshape(-1, n).mean(axis=0)  # every major tick lands on the same phase bin
    return float(np.argmax(folded)) * 0.5


def redness(rgb: np.ndarray) -> np.ndarray:
    """Return ``float32`` R - max(G, B) per pixel (how red it is; negative for non-red)."""
    f = rgb.astype(np.float32)
    return f[..., 0] - np.maximum(f[..., 1], f[..., 2])


def marker_angle(rgb: np.ndarray, dial: Circle) -> float | None:
    """Return the angle (deg clockwise from up) of the dial's red 12 o'clock marker, or None."""
    red = np.where(rgb[..., 0] >= 110, redness(rgb), 0.0).astype(np.float32)
    radii = np.linspace(0.62 * dial.r, 0.92 * dial.r, 16)
    prof = np.clip(polar_samples(red, dial.x, dial.y, radii) - 40.0, 0.0, None).mean(axis=1)
    if float(prof.max()) < 3.0:
        return None
    return circular_peak(cv2.GaussianBlur(prof[:, None], (1, 9), 0).ravel(), half_window=8)


def darkness(gray: np.ndarray, dial: Circle, r0: float = 0.25, r1: float = 0.6) -> np.ndarray:
    """Return ``float32`` darkness (face level minus gray, >= 0) relative to the dial's face.

    The face level is the 80th percentile of the annulus ``r0..r1`` (mostly bare face).
    """
    face = float(np.percentile(polar_samples(gray, dial.x, dial.y,
                                             np.linspace(r0 * dial.r, r1 * dial.r, 8)), 80))
    return np.clip(face - gray.astype(np.float32), 0.0, None)


def clock_hands(rgb: np.ndarray, dial: Circle) -> tuple[float, float] | None:
    """Return ``(hour_angle, minute_angle)`` in degrees clockwise from the dial's 12 o'clock.

    The minute hand alone crosses the annulus 0.59-0.67 r (the hour hand ends at 0.5 r, ticks
    start at 0.72 r): its darkest direction is the minute angle. The hour hand is the thicker
    hand: in the annulus 0.2-0.42 r the ink's distance transform (half the stroke width) peaks
    on it. Angles are measured from the red marker when it is found, else from image up.
    """
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    dark = darkness(gray, dial)
    if float(dark.max()) < 20.0:
        return None
    ink = (dark >= 0.45 * float(np.percentile(dark, 99.5))).astype(np.uint8)
    ink[redness(rgb) > 60] = 0  # the red marker is no hand
    radii_m = np.linspace(0.59 * dial.r, 0.67 * dial.r, 6)
    minute_prof = polar_samples(dark, dial.x, dial.y, radii_m).mean(axis=1)
    minute = circular_peak(minute_prof)
    dist = cv2.distanceTransform(ink, cv2.DIST_L2, 3)
    radii_h = np.linspace(0.2 * dial.r, 0.42 * dial.r, 10)
    hour_prof = polar_samples(dist, dial.x, dial.y, radii_h).mean(axis=1)
    hour = circular_peak(cv2.GaussianBlur(hour_prof[:, None], (1, 5), 0).ravel())
    zero = clock_zero(rgb, dial)
    return (hour - zero) % 360.0, (minute - zero) % 360.0


def clock_zero(rgb: np.ndarray, dial: Circle) -> float:
    """Return the angle (deg clockwise from up) of a clock's 12 o'clock.

    The red marker gives it roughly (the 12 o'clock tick hides most of it); it is then snapped
    to the nearest long hour tick. Without a marker, up is assumed.
    """
    coarse = marker_angle(rgb, dial)
    if coarse is None:
        return 0.0
    phase = tick_phase(cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY), dial, 0.73, 0.79)
    if phase is None:
        return coarse
    k = round((coarse - phase) / 30.0)
    return float((phase + 30.0 * k) % 360.0)


def clock_time(hour_angle: float, minute_angle: float) -> tuple[int, int]:
    """Return ``(hour 1-12, minute)`` from hand angles (the hour hand also moves with minutes)."""
    minute = int(round(minute_angle / 6.0)) % 60
    hour = int(round((hour_angle - minute * 0.5) / 30.0)) % 12
    return (hour or 12), minute


def needle_angle(rgb: np.ndarray, dial: Circle) -> float | None:
    """Return a gauge needle's angle in degrees clockwise from up, in ``(-180, 180]``.

    The needle alone crosses the annulus 0.25-0.6 r (scale ticks start at 0.66 r).
    """
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    dark = darkness(gray, dial, 0.2, 0.62)
    red = np.clip(redness(rgb), 0.0, None)
    score = np.maximum(dark, red)
    prof = polar_samples(score, dial.x, dial.y, np.linspace(0.25 * dial.r, 0.6 * dial.r, 10))
    prof = prof.mean(axis=1)
    if float(prof.max()) < 8.0:
        return None
    a = circular_peak(prof, half_window=5)
    return a - 360.0 if a > 180.0 else a
