"""Plane geometry every layer shares: 0–1000 boxes, pixel boxes, IoU and 2x3 affine maps.

One definition of each mapping, at the bottom of the package, so that the tools, the task
builders, the agents, the sandbox and scoring agree to the pixel:

* **The 0–1000 ``bbox_2d`` scale.** ``(0, 0)`` is the top-left corner of an image and
  ``(1000, 1000)`` its bottom-right corner, whatever its pixel size. The crop tool turns a
  ``bbox_2d`` into integer pixel edges with :func:`bbox1000_to_box`, which **rounds outward** (the
  left/top edge down, the right/bottom edge up, with a :data:`EDGE_EPS` slack so that float noise
  such as ``290 * 100 / 1000 = 28.999…`` does not add a pixel) and clips to the image.
  :func:`box_to_bbox1000` goes the other way: it returns integers whose crop contains the pixel
  box.
* **Pixel coordinates are continuous:** pixel ``(i, j)`` covers ``[j, j+1) x [i, i+1)``, an image
  spans ``[0, W] x [0, H]``, and a box is ``(x0, y0, x1, y1)`` with exclusive right/bottom edges.
* **Affines** are read-only float64 ``2x3`` arrays mapping ``(x, y)`` column vectors.

One copy lives elsewhere, on purpose: the code-mode worker (:mod:`m3gym.sandbox.traced`) composes
its lineages' affines as plain 6-tuples ``(a, b, c, d, e, f)`` with its own ``compose``,
``rotation_affine``, ``quarter_turn``, ``flip_affine`` and ``scale_affine``. The worker runs as a
script inside bubblewrap that mounts only ``m3gym/sandbox/`` (never the package, which holds the
task data), so it cannot import this module; its affines cross the protocol as JSON lists.
``tests/sandbox/test_traced.py`` pins those helpers to the ones here (composition, rotations, the
quarter turns exactly, flips and scales).

Pure ``math`` and ``numpy``: nothing here imports another ``m3gym`` module.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np

Box = tuple[int, int, int, int]
"""An integer pixel box ``(x0, y0, x1, y1)``; ``x1``/``y1`` are exclusive edges."""

FloatBox = tuple[float, float, float, float]
"""A pixel box ``(x0, y0, x1, y1)`` in continuous coordinates."""

EDGE_EPS: float = 1e-9
"""Slack, in pixels, under which a mapped edge counts as lying on the integer next to it."""

BBOX_SCALE: int = 1000
"""The side of the normalised ``bbox_2d`` scale (0–1000)."""

IDENTITY_AFFINE: np.ndarray = np.array([[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]])
IDENTITY_AFFINE.setflags(write=False)


# --------------------------------------------------------------------------------------------
# 0–1000 bbox_2d <-> pixels


def bbox1000_edges(bbox: Sequence[float], width: int, height: int) -> FloatBox:
    """Return the continuous pixel edges ``(x0, y0, x1, y1)`` of a 0–1000 ``bbox_2d``."""
    return (bbox[0] * width / 1000, bbox[1] * height / 1000,
            bbox[2] * width / 1000, bbox[3] * height / 1000)


def bbox1000_to_box(bbox: Sequence[float], width: int, height: int) -> Box:
    """Return the integer pixel box the crop tool takes for a 0–1000 ``bbox_2d``.

    The edges of :func:`bbox1000_edges` are rounded outward (left/top down, right/bottom up; an
    edge within :data:`EDGE_EPS` of an integer counts as that integer) and clipped to the
    ``width`` x ``height`` image. No size check: the crop tool refuses boxes under one pixel.
    """
    fx0, fy0, fx1, fy1 = bbox1000_edges(bbox, width, height)
    return (max(0, math.floor(fx0 + EDGE_EPS)), max(0, math.floor(fy0 + EDGE_EPS)),
            min(width, math.ceil(fx1 - EDGE_EPS)), min(height, math.ceil(fy1 - EDGE_EPS)))


def bbox1000_spans_a_pixel(bbox: Sequence[float], width: int, height: int) -> bool:
    """Return whether a 0–1000 ``bbox_2d`` spans at least one pixel each way.

    Within :data:`EDGE_EPS`: the crop tool refuses a box that does not.
    """
    fx0, fy0, fx1, fy1 = bbox1000_edges(bbox, width, height)
    return not (fx1 - fx0 < 1 - EDGE_EPS or fy1 - fy0 < 1 - EDGE_EPS)


def exact_bbox1000(box: Sequence[int], width: int, height: int) -> list[float]:
    """Return a 0–1000 ``bbox_2d`` that the crop tool maps back to exactly the pixel ``box``.

    The values rounded to 3 decimals when those still map back to ``box`` (and span a pixel),
    else the unrounded ``k * 1000 / side``.
    """
    exact = [box[0] * 1000 / width, box[1] * 1000 / height,
             box[2] * 1000 / width, box[3] * 1000 / height]
    short = [round(v, 3) for v in exact]
    target = tuple(int(v) for v in box)
    if (bbox1000_spans_a_pixel(short, width, height)
            and bbox1000_to_box(short, width, height) == target):
        return short
    return exact


def box_to_bbox1000(box: Sequence[float], width: int, height: int) -> list[int]:
    """Return pixel ``box`` as an integer 0–1000 ``bbox_2d`` whose crop contains it.

    Each edge is rounded outward on the 0–1000 scale and clipped to ``[0, 1000]``. Because
    ``k / 1000 * side`` can land a hair below an integer (``290 / 1000 * 100 = 28.999…``), each
    edge is then widened one unit at a time until even *truncating* ``k / 1000 * side`` reaches
    the pixel edge. That is stricter than the crop tool's outward rounding, so
    ``bbox1000_to_box(box_to_bbox1000(box))`` contains ``box`` (the property tests pin it).
    """
    x0, y0, x1, y1 = box
    bx0, by0 = max(0, math.floor(x0 * 1000 / width)), max(0, math.floor(y0 * 1000 / height))
    bx1, by1 = min(1000, math.ceil(x1 * 1000 / width)), min(1000, math.ceil(y1 * 1000 / height))
    while bx1 < 1000 and int(bx1 / 1000 * width) < x1:
        bx1 += 1
    while by1 < 1000 and int(by1 / 1000 * height) < y1:
        by1 += 1
    while bx0 > 0 and int(bx0 / 1000 * width) > x0:
        bx0 -= 1
    while by0 > 0 and int(by0 / 1000 * height) > y0:
        by0 -= 1
    return [bx0, by0, bx1, by1]


# --------------------------------------------------------------------------------------------
# boxes


def grow_box(box: Sequence[float], margin: float, width: int, height: int,
             margin_y: float | None = None) -> Box:
    """Return ``box`` grown by ``margin`` on every side, rounded outward and clipped.

    ``margin_y`` (default: ``margin``) grows the top and bottom edges instead of ``margin``.
    The result is clipped to the ``width`` x ``height`` image.
    """
    my = margin if margin_y is None else margin_y
    x0, y0, x1, y1 = box
    return (max(0, math.floor(x0 - margin)), max(0, math.floor(y0 - my)),
            min(width, math.ceil(x1 + margin)), min(height, math.ceil(y1 + my)))


def box_area(box: Sequence[float]) -> float:
    """Return the area of an ``[x1, y1, x2, y2]`` box (0 for an empty or inverted box)."""
    return max(0.0, box[2] - box[0]) * max(0.0, box[3] - box[1])


def box_iou(a: Sequence[float], b: Sequence[float]) -> float:
    """Return the IoU of two ``[x1, y1, x2, y2]`` boxes (1 for identical degenerate boxes)."""
    if tuple(a) == tuple(b):
        return 1.0
    iw = min(a[2], b[2]) - max(a[0], b[0])
    ih = min(a[3], b[3]) - max(a[1], b[1])
    if iw <= 0 or ih <= 0:
        return 0.0
    inter = iw * ih
    union = box_area(a) + box_area(b) - inter
    return inter / union if union > 0 else 0.0


def box_corners(box: Sequence[float]) -> np.ndarray:
    """Return the 4 corners ``(x, y)`` of an axis-aligned box, clockwise from top-left."""
    x0, y0, x1, y1 = box
    return np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], dtype=np.float64)


# --------------------------------------------------------------------------------------------
# affine maps


def affine_matrix(a: float, b: float, c: float, d: float, e: float, f: float) -> np.ndarray:
    """Return the read-only 2x3 affine ``[[a, b, c], [d, e, f]]`` as float64."""
    out = np.array([[a, b, c], [d, e, f]], dtype=np.float64)
    out.setflags(write=False)
    return out


def homogeneous(affine: np.ndarray) -> np.ndarray:
    """Return the 3x3 homogeneous form of a 2x3 affine (last row ``0 0 1``)."""
    full = np.empty((3, 3))
    full[:2] = affine
    full[2] = (0.0, 0.0, 1.0)
    return full


def compose_affine(outer: np.ndarray, inner: np.ndarray) -> np.ndarray:
    """Return the read-only 2x3 affine ``outer ∘ inner`` (apply ``inner`` first, then ``outer``).

    The 3x3 homogeneous product, without ``np.vstack``'s overhead: it runs on every geometric
    step.
    """
    out = (homogeneous(outer) @ homogeneous(inner))[:2]
    out.setflags(write=False)
    return out


def apply_affine(affine: np.ndarray, points: np.ndarray | Sequence[Sequence[float]]
                 ) -> np.ndarray:
    """Map an ``(N, 2)`` array of ``(x, y)`` points through a 2x3 affine map."""
    pts = np.asarray(points, dtype=np.float64).reshape(-1, 2)
    return pts @ affine[:, :2].T + affine[:, 2]


def mapped_extent(affine: np.ndarray, box: Sequence[float]) -> FloatBox:
    """Return the axis-aligned extent ``(x_lo, y_lo, x_hi, y_hi)`` of ``box`` mapped by ``affine``.

    Plain float arithmetic on the four corners (this runs on every new image of every step).
    """
    (a, b, tx), (c, d, ty) = affine.tolist()
    x0, y0, x1, y1 = box
    xs = [a * x + b * y + tx for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))]
    ys = [c * x + d * y + ty for x, y in ((x0, y0), (x1, y0), (x1, y1), (x0, y1))]
    return min(xs), min(ys), max(xs), max(ys)


def rotation_affine(angle_deg: float, width: int, height: int, out_width: int,
                    out_height: int) -> np.ndarray:
    """Return the map rotating ``angle_deg`` counter-clockwise about the image centre.

    The source centre ``(W/2, H/2)`` goes to the output centre ``(out_width/2, out_height/2)``;
    multiples of 90 degrees (within :data:`EDGE_EPS`) use exact cosines and sines.
    """
    quarter = angle_deg / 90.0
    if abs(quarter - round(quarter)) < EDGE_EPS:
        cos, sin = [(1.0, 0.0), (0.0, 1.0), (-1.0, 0.0), (0.0, -1.0)][round(quarter) % 4]
    else:
        rad = math.radians(angle_deg)
        cos, sin = math.cos(rad), math.sin(rad)
    cx, cy, ox, oy = width / 2, height / 2, out_width / 2, out_height / 2
    # (dx, dy) -> (cos dx + sin dy, -sin dx + cos dy): counter-clockwise with y pointing down.
    return affine_matrix(cos, sin, ox - cos * cx - sin * cy, -sin, cos, oy + sin * cx - cos * cy)


def rotated_size(angle_deg: float, width: int, height: int) -> tuple[int, int]:
    """Return the ``(width, height)`` of the canvas that holds the whole rotated image.

    The canvas of Pillow's ``Image.rotate(angle, expand=True)``, the reference toolbox's rotate:
    the corners turned about the centre ``(W/2, H/2)`` with Pillow's cosines and sines (rounded
    to 15 decimals), then each side of their extent rounded outward (``ceil`` of the largest
    coordinate minus ``floor`` of the smallest); a multiple of 90 degrees swaps or keeps the
    sides exactly (Pillow transposes). That is one pixel wider than the tightest
    canvas when the extent straddles pixel edges on both sides (a 2487 x 1748 image at 30
    degrees: 3029 px, not 3028), so code mode's Pillow rotate and the rotate tool agree.
    """
    quarter = (angle_deg % 360.0) / 90.0
    if quarter in (0.0, 1.0, 2.0, 3.0):  # Pillow transposes: the sides swap or stay, exactly
        return (height, width) if quarter in (1.0, 3.0) else (width, height)
    rad = -math.radians(angle_deg)
    a, b = round(math.cos(rad), 15), round(math.sin(rad), 15)
    cx, cy = width / 2, height / 2
    tx, ty = -a * cx - b * cy + cx, b * cx - a * cy + cy
    corners = ((0, 0), (width, 0), (width, height), (0, height))
    xs = [a * x + b * y + tx for x, y in corners]
    ys = [-b * x + a * y + ty for x, y in corners]
    return (max(1, math.ceil(max(xs)) - math.floor(min(xs))),
            max(1, math.ceil(max(ys)) - math.floor(min(ys))))
