"""Reverse image search over logos: descriptors, the index of a world's logos, and matching.

Reverse image search compares *descriptors*: the grayscale image (or a square window of it)
downsampled to ``DESCRIPTOR_SIZE``², slightly blurred and normalized to zero mean and unit norm,
so a dot product is a normalized correlation, invariant to brightness and contrast changes and to
scale. :func:`match_logos` retrieves candidates with windows on a grid plus windows on the
query's square outlines (:func:`outline_windows`), aligns each candidate to sub-pixel accuracy
(:func:`window_pixels` samples windows bilinearly at their exact origin) and re-ranks colour
queries with a colour descriptor. The logos themselves are drawn in :mod:`m3gym.web.logos`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.pixels import to_gray

DESCRIPTOR_SIZE = 24


def to_gray_float(image: np.ndarray) -> np.ndarray:
    """Return a ``float32`` grayscale copy of a ``uint8`` RGB, RGBA or gray image."""
    return to_gray(image).astype(np.float32)


def normalize_rows(matrix: np.ndarray) -> np.ndarray:
    """Return ``matrix`` with each row shifted to zero mean and scaled to unit norm."""
    centred = matrix - matrix.mean(axis=1, keepdims=True)
    norms = np.linalg.norm(centred, axis=1, keepdims=True)
    return centred / np.maximum(norms, 1e-6)


def normalize_colour_rows(matrix: np.ndarray) -> np.ndarray:
    """Return RGB descriptor rows with zero-mean channels and unit norm.

    Rows are ``(n, s*s*3)``, channels last. Invariant to a brightness offset per channel and
    to a common contrast factor.
    """
    n = matrix.shape[0]
    per_channel = matrix.reshape(n, -1, 3)
    centred = (per_channel - per_channel.mean(axis=1, keepdims=True)).reshape(n, -1)
    norms = np.linalg.norm(centred, axis=1, keepdims=True)
    return centred / np.maximum(norms, 1e-6)


DESCRIPTOR_BLUR = 0.6
"""Gaussian blur (std, in descriptor pixels) applied before sampling: tolerates sub-pixel
misalignment between a query window and a logo."""


def _soften(small: np.ndarray, blur: float = DESCRIPTOR_BLUR) -> np.ndarray:
    """Return a descriptor-resolution image blurred by ``blur`` (std, px; 0: unchanged)."""
    if blur <= 0:
        return small
    return cv2.GaussianBlur(small, (0, 0), blur, borderType=cv2.BORDER_REPLICATE)


def descriptor(gray: np.ndarray, size: int = DESCRIPTOR_SIZE, blur: float = DESCRIPTOR_BLUR
               ) -> np.ndarray:
    """Return the unit-norm, zero-mean ``size``² descriptor of a grayscale image."""
    small = _soften(cv2.resize(gray, (size, size), interpolation=cv2.INTER_AREA), blur)
    return normalize_rows(small.reshape(1, -1))[0]


def colour_descriptor(rgb: np.ndarray, size: int) -> np.ndarray:
    """Return the ``size``² x 3 colour descriptor of an RGB image (blurred, normalized)."""
    small = _soften(cv2.resize(rgb.astype(np.float32), (size, size),
                               interpolation=cv2.INTER_AREA))
    return normalize_colour_rows(small.reshape(1, -1))[0]


COARSE_SIZE = 16
COARSE_BLUR = 0.6
COLOUR_SIZE = 10
QUERY_SHORT_SIDE = 4 * DESCRIPTOR_SIZE
PAD_FRACTION = 0.1
WINDOW_FRACTIONS: tuple[float, ...] = (1.0, 0.9, 0.8, 0.7, 0.6)
WINDOW_POSITIONS = 5
OVERHANG_FRACTIONS: tuple[float, ...] = (1.0, 1.06)
REFINE_SCALES: tuple[float, ...] = (-1.0, 0.0, 1.0)
REFINE_SHIFTS: tuple[float, ...] = (-1.0, 0.0, 1.0)
REFINE_STEPS: tuple[tuple[float, float], ...] = ((0.06, 0.06), (0.02, 0.02))
"""Refinement rounds: ``(relative scale range, relative shift range)`` around a window."""
MATCH_CANDIDATES = 48
MATCH_REFINE = 12
COLOUR_WEIGHT = 0.3

Window = tuple[float, float, float]
"""A square window ``(x, y, side)`` in pixels of the reduced, padded query image."""


@dataclass(frozen=True)
class LogoIndex:
    """Descriptor matrices of every logo of a world (rows in world order, read-only).

    Attributes:
        coarse: ``(N, COARSE_SIZE²)`` gray descriptors (candidate retrieval).
        fine: ``(N, DESCRIPTOR_SIZE²)`` gray descriptors (alignment and ranking).
        colour: ``(N, COLOUR_SIZE² * 3)`` colour descriptors (re-ranking colour queries).
    """

    coarse: np.ndarray
    fine: np.ndarray
    colour: np.ndarray


def logo_descriptors(logo: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return the coarse, fine and colour descriptors of one ``uint8`` RGB logo."""
    gray = to_gray_float(logo)
    return (descriptor(gray, COARSE_SIZE, COARSE_BLUR), descriptor(gray),
            colour_descriptor(logo, COLOUR_SIZE))


