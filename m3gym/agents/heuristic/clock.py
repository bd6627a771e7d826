"""The clock: find a small clock face, zoom it, read its hands from its red 12 o'clock marker.

Everything about clocks lives here: where the plan looks (:data:`CLOCK_RADIUS_FULL`), how it
crops a dial and maps it into the crop (:func:`dial_crop_call`, :func:`dial_in_crop`), the
clock's own vision (the red 12 o'clock marker, the hands, :func:`clock_time`) and the plan
(:func:`plan_clock_reading`). The dial measurements it shares with the gauges are in
:mod:`m3gym.agents.heuristic.dials`.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

from m3gym.agents.heuristic import vision as hv
from m3gym.agents.heuristic.calls import crop_call, crop_pixels, full_size
from m3gym.agents.heuristic.dials import (
    Circle,
    circular_peak,
    darkness,
    dial_candidates,
    polar_samples,
    redness,
    refine_circle,
    tick_centre,
    tick_phase,
    tick_radius,
)
from m3gym.agents.heuristic.text import asked_position
from m3gym.agents.heuristic.view import EpisodeView, Plan

CLOCK_RADIUS_FULL: tuple[float, float] = (30.0, 47.0)
"""Dial radii (full-resolution pixels) the clock search accepts (the scenes draw 33-44 px)."""

CLOCK_TICK_STEP = 0.78
"""Fraction of a clock's radius where its dense minute ticks begin (measured dial size)."""

DIAL_CROP_PX = 460
"""Side (pixels) a zoomed dial crop aims at: the ticks become several pixels apart."""


def marker_angle(rgb: np.ndarray, dial: Circle) -> float | None:
    """Return the angle (deg clockwise from up) of the dial's red 12 o'clock marker, or None."""
    red = np.where(rgb[..., 0] >= 110, redness(rgb), 0.0).astype(np.float32)
    radii = np.linspace(0.62 * dial.r, 0.92 * dial.r, 16)
    prof = np.clip(polar_samples(red, dial.x, dial.y, radii) - 40.0, 0.0, None).mean(axis=1)
    if float(prof.max()) < 3.0:
        return None
    return circular_peak(cv2.GaussianBlur(prof[:, None], (1, 9), 0).ravel(), half_window=8)


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


def dial_crop_call(index: int, dial: Circle, size: tuple[int, int], margin: float = 0.3,
                   target_px: int = DIAL_CROP_PX) -> dict[str, Any]:
    """Return a zoomed crop of a dial (full-resolution circle) with a margin of ``margin`` r."""
    box = hv.grow(dial.box(margin * dial.r), 0, 0, size[0], size[1])
    side = max(box[2] - box[0], box[3] - box[1], 1)
    zoom = float(np.clip(np.floor(target_px / side * 2) / 2, 1.0, 5.0))
    return crop_call(index, hv.to_bbox1000(box, size[0], size[1]), zoom)


def dial_in_crop(image: np.ndarray, record: dict[str, Any], dial: Circle,
                 step_frac: float) -> Circle:
    """Return ``dial`` (full-resolution circle) in the pixels of its crop's output ``image``."""
    px = crop_pixels(str(record.get("result_text", "")))
    if px is None:
        h, w = image.shape[:2]
        return Circle(w / 2, h / 2, min(w, h) / 2 / 1.3)
    k = image.shape[1] / max(px[2] - px[0], 1)
    guess = Circle((dial.x - px[0]) * k, (dial.y - px[1]) * k, dial.r * k)
    gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY)
    dial = tick_radius(gray, refine_circle(gray, guess, 0.35), step_frac)
    return tick_radius(gray, tick_centre(gray, dial), step_frac)


