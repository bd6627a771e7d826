"""Counting in a marked region (the ``region_count`` plan).

The plan finds the dashed frame of the colour the question names (:func:`dashed_frame`, on the
view and a contrast-stretched look at it), crops the region inside it with a zoom and counts the
objects of the asked colour there (:func:`count_separated_blobs`: clustered objects are split at
the peaks of the colour mask's distance transform).
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np

from m3gym.agents.heuristic import vision as hv
from m3gym.agents.heuristic.calls import crop_call, full_size
from m3gym.agents.heuristic.text import named_colors_in
from m3gym.agents.heuristic.view import EpisodeView, Plan


def stretched_view(rgb: np.ndarray, cutoff: float = 0.5) -> np.ndarray:
    """Return ``rgb`` with each channel's ``cutoff``..``100-cutoff`` percentiles stretched.

    The agent's own look at a dim view to find the layout (the frame), not to count.
    """
    out = np.empty_like(rgb)
    for c in range(3):
        lo, hi = np.percentile(rgb[..., c], (cutoff, 100.0 - cutoff))
        scale = 255.0 / max(float(hi - lo), 1.0)
        lut = np.clip((np.arange(256, dtype=np.float32) - lo) * scale, 0, 255).astype(np.uint8)
        out[..., c] = cv2.LUT(rgb[..., c], lut)
    return out


def chroma_mask(rgb: np.ndarray, color: Sequence[int], min_cos: float = 0.85,
                min_chroma: float = 18.0) -> np.ndarray:
    """Return a ``uint8`` mask of pixels whose colour cast points the way ``color``'s does.

    Thin strokes blend with their ground at view size, so their RGB is far from the pure
    colour but their cast (pixel minus its gray level) keeps its direction. For white (no
    cast) the mask holds pixels much lighter than their 15 px neighbourhood instead.
    """
    f = rgb.astype(np.float32)
    target = np.asarray(color, np.float32)
    tcast = target - target.mean()
    if float(np.linalg.norm(tcast)) < 20.0:
        gray = f.mean(axis=2)
        local = cv2.blur(gray, (15, 15))
        return np.where(gray - local >= 35.0, 255, 0).astype(np.uint8)
    cast = f - f.mean(axis=2, keepdims=True)
    norm = np.linalg.norm(cast, axis=2)
    cos = (cast @ (tcast / np.linalg.norm(tcast))) / np.maximum(norm, 1e-6)
    return np.where((cos >= min_cos) & (norm >= min_chroma), 255, 0).astype(np.uint8)


def dashed_frame(rgb: np.ndarray, color: str, min_side: float) -> hv.Box | None:
    """Return the inner box of the dashed rectangle of ``color`` (view pixels), or None.

    Dashes of the colour (matched exactly, else by colour cast) are joined by a close; each
    component at least ``min_side`` wide and high is scored by how much of its box's outline
    the raw mask covers (a dashed frame covers about half, a blob's box far less inside its
    outline band relative to its fill); the best outline wins, shrunk by 2 px to its inside.
    """
    stretched = stretched_view(rgb)
    best: tuple[float, hv.Box] | None = None
    for mask in (hv.color_mask(rgb, hv.COLORS[color], tol=60.0),
                 hv.color_mask(stretched, hv.COLORS[color], tol=70.0),
                 chroma_mask(stretched, hv.COLORS[color])):
        k = max(9, int(min_side / 3)) | 1
        joined = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((k, k), np.uint8))
        n, _, stats, _ = cv2.connectedComponentsWithStats(joined, connectivity=8)
        on = mask > 0
        for i in range(1, n):
            x, y, w, h, area = (int(v) for v in stats[i])
            if w < min_side or h < min_side or area > 0.6 * w * h:
                continue
            band = np.concatenate([on[y:y + 3, x:x + w].any(axis=0), on[y + h - 3:y + h,
                                   x:x + w].any(axis=0), on[y:y + h, x:x + 3].any(axis=1),
                                   on[y:y + h, x + w - 3:x + w].any(axis=1)])
            inside = float(on[y + 4:y + h - 4, x + 4:x + w - 4].mean()) if w > 8 < h else 1.0
            score = float(band.mean()) - 2.0 * inside
            if best is None or score > best[0]:
                best = (score, (x, y, x + w, y + h))
        if best is not None and best[0] >= 0.3:
            break
    if best is None:
        return None
    x0, y0, x1, y1 = best[1]
    return x0 + 2, y0 + 2, x1 - 2, y1 - 2


def count_colour_blobs(rgb: np.ndarray, color: str, min_area: float, max_area: float) -> int:
    """Return how many blobs of ``color`` with an area in ``min_area..max_area`` ``rgb`` holds."""
    mask = hv.color_mask(rgb, hv.COLORS[color], tol=75.0)
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    n, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    areas = stats[1:, cv2.CC_STAT_AREA]
    single = int(np.count_nonzero((areas >= min_area) & (areas <= max_area)))
    merged = areas[areas > max_area]  # touching objects: count by area
    return single + int(np.round(merged / (0.5 * (min_area + max_area))).sum())


def count_separated_blobs(rgb: np.ndarray, color: str, scale: float,
                          aspect: float = 1.0) -> int:
    """Return how many objects of ``color`` ``rgb`` (a crop zoomed ``scale`` times) holds.

    Objects lie in clumps about one full-resolution pixel apart, which the colour mask of a
    zoomed crop bridges; they are split at the peaks of its distance transform
    (:func:`count_mask_peaks`; ``aspect`` widens the search along x: cars lie lengthwise). A
    pixel of the mask matches the colour and stands out from its neighbourhood (a light or
    tinted patch of the backdrop is not an object).
    """
    mask = hv.color_mask(rgb, hv.COLORS[color], tol=75.0)
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    ground = cv2.medianBlur(gray, max(5, int(12 * scale)) | 1)
    mask[cv2.absdiff(gray, ground) < 30] = 0
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    return count_mask_peaks(mask, scale, aspect)


def count_mask_peaks(mask: np.ndarray, scale: float, aspect: float = 1.0,
                     min_depth: float = 0.7) -> int:
    """Return how many objects a ``uint8`` mask of a crop zoomed ``scale`` times holds.

    Each object is a peak of the mask's distance transform at least ``min_depth``
    full-resolution pixels deep that is the largest within 1.3 pixels (``aspect`` times that
    along x); every group of such peaks counts once. One-pixel holes (a lit roof or centre) are
    closed first.
    """
    c = max(3, int(scale)) | 1
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((c, c), np.uint8))
    dist = cv2.distanceTransform(mask, cv2.DIST_L2, 5)
    w = max(1, int(1.3 * scale))
    wx = max(1, int(1.3 * scale * aspect))
    local = cv2.dilate(dist, cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * wx + 1, 2 * w + 1)))
    peaks = ((dist >= local - 1e-3) & (dist >= min_depth * scale)).astype(np.uint8)
    n, _ = cv2.connectedComponents(peaks, connectivity=8)
    return int(n - 1)


def plan_region_count(view: EpisodeView) -> Plan:
    """Find the dashed region, crop it with a zoom, count the objects of the asked colour."""
    img = view.images[0]
    s = view.view_scale(0)
    size = full_size(view, 0)
    colors = named_colors_in(view.question, list(hv.COLORS))
    if len(colors) < 2:
        return None
    target, frame = colors[0], colors[1]
    inner = dashed_frame(img, frame, 80 * s)
    if inner is None:
        return None
    box = tuple(v / s for v in inner)
    side = max(box[2] - box[0], box[3] - box[1])
    zoom = float(np.clip(np.floor(740 / side * 4) / 4, 1.0, 5.0))
    out = yield [crop_call(0, hv.to_bbox1000(box, size[0], size[1]), zoom)]
    if not out.images or out.images[0] is None:
        return None
    crop = out.images[0]
    k = crop.shape[1] / max(box[2] - box[0], 1.0)  # output pixels per full-res pixel
    edge = max(2, int(3 * k))
    cars = "cars" in view.question.lower()
    count = count_separated_blobs(crop[edge:-edge, edge:-edge], target, k, 2.2 if cars else 1.0)
    return str(count)
