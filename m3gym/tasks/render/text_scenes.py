"""Drawing shared by the text families: plates of stacked field codes, pasted in perspective.

A *field plate* is a sticker, tag or label holding rows of ``NAME  CODE`` (``REF K7-4F2``),
stacked one line every 1.2 glyph heights, with an optional strip on its left (a tiny barcode or
a coloured tab). :func:`draw_field_plate` draws it flat on its own patch, with the ink of every
code kept as a layer; :func:`paste_plate` pastes the patch into a scene through a homography
(:func:`~m3gym.tasks.render.camera.perspective_quad`) and returns where each code's ink landed.
"""

from __future__ import annotations

from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.tasks.render.camera import warp_alpha, warp_patch
from m3gym.tasks.render.text import TextPatch, paste_text
from m3gym.tasks.render.util import Box, Color, solid_image

ROW_GAP: float = 0.2
"""Gap between two stacked rows, in glyph heights (the rows nearly touch at view size)."""


@dataclass(frozen=True)
class PlateLayout:
    """Geometry of a field plate: its size and where its rows go (patch pixels)."""

    size: tuple[int, int]
    pad: int
    strip_w: int
    value_x: int
    step: int


@dataclass(frozen=True)
class FlatPlate:
    """A field plate drawn flat: RGB patch, and each code's box and ink mask in patch pixels."""

    rgb: np.ndarray
    value_boxes: tuple[Box, ...]
    value_masks: tuple[np.ndarray, ...]


def plate_layout(rows: list[tuple[TextPatch, TextPatch]], glyph: float,
                 strip_w: int, margin: float = 0.8, row_gap: float = ROW_GAP) -> PlateLayout:
    """Return the layout of a plate holding ``rows`` (name, code) with a ``strip_w`` left strip.

    The plate's outer margin is ``margin`` glyph heights (at least 4 px); two rows are
    ``row_gap`` glyph heights apart.
    """
    if not rows:
        raise ValueError("a field plate needs at least one row")
    pad = max(4, int(glyph * margin))
    name_w = max(n.size[0] for n, _ in rows)
    value_x = pad + (strip_w + pad if strip_w else 0) + name_w + max(3, int(glyph * 0.6))
    gap = max(1, round(glyph * row_gap))
    step = max(max(n.size[1], v.size[1]) for n, v in rows) + gap
    w = value_x + max(v.size[0] for _, v in rows) + pad
    h = step * len(rows) - gap + 2 * pad
    return PlateLayout((w, h), pad, strip_w, value_x, step)


def draw_barcode(patch: np.ndarray, rng: np.random.Generator, box: Box, ink: Color) -> None:
    """Draw random 1-2 px bars of ``ink`` inside ``box`` of ``patch`` (in place)."""
    x0, y0, x1, y1 = box
    bx = x0
    for i, bw in enumerate(rng.integers(1, 3, size=max(2, (x1 - x0) // 2))):
        if bx + int(bw) > x1:
            break
        if i % 2 == 0:
            cv2.rectangle(patch, (bx, y0), (bx + int(bw) - 1, y1 - 1), ink, -1)
        bx += int(bw)


def draw_field_plate(
    rows: list[tuple[TextPatch, TextPatch]], glyph: float, plate: Color, ink: Color,
    strip_w: int = 0, name_ink: Color | None = None, frame: bool = True, margin: float = 0.8,
    row_gap: float = ROW_GAP,
) -> tuple[FlatPlate, PlateLayout]:
    """Draw a plate of colour ``plate`` with ``rows`` in ``ink`` (names in ``name_ink``).

    The left strip (``strip_w`` px, e.g. a barcode or a tab) is left in the plate colour for the
    caller to fill; with ``frame`` a 1-px darker edge frames the plate (leave it off where an
    autocontrast of a crop must see only plate and ink; a wider ``margin`` keeps the scene
    out of a crop of an edge row too; ``row_gap``: see :func:`plate_layout`).
    """
    lay = plate_layout(rows, glyph, strip_w, margin, row_gap)
    w, h = lay.size
    rgb = solid_image(h, w, plate)
    if frame:
        cv2.rectangle(rgb, (0, 0), (w - 1, h - 1), tuple(int(c * 0.7) for c in plate), 1)
    name_x = lay.pad + (strip_w + lay.pad if strip_w else 0)
    boxes, masks = [], []
    for k, (name, value) in enumerate(rows):
        y = lay.pad + k * lay.step
        line_h = max(name.size[1], value.size[1])
        paste_text(rgb, name, name_x, y + line_h - name.size[1], name_ink or ink)
        placed = paste_text(rgb, value, lay.value_x, y + line_h - value.size[1], ink)
        boxes.append(placed.box)
        masks.append(placed.mask)
    return FlatPlate(rgb, tuple(boxes), tuple(masks)), lay


def turn_plate(flat: FlatPlate, quarter: int) -> FlatPlate:
    """Return ``flat`` turned ``quarter`` times counter-clockwise (lossless ``np.rot90``)."""
    k = quarter % 4
    if k == 0:
        return flat
    h, w = flat.rgb.shape[:2]
    boxes, masks = [], []
    for (x0, y0, x1, y1), m in zip(flat.value_boxes, flat.value_masks):
        layer = np.zeros((h, w), bool)
        layer[y0:y1, x0:x1] = m
        turned = np.rot90(layer, k)
        ys, xs = np.nonzero(turned)
        box = (int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1)
        boxes.append(box)
        masks.append(np.ascontiguousarray(turned[box[1]:box[3], box[0]:box[2]]))
    return FlatPlate(np.ascontiguousarray(np.rot90(flat.rgb, k)), tuple(boxes), tuple(masks))


def paste_plate(
    img: np.ndarray, flat: FlatPlate, quad: np.ndarray,
) -> tuple[Box, list[tuple[Box, np.ndarray]]]:
    """Paste ``flat`` onto ``quad`` of ``img`` (in place); return its box and each code's ink.

    Each code comes back as its pixel box in ``img`` and its ink mask (coverage >= 50 % after the
    warp; mask shape = box shape).
    """
    h, w = flat.rgb.shape[:2]
    box, _ = warp_patch(img, flat.rgb, None, quad)
    out = []
    for (x0, y0, x1, y1), m in zip(flat.value_boxes, flat.value_masks):
        layer = np.zeros((h, w), np.uint8)
        layer[y0:y1, x0:x1] = m.astype(np.uint8) * 255
        ink = warp_alpha(layer, quad, box) >= 128
        ys, xs = np.nonzero(ink)
        if ys.size == 0:
            raise ValueError("a code of the plate left the image")
        vb = (box[0] + int(xs.min()), box[1] + int(ys.min()),
              box[0] + int(xs.max()) + 1, box[1] + int(ys.max()) + 1)
        out.append((vb, ink[vb[1] - box[1]:vb[3] - box[1], vb[0] - box[0]:vb[2] - box[0]]))
    return box, out