def build_logo_index(logos: Iterable[np.ndarray]) -> LogoIndex:
    """Return the :class:`LogoIndex` of ``uint8`` RGB logos (one logo in work at a time)."""
    rows = [logo_descriptors(logo) for logo in logos]
    coarse, fine, colour = (np.stack([r[k] for r in rows]).astype(np.float32)
                            for k in range(3))
    for m in (coarse, fine, colour):
        m.setflags(write=False)
    return LogoIndex(coarse, fine, colour)


@dataclass(frozen=True)
class Query:
    """A query image reduced for matching: gray (and RGB when it has colour), padded.

    ``short`` is the short side before padding, ``pad`` the replicated border on every side.
    """

    gray: np.ndarray
    rgb: np.ndarray | None
    short: float
    pad: int


def has_colour(image: np.ndarray) -> bool:
    """Return whether an RGB(A) image has visibly different channels (not gray)."""
    if image.ndim == 2 or image.shape[2] == 1:
        return False
    rgb = image[::2, ::2, :3].astype(np.int16)
    spread = np.abs(rgb[..., 0] - rgb[..., 1]) + np.abs(rgb[..., 1] - rgb[..., 2])
    return float(spread.mean()) > 3.0


def reduced_query(image: np.ndarray, colour: bool | None = None) -> Query:
    """Return the query reduced to a short side of :data:`QUERY_SHORT_SIDE`, padded.

    The border (replicated, :data:`PAD_FRACTION` of the short side) lets windows leave the crop.
    ``colour`` keeps the RGB image (``None``: when the image visibly has colour).
    """
    if image.ndim == 3 and image.shape[2] == 1:
        image = image[..., 0]
    if colour is None:
        colour = has_colour(image)
    rgb = np.ascontiguousarray(image[..., :3]) if colour and image.ndim == 3 else None
    gray = to_gray_float(image)
    h, w = gray.shape
    if min(h, w) > QUERY_SHORT_SIDE:
        f = QUERY_SHORT_SIDE / min(h, w)
        size = (max(1, round(w * f)), max(1, round(h * f)))
        gray = cv2.resize(gray, size, interpolation=cv2.INTER_AREA)
        if rgb is not None:
            rgb = cv2.resize(rgb, size, interpolation=cv2.INTER_AREA)
    short = float(min(gray.shape))
    pad = max(1, round(short * PAD_FRACTION))
    gray = cv2.copyMakeBorder(gray, pad, pad, pad, pad, cv2.BORDER_REPLICATE)
    if rgb is not None:
        rgb = cv2.copyMakeBorder(rgb.astype(np.float32), pad, pad, pad, pad,
                                 cv2.BORDER_REPLICATE)
    return Query(gray, rgb, short, pad)


