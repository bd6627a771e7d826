"""Adding two prices (the ``price_sum`` plan): two dotted tags read and summed.

The tags are found by their coloured dots (:func:`~m3gym.agents.heuristic.reading.
marker_candidates`) and cropped in one parallel step (the reference's two calls); each price is
read from several versions of its tag (the plain crop and its contrast stretch, computed here:
a stretch tool call after a crop shows nothing new), and the sum that is one of the choices wins.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import cv2
import numpy as np

from m3gym.agents.heuristic import vision as hv
from m3gym.agents.heuristic.calls import crop_call
from m3gym.agents.heuristic.reading import marker_candidates, marker_crop
from m3gym.agents.heuristic.text import named_colors_in
from m3gym.agents.heuristic.view import EpisodeView, Plan
from m3gym.agents.ocr import OcrWord, read_words_batch


def plan_price_sum(view: EpisodeView) -> Plan:
    """Find the two dotted tags, crop both in parallel, read both prices, add them.

    Each price is read from versions of its tag (:func:`_tag_versions`: the plain ones, then
    smoothed ones only when no pair of readings sums to a choice), its readings ranked by how
    often they were read; the best-ranked pair whose sum is one of the choices wins, else the
    top readings' sum is matched to the nearest choice.
    """
    img = view.images[0]
    colors = named_colors_in(view.question, list(hv.COLORS))[:2]
    boxes = []
    for c in colors:
        cands = marker_candidates(img, c, None, round_=True, tag_shaped=True)
        if cands:
            boxes.append(cands[0])
    if len(boxes) < 2:
        return None
    calls = [crop_call(0, *marker_crop(img, b, view.view_scale(0))) for b in boxes]
    out = yield calls
    pairs = [(i, im) for i, im in zip(out.indices, out.images) if i is not None and im is not None]
    if len(pairs) < 2:
        return None
    tags = [(stretched(crop), crop) for _, crop in pairs]
    per_tag: list[list[float]] = [[] for _ in tags]
    for stage in (0, 1):  # the plain versions first; the smoothed ones only when they disagree
        versions = [_tag_versions(ac, crop, stage) for ac, crop in tags]
        n = len(versions[0])
        readings = read_words_batch([v for vs in versions for v in vs], both_polarities=True)
        for k in range(len(tags)):
            per_tag[k] += [p for ws in readings[k * n:(k + 1) * n] for p in _price_readings(ws)]
        ranked = [_ranked(ps) for ps in per_tag]
        if all(ranked) and (stage or _matching_choice(ranked[0], ranked[1], view.choices)):
            return _consistent_sum(ranked[0], ranked[1], view.choices)
    return None


def stretched(rgb: np.ndarray, cutoff: float = 1.0) -> np.ndarray:
    """Return ``rgb`` with each channel's ``cutoff``..``100 - cutoff`` percentiles stretched."""
    out = np.empty_like(rgb)
    for c in range(rgb.shape[2]):
        lo, hi = np.percentile(rgb[..., c], (cutoff, 100.0 - cutoff))
        scale = 255.0 / max(float(hi - lo), 1.0)
        out[..., c] = np.clip((rgb[..., c].astype(np.float32) - lo) * scale, 0, 255)
    return out


def _tag_versions(contrasted: np.ndarray, crop: np.ndarray, stage: int) -> list[np.ndarray]:
    """Return the versions of a tag read for its price.

    Stage 0: the autocontrast and the plain crop; stage 1: both smoothed and the autocontrast
    enlarged.
    """
    if stage == 0:
        return [contrasted, crop]
    return [cv2.GaussianBlur(contrasted, (0, 0), 1.2), cv2.GaussianBlur(crop, (0, 0), 1.0),
            cv2.resize(contrasted, None, fx=1.5, fy=1.5, interpolation=cv2.INTER_CUBIC)]


def _ranked(values: Sequence[float]) -> list[float]:
    """Return the distinct ``values``, the most often read first (ties: first read first)."""
    order = list(dict.fromkeys(values))
    return sorted(order, key=lambda v: (-values.count(v), order.index(v)))


def _price_readings(words: Sequence[OcrWord]) -> list[float]:
    """Return the price a tag reading shows, then the same without a leading "$" misread as 5."""
    price = _price_in(words)
    if price is None:
        return []
    return [price, float(f"{price % 100:.2f}")] if price >= 100 else [price]


def _matching_choice(first: Sequence[float], second: Sequence[float],
                     choices: Sequence[str]) -> str | None:
    """Return the choice equal to a sum of one reading of each tag, best-ranked pair first."""
    pairs = sorted(((i + j, i, a + b) for i, a in enumerate(first)
                    for j, b in enumerate(second)))
    for *_, total in pairs:
        for c in choices:
            try:
                if abs(float(c) - total) < 0.005:
                    return c
            except ValueError:
                continue
    return None


def _consistent_sum(first: Sequence[float], second: Sequence[float],
                    choices: Sequence[str]) -> str | None:
    """Return :func:`_matching_choice`, else the choice nearest the top readings' sum."""
    return (_matching_choice(first, second, choices)
            or _nearest_number(first[0] + second[0], choices))


def _price_in(words: Sequence[OcrWord]) -> float | None:
    """Return the price a tag reading shows ("$12.50" -> 12.5), None when none is read."""
    text = " ".join(w.text for w in words).replace(",", ".")
    m = re.search(r"(\d{1,3})\s*[.:]\s*(\d{2})", text)
    if m:
        return float(f"{m.group(1)}.{m.group(2)}")
    m = re.search(r"(\d{1,2})(\d{2})(?!\d)", text)  # the decimal point was not read
    return float(f"{m.group(1)}.{m.group(2)}") if m else None


def _nearest_number(value: float, choices: Sequence[str]) -> str | None:
    """Return the numeric choice closest to ``value`` (or the value itself without choices)."""
    nums = []
    for c in choices:
        try:
            nums.append((abs(float(c) - value), c))
        except ValueError:
            continue
    return min(nums)[1] if nums else f"{value:.2f}"
