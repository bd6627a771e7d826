"""The gauges: compare two labelled gauges by their needles (the ``compare_labels`` plan).

The gauge labels are printed large, so OCR of the full view finds both; each gauge stands just
above its label. Both gauges are cropped in one parallel step; when a crop is low in contrast
(a printed, faded gauge), both crops are autocontrasted in a second parallel step. The needle's
direction in each crop gives its reading on a 270° scale (0 at -135°, 100 at +135° from up).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import cv2
import numpy as np
from rapidfuzz import fuzz

from m3gym.agents.heuristic import vision as hv
from m3gym.agents.heuristic.calls import crop_call, crop_pixels, full_size, op_call
from m3gym.agents.heuristic.dials import (
    Circle,
    circular_peak,
    darkness,
    polar_samples,
    redness,
    refine_circle,
    tick_centre,
)
from m3gym.agents.heuristic.view import EpisodeView, Plan
from m3gym.agents.ocr import OcrWord, read_words

GAUGE_RADIUS_FULL: tuple[float, float] = (17.0, 35.0)
"""Gauge radii (full-resolution pixels) the plan looks for."""

GAUGE_SWEEP_DEG: float = 270.0
"""Degrees of arc the gauge scale spans."""

FAINT_STD: float = 22.0
"""A crop whose dial area has a gray standard deviation below this is treated as faded."""


def gauge_labels(question: str) -> list[str]:
    """Return the two gauge labels a question names ("... labelled X or the one labelled Y?")."""
    return [m.strip() for m in re.findall(r"labelled ([A-Z0-9][A-Z0-9 ]*?)(?= or |\?)",
                                           question)][:2]


def label_box(words: Sequence[OcrWord], label: str) -> tuple[int, int, int, int] | None:
    """Return the box of the run of OCR words that best spells ``label`` (None when poor).

    Runs of one to three consecutive words on one line are compared with the label by fuzzy
    ratio (spaces ignored); the best run scoring at least 70 wins.
    """
    target = label.replace(" ", "").upper()
    best: tuple[float, tuple[int, int, int, int]] | None = None
    for i in range(len(words)):
        for n in (1, 2, 3):
            run = words[i:i + n]
            if len(run) < n or any(w.line != run[0].line for w in run):
                continue
            text = "".join(w.text for w in run).replace(" ", "").upper()
            score = float(fuzz.ratio(text, target))
            if best is None or score > best[0]:
                box = (min(w.box[0] for w in run), min(w.box[1] for w in run),
                       max(w.box[2] for w in run), max(w.box[3] for w in run))
                best = (score, box)
    return best[1] if best is not None and best[0] >= 70.0 else None


LABEL_READS: tuple[tuple[float, int], ...] = ((2.0, 11), (3.0, 11), (2.0, 6))
"""OCR passes (upscale, Tesseract page mode) over the view, tried in turn for labels not found."""


def find_labels(view_img: np.ndarray,
                labels: Sequence[str]) -> list[tuple[int, int, int, int] | None]:
    """Return each label's box in the view: :data:`LABEL_READS` in turn until all are found.

    Labels are printed large but the scene is 3-3.6 times the view, so one pass of sparse-text
    OCR misses a widely spaced label now and then; a finer upscale or block mode finds it.
    """
    found: list[tuple[int, int, int, int] | None] = [None] * len(labels)
    for scale, psm in LABEL_READS:
        words = read_words(view_img, scale=scale, both_polarities=True, psm=psm)
        found = [b if b is not None else label_box(words, lab) for b, lab in zip(found, labels)]
        if all(b is not None for b in found):
            break
    return found


def gauge_box_above(label: tuple[int, int, int, int], scale: float,
                    size: tuple[int, int]) -> tuple[float, float, float, float]:
    """Return the full-resolution box above a label (view box) that holds its gauge."""
    x0, y0, x1, _ = (v / scale for v in label)
    cx = (x0 + x1) / 2.0
    side = 2.0 * GAUGE_RADIUS_FULL[1] + 30.0
    bottom = y0 - 2.0
    return (max(0.0, cx - side / 2.0), max(0.0, bottom - side),
            min(float(size[0]), cx + side / 2.0), min(float(size[1]), bottom))


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



def gauge_reading(rgb: np.ndarray, k: float) -> float | None:
    """Return the reading (0–100) of the gauge near the centre of a crop zoomed ``k`` px/px.

    The dial is found from a guess at the crop's centre (Hough near it, then the centroid of
    the light face), and the needle's direction read on it.
    """
    h, w = rgb.shape[:2]
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    guess = Circle(w / 2.0, h / 2.0, 0.5 * (GAUGE_RADIUS_FULL[0] + GAUGE_RADIUS_FULL[1]) * k)
    dial = tick_centre(gray, tick_centre(gray, refine_circle(gray, guess, 0.35)))
    angle = needle_angle(rgb, dial)
    if angle is None:
        return None
    return (angle + GAUGE_SWEEP_DEG / 2.0) / GAUGE_SWEEP_DEG * 100.0


def looks_faded(rgb: np.ndarray) -> bool:
    """Return whether a gauge crop's centre is low in contrast (a printed, faded gauge)."""
    h, w = rgb.shape[:2]
    centre = cv2.cvtColor(rgb[h // 5:4 * h // 5, w // 5:4 * w // 5], cv2.COLOR_RGB2GRAY)
    return float(centre.std()) < FAINT_STD


def plan_compare_gauges(view: EpisodeView) -> Plan:
    """Find both labels, crop both gauges in parallel, [autocontrast both], compare needles."""
    labels = gauge_labels(view.question)
    if len(labels) < 2:
        return None
    img = view.images[0]
    s = view.view_scale(0)
    size = full_size(view, 0)
    found = find_labels(img, labels)
    if any(b is None for b in found):
        return None
    boxes = [gauge_box_above(b, s, size) for b in found if b is not None]
    zooms = [float(np.clip(np.floor(420.0 / max(b[2] - b[0], b[3] - b[1], 1.0) * 2) / 2, 1, 5))
             for b in boxes]
    out = yield [crop_call(0, hv.to_bbox1000(b, size[0], size[1]), z)
                 for b, z in zip(boxes, zooms)]
    if len(out.images) < 2 or any(im is None for im in out.images):
        return None
    crops = [im for im in out.images if im is not None]
    ks = []
    for im, rec, b in zip(crops, out.calls, boxes):
        px = crop_pixels(str(rec.get("result_text", "")))
        ks.append(im.shape[1] / max((px[2] - px[0]) if px else (b[2] - b[0]), 1.0))
    if any(looks_faded(im) for im in crops) and all(i is not None for i in out.indices):
        out = yield [op_call("autocontrast", int(i), cutoff=1.0) for i in out.indices
                     if i is not None]
        if len(out.images) == 2 and all(im is not None for im in out.images):
            crops = [im for im in out.images if im is not None]
    readings = [gauge_reading(im, k) for im, k in zip(crops, ks)]
    if any(r is None for r in readings):
        return None
    a, b = readings
    return labels[0] if a is not None and b is not None and a >= b else labels[1]