def coarse_windows(query: Query) -> list[list[Window]]:
    """Return square windows to retrieve candidates with, grouped by size.

    Windows of 60–100 % of the short side on a 5×5 grid inside the crop, plus windows of
    100–106 % on a 3×3 grid reaching into the padding (a logo cut by the crop).
    """
    h, w = query.gray.shape
    p = query.pad
    h, w = h - 2 * p, w - 2 * p
    groups = []
    for frac in WINDOW_FRACTIONS:
        side = max(1.0, query.short * frac)
        groups.append([(float(x) + p, float(y) + p, side)
                       for y in np.linspace(0, h - side, WINDOW_POSITIONS)
                       for x in np.linspace(0, w - side, WINDOW_POSITIONS)])
    # a logo cut by the crop: windows reaching into the padding
    for frac in OVERHANG_FRACTIONS:
        side = query.short * frac
        hp, wp = query.gray.shape
        groups.append([(float(x), float(y), side)
                       for y in np.linspace(p * 0.3, hp - side - p * 0.3, 3)
                       for x in np.linspace(p * 0.3, wp - side - p * 0.3, 3)
                       if 0 <= x <= wp - side and 0 <= y <= hp - side])
    return [g for g in groups if g]


OUTLINE_PROPOSALS = 6
OUTLINE_MIN_FRACTION = 0.5
OUTLINE_BORDER_EDGE = 255.0
"""Edge strength credited to the crop's own border (a logo touching or cut by it)."""
OUTLINE_SNAP = 3
"""The best outline windows that also get ±1 px / ±2 px variants among the retrieval windows."""


def snapped_windows(window: Window) -> list[list[Window]]:
    """Return ``window`` and its 1 px shifts and 2 px size changes, grouped by size."""
    x, y, side = window
    return [[(x + dx - d, y + dy - d, side + 2 * d) for dy in (-1, 0, 1) for dx in (-1, 0, 1)]
            for d in (-1, 0, 1)]


