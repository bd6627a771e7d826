"""Round dials for the heuristic agent: circle candidates, polar profiles, ticks and faces.

The measurements the clock (:mod:`m3gym.agents.heuristic.clock`) and the gauges
(:mod:`m3gym.agents.heuristic.gauges`) share. Angles are degrees clockwise from up (12 o'clock);
circles are in the pixels of the analysed image.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.agents.heuristic.vision import position_distance


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


def darkness(gray: np.ndarray, dial: Circle, r0: float = 0.25, r1: float = 0.6) -> np.ndarray:
    """Return ``float32`` darkness (face level minus gray, >= 0) relative to the dial's face.

    The face level is the 80th percentile of the annulus ``r0..r1`` (mostly bare face).
    """
    face = float(np.percentile(polar_samples(gray, dial.x, dial.y,
                                             np.linspace(r0 * dial.r, r1 * dial.r, 8)), 80))
    return np.clip(face - gray.astype(np.float32), 0.0, None)