def find_dial(view: EpisodeView, radius_full: tuple[float, float], where: str | None,
              min_score: float = 0.7) -> Plan:
    """Locate a light round dial in image 0 near ``where``; return it in full-res pixels.

    Circles found at view size are trusted when they look clearly like a dial face; otherwise
    the named grid cell is cropped (one call) and searched at a finer scale.
    """
    img = view.images[0]
    s = view.view_scale(0)
    size = full_size(view, 0)
    cands = dial_candidates(img, radius_full[0] * s, radius_full[1] * s, where)
    if cands and cands[0].score >= min_score:
        c = cands[0]
        return Circle(c.x / s, c.y / s, c.r / s, c.score)
    x0, y0, x1, y1 = hv.position_region(where)
    cell = (x0 - 0.06, y0 - 0.06, x1 + 0.06, y1 + 0.06)
    box = hv.grow((cell[0] * size[0], cell[1] * size[1], cell[2] * size[0], cell[3] * size[1]),
                  0, 0, size[0], size[1])
    zoom = float(np.clip(np.floor(760 / max(box[2] - box[0], box[3] - box[1]) * 4) / 4, 0.5, 2))
    out = yield [crop_call(0, hv.to_bbox1000(box, size[0], size[1]), zoom)]
    crop = out.images[0] if out.images else None
    px = crop_pixels(out.text) if crop is not None else None
    if crop is None or px is None:
        c = cands[0] if cands else None
        return Circle(c.x / s, c.y / s, c.r / s, c.score) if c else None
    k = crop.shape[1] / max(px[2] - px[0], 1)
    fine = dial_candidates(crop, radius_full[0] * k, radius_full[1] * k, None)
    if not fine:
        c = cands[0] if cands else None
        return Circle(c.x / s, c.y / s, c.r / s, c.score) if c else None
    c = fine[0]
    return Circle(px[0] + c.x / k, px[1] + c.y / k, c.r / k, c.score)


def rotated_point(x: float, y: float, w: int, h: int, angle: float, out_w: int, out_h: int
                  ) -> tuple[float, float]:
    """Return where pixel ``(x, y)`` of a ``w x h`` image lands after a CCW rotate.

    The rotation by ``angle`` (with expand) turns about the centres of the source and of the
    ``out_w x out_h`` canvas.
    """
    a = np.deg2rad(angle)
    dx, dy = x - w / 2, y - h / 2
    return (out_w / 2 + dx * np.cos(a) + dy * np.sin(a),
            out_h / 2 - dx * np.sin(a) + dy * np.cos(a))


def time_minutes(text: str) -> int | None:
    """Return minutes past 12:00 (0-719) of an ``H:MM`` time, None when it is no time."""
    m = re.fullmatch(r"\s*(\d{1,2}):(\d{2})\s*", text)
    if not m:
        return None
    return (int(m.group(1)) % 12) * 60 + int(m.group(2))


def nearest_time(hour: int, minute: int, choices: Sequence[str], max_off: int = 4
                 ) -> str:
    """Return the choice nearest (circularly, 12 h) to the read time, else the read time."""
    read = (hour % 12) * 60 + minute
    best: tuple[int, str] | None = None
    for c in choices:
        t = time_minutes(c)
        if t is None:
            continue
        d = min(abs(t - read), 720 - abs(t - read))
        if best is None or d < best[0]:
            best = (d, c)
    if best is not None and best[0] <= max_off:
        return best[1]
    return f"{hour}:{minute:02d}"


def plan_clock_reading(view: EpisodeView) -> Plan:
    """Find the clock, crop-zoom it, read the hands from its red 12 o'clock marker.

    The dial is read as it hangs: the hands' angles are measured from the marker (snapped to
    the nearest hour tick, :func:`clock_zero`), so no rotation is needed.
    """
    where = asked_position(view.question)
    dial = yield from find_dial(view, CLOCK_RADIUS_FULL, where)
    if dial is None:
        return None
    out = yield [dial_crop_call(0, dial, full_size(view, 0), margin=0.45)]
    if not out.images or out.images[0] is None or out.indices[0] is None:
        return None
    zimg = out.images[0]
    zdial = dial_in_crop(zimg, out.calls[0], dial, CLOCK_TICK_STEP)
    hands = clock_hands(zimg, zdial)
    if hands is None:
        return view.guess
    return nearest_time(*clock_time(*hands), view.choices)