def edge_maps(query: Query) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(ex, ey)``: step-edge strength between columns / rows of the crop (not padding).

    ``ex[y, x]`` is the (colour) difference between columns ``x - 1`` and ``x`` at row ``y``
    (``x`` in ``0..W``), ``ey[y, x]`` likewise between rows; the crop's own borders count as
    strong edges, so a logo cut by the crop or touching it still has its outline.
    """
    p = query.pad
    img = (query.rgb if query.rgb is not None else query.gray)[p:-p, p:-p]
    if img.ndim == 2:
        img = img[..., None]
    dx = np.abs(np.diff(img, axis=1)).max(axis=2)
    dy = np.abs(np.diff(img, axis=0)).max(axis=2)
    h, w = img.shape[:2]
    border = np.float32(OUTLINE_BORDER_EDGE)
    ex = np.empty((h, w + 1), np.float32)
    ex[:, 0] = ex[:, w] = border
    # an edge blurred over two pixels by resampling still counts fully at either pixel
    ex[:, 1:w] = dx
    ex[:, 1:w - 1] = np.maximum(dx[:, :-1], dx[:, 1:]) if w > 2 else dx
    ey = np.empty((h + 1, w), np.float32)
    ey[0] = ey[h] = border
    ey[1:h] = dy
    ey[1:h - 1] = np.maximum(dy[:-1], dy[1:]) if h > 2 else dy
    return ex, ey


def outline_windows(query: Query, count: int = OUTLINE_PROPOSALS) -> list[Window]:
    """Return up to ``count`` square windows whose four sides lie on strong step edges.

    A logo is a square on its own flat background, so in a crop its outline is a square of
    edges (or the crop's border). Every square of at least ``OUTLINE_MIN_FRACTION`` of the short
    side is scored, with running sums, by the mean edge strength of its weakest side; the best
    ones (overlapping ones suppressed) are returned in padded coordinates.
    """
    ex, ey = edge_maps(query)
    h, w = ey.shape[0] - 1, ex.shape[1] - 1
    cx = np.concatenate([np.zeros((1, w + 1), np.float32), np.cumsum(ex, axis=0)], axis=0)
    cy = np.concatenate([np.zeros((h + 1, 1), np.float32), np.cumsum(ey, axis=1)], axis=1)
    found: list[tuple[float, int, int, int]] = []
    for side in range(max(4, int(min(h, w) * OUTLINE_MIN_FRACTION)), min(h, w) + 1):
        horiz = (cy[:, side:] - cy[:, :-side]) / side  # (h + 1, w - side + 1): row segments
        vert = (cx[side:, :] - cx[:-side, :]) / side  # (h - side + 1, w + 1): column segments
        top, bottom = horiz[:h - side + 1], horiz[side:]
        left, right = vert[:, :w - side + 1], vert[:, side:]
        score = np.minimum(np.minimum(top, bottom), np.minimum(left, right))
        y, x = np.unravel_index(int(np.argmax(score)), score.shape)
        found.append((float(score[y, x]), int(x), int(y), side))
    found.sort(key=lambda t: (-t[0], -t[3], t[1], t[2]))
    out: list[Window] = []
    p = query.pad
    for _, x, y, side in found:
        if all(abs(x + p - ox) + abs(y + p - oy) + abs(side - os_) > 0.06 * side
               for ox, oy, os_ in out):
            out.append((float(x + p), float(y + p), float(side)))
        if len(out) == count:
            break
    return out


def refined_windows(window: Window, shape: tuple[int, ...], scale: float, shift: float
                    ) -> list[list[Window]]:
    """Return windows around ``window``: side x (1 ± ``scale``), centre ± ``shift`` x side."""
    h, w = shape[:2]
    x0, y0, side0 = window
    cx, cy = x0 + side0 / 2, y0 + side0 / 2
    groups = []
    for f in REFINE_SCALES:
        side = min(side0 * (1.0 + f * scale), float(min(h, w)))
        step = side0 * shift
        groups.append([(min(max(cx - side / 2 + dx * step, 0.0), w - side),
                        min(max(cy - side / 2 + dy * step, 0.0), h - side), side)
                       for dy in REFINE_SHIFTS for dx in REFINE_SHIFTS])
    return groups


def window_pixels(image: np.ndarray, groups: list[list[Window]], size: int,
                  blur: float = DESCRIPTOR_BLUR) -> np.ndarray:
    """Return the raw ``size``² (x channels) samples of square windows, one row per window.

    All windows of a group share a side: each group costs one resize of the whole image by
    exactly ``size / side`` (so that its windows become ``size`` pixels), one small blur and a
    vectorized bilinear gather at each window's sub-pixel origin (snapping origins to whole
    pixels would misalign the descriptor by up to 2 %, enough to change rankings).
    """
    rows = []
    for group in groups:
        f = size / group[0][2]
        scaled = _soften(cv2.resize(image, None, fx=f, fy=f,
                                    interpolation=cv2.INTER_AREA if f < 1 else cv2.INTER_LINEAR),
                         blur)
        sh, sw = scaled.shape[:2]
        if sh < size + 1 or sw < size + 1:
            grow_y, grow_x = max(0, size + 1 - sh), max(0, size + 1 - sw)
            scaled = cv2.copyMakeBorder(scaled, 0, grow_y, 0, grow_x, cv2.BORDER_REPLICATE)
            sh, sw = scaled.shape[:2]
        sx = np.clip(np.array([g[0] for g in group], np.float32) * f, 0, sw - size - 1)
        sy = np.clip(np.array([g[1] for g in group], np.float32) * f, 0, sh - size - 1)
        ix, iy = np.floor(sx).astype(int), np.floor(sy).astype(int)
        ax = (sx - ix).reshape(-1, 1, 1, *([1] if scaled.ndim == 3 else []))
        ay = (sy - iy).reshape(ax.shape)
        patch = window_gather(scaled, ix, iy, size + 1)
        top = patch[:, :-1, :-1] + ax * (patch[:, :-1, 1:] - patch[:, :-1, :-1])
        bottom = patch[:, 1:, :-1] + ax * (patch[:, 1:, 1:] - patch[:, 1:, :-1])
        rows.append((top + ay * (bottom - top)).reshape(len(group), -1))
    return np.concatenate(rows).astype(np.float32)


def window_gather(image: np.ndarray, ix: np.ndarray, iy: np.ndarray, side: int) -> np.ndarray:
    """Return the ``side``-square windows of ``image`` at top-lefts ``(ix, iy)``, stacked.

    Shape ``(n, side, side)`` (and ``image``'s channels): one gather of the windows' rows and
    columns (the pixels a sliding-window view would give, without building the view).
    """
    offsets = np.arange(side)
    rows, cols = iy[:, None] + offsets, ix[:, None] + offsets
    return image[rows[:, :, None], cols[:, None, :]]


def window_descriptors(gray: np.ndarray, groups: list[list[Window]], size: int,
                       blur: float = DESCRIPTOR_BLUR) -> np.ndarray:
    """Return the normalized ``size``² gray descriptors of square windows."""
    return normalize_rows(window_pixels(gray, groups, size, blur))


REFINE_CENTRES = 4


def refine_centres(best_win: list[Window], scores: np.ndarray) -> list[Window]:
    """Return up to ``REFINE_CENTRES`` distinct windows to refine around.

    ``best_win`` holds each candidate's best window; those of the best-scoring come first.
    """
    out: list[Window] = []
    for k in np.argsort(-scores, kind="stable"):
        w = best_win[int(k)]
        if w not in out:
            out.append(w)
        if len(out) == REFINE_CENTRES:
            break
    return out


def match_logos(image: np.ndarray, index: LogoIndex) -> tuple[np.ndarray, np.ndarray]:
    """Match a query image against every logo; return ``(logo indices, scores)``, best first.

    1. *Retrieval*: square windows of 60–100 % of the query's short side (5×5 positions), of
       100–106 % reaching past the crop's edges, and the query's best square outlines
       (:func:`outline_windows`, the best ones also shifted by ±1 px and resized by ±2 px), at
       ``COARSE_SIZE``² against every logo in one matrix product; the ``MATCH_CANDIDATES``
       best logos are kept.
    2. *Alignment*: around the best windows of the ``MATCH_REFINE`` best candidates (at most
       ``REFINE_CENTRES`` distinct ones) windows ±6 % then ±2 % in size and position are
       compared at ``DESCRIPTOR_SIZE``²; each candidate keeps its best window and correlation.
    3. *Ranking*: that gray correlation, plus ``COLOUR_WEIGHT`` times the colour correlation at
       the candidate's window when the query has colour.

    Scores are normalized correlations (colour queries: their weighted sum); the candidates not
    refined follow with their retrieval scores capped below the refined ones. Deterministic;
    all windows are sampled at sub-pixel accuracy (:func:`window_pixels`).
    """
    query = reduced_query(image)
    outlines = outline_windows(query)
    groups = coarse_windows(query) + [[w] for w in outlines[OUTLINE_SNAP:]]
    groups += [g for w in outlines[:OUTLINE_SNAP] for g in snapped_windows(w)]
    hp, wp = query.gray.shape
    groups = [[(min(max(x, 0.0), wp - sd), min(max(y, 0.0), hp - sd), sd) for x, y, sd in g]
              for g in groups if g[0][2] <= min(hp, wp)]
    windows = [w for g in groups for w in g]
    per_window = window_descriptors(query.gray, groups, COARSE_SIZE, COARSE_BLUR) @ index.coarse.T
    best_coarse = per_window.max(axis=0)
    top = np.argsort(-best_coarse, kind="stable")[:MATCH_CANDIDATES]
    cand = top[:MATCH_REFINE]
    best_win = [windows[int(i)] for i in per_window[:, cand].argmax(axis=0)]
    fine = index.fine[cand].T
    scores = np.full(len(cand), -1.0, np.float32)
    for scale, shift in REFINE_STEPS:
        centres = refine_centres(best_win, scores if scores.max() > -1.0
                                 else per_window[:, cand].max(axis=0))
        groups = [g for c in centres for g in refined_windows(c, query.gray.shape, scale, shift)]
        windows = [w for g in groups for w in g]
        per_window = window_descriptors(query.gray, groups, DESCRIPTOR_SIZE) @ fine
        arg = per_window.argmax(axis=0)
        better = per_window[arg, np.arange(len(cand))] > scores
        scores = np.where(better, per_window[arg, np.arange(len(cand))], scores)
        best_win = [windows[int(a)] if b else w for a, b, w in zip(arg, better, best_win)]
    if query.rgb is not None:
        centres = list(dict.fromkeys(best_win))
        groups = [[c] for c in centres]
        colour = normalize_colour_rows(window_pixels(query.rgb, groups, COLOUR_SIZE))
        row = {c: i for i, c in enumerate(centres)}
        per_cand = np.einsum("kd,kd->k", colour[[row[w] for w in best_win]],
                             index.colour[cand])
        scores = scores + COLOUR_WEIGHT * per_cand
    order = np.argsort(-scores, kind="stable")
    rest = top[MATCH_REFINE:]
    floor = float(scores.min()) if len(scores) else 0.0
    rest_scores = np.minimum(best_coarse[rest], floor - 1e-3)
    return (np.concatenate([cand[order], rest]),
            np.concatenate([scores[order], rest_scores]).astype(np.float32))
