"""The agent's view: images are shown downscaled so that their longest side is ``view_size``.

Tools always work at full resolution; observations, legibility checks (``v_true``) and task
generators all use the scale defined here.

:func:`to_view` approximates OpenCV's ``INTER_AREA`` (the exact area average) at a fraction of its
cost: ``INTER_AREA`` at a non-integer factor takes 7–17 ms on a 1–3 MP image, while an
integer-factor ``INTER_AREA`` (block means) followed by one ``INTER_LINEAR`` for the remaining
factor (< 2) takes 0.5–1.3 ms. Below factor 2 a bilinear sample weighs the same two or three
source pixels as the area average with weights within about 0.1 of it (exactly equal at factor
2), so the result stays within a small error of ``INTER_AREA`` (mean absolute error about one grey
level on text images; see ``tests/test_view.py``). ``v_true`` measurements do not read views:
:mod:`m3gym.scoring.checkpoints` shrinks evidence regions with ``INTER_AREA`` itself.
"""

from __future__ import annotations

import cv2
import numpy as np

VIEW_SIZE: int = 768
"""Default longest side, in pixels, at which the agent sees an image."""


def view_scale(height: int, width: int, view_size: int = VIEW_SIZE) -> float:
    """Return the factor (≤ 1) an image of ``height × width`` is scaled by when shown."""
    return min(1.0, view_size / max(height, width, 1))


def view_shape(height: int, width: int, view_size: int) -> tuple[int, int]:
    """Return the ``(height, width)`` an image of that size is shown at."""
    scale = view_scale(height, width, view_size)
    if scale >= 1.0:
        return height, width
    return max(1, round(height * scale)), max(1, round(width * scale))


def block_factor(height: int, width: int, out_h: int, out_w: int) -> int:
    """Return the integer factor ``k`` (≥ 1) of the block-mean step of :func:`area_downscale`.

    ``k = floor(min(height / out_h, width / out_w))``: the largest block size that does not
    shrink either side below its target, so the remaining bilinear step shrinks by less than 2.
    """
    return max(1, int(min(height / max(out_h, 1), width / max(out_w, 1))))


def area_downscale(array: np.ndarray, out_h: int, out_w: int) -> np.ndarray:
    """Return ``array`` shrunk to ``out_h × out_w``: a fast approximation of ``INTER_AREA``.

    Block means over ``k × k`` pixels (``INTER_AREA`` at an integer factor, its fast path), then
    one ``INTER_LINEAR`` resize by the remaining factor (< 2). The bilinear step maps coordinates
    with the exact overall factors (``fx = out_w · k / width``), so no drift builds up across the
    image; when ``k`` does not divide a side, the last partial block (fewer than ``k`` pixels) is
    the replicated last full block, which only touches the last output row or column. Equal to
    ``INTER_AREA`` when the factor is an integer; an image already at the target size is returned
    as is.
    """
    h, w = array.shape[:2]
    if (h, w) == (out_h, out_w):
        return array
    k = block_factor(h, w, out_h, out_w)
    if k < 2:
        return cv2.resize(array, (out_w, out_h), interpolation=cv2.INTER_LINEAR)
    bh, bw = h // k, w // k
    blocks = cv2.resize(array[:bh * k, :bw * k], (bw, bh), interpolation=cv2.INTER_AREA)
    pad_h, pad_w = int(bh * k < h), int(bw * k < w)
    if (bh, bw, pad_h, pad_w) == (out_h, out_w, 0, 0):
        return blocks
    if pad_h or pad_w:
        blocks = cv2.copyMakeBorder(blocks, 0, pad_h, 0, pad_w, cv2.BORDER_REPLICATE)
    out = cv2.resize(blocks, None, fx=out_w * k / w, fy=out_h * k / h,
                     interpolation=cv2.INTER_LINEAR)
    return out[:out_h, :out_w]


def to_view(array: np.ndarray, view_size: int) -> np.ndarray:
    """Return ``array`` as RGB at the agent's view resolution (longest side ≤ ``view_size``).

    The result is read-only and C-contiguous; an RGB image already small enough is returned
    without a copy (a read-only view of it when it is contiguous). Grayscale images are shrunk
    first and expanded to RGB at view size (the same pixels, a third of the work).
    """
    h, w = array.shape[:2]
    vh, vw = view_shape(h, w, view_size)
    out = area_downscale(array, vh, vw)
    if out.ndim == 2:
        out = cv2.cvtColor(out, cv2.COLOR_GRAY2RGB)
    out = np.ascontiguousarray(out)
    if out.flags.writeable:
        out = out.view() if out is array else out
        out.setflags(write=False)
    return out


_FLIP_CODES = {"horizontal": 1, "vertical": 0, "both": -1}
_QUARTER_TURNS = {1: cv2.ROTATE_90_COUNTERCLOCKWISE, 2: cv2.ROTATE_180,
                  3: cv2.ROTATE_90_CLOCKWISE}


def derived_view(op: str, args: dict, parent_view: np.ndarray,
                 view_hw: tuple[int, int]) -> np.ndarray | None:
    """Return the view of an image made by ``op`` from the parent's view, or ``None``.

    Flips, quarter turns (lossless ``rotate``), ``invert`` and ``grayscale`` commute with the
    downscale up to rounding (lossless rearrangements, or pointwise affine maps of the pixel
    values): applying them to the parent's view (a few hundred thousand pixels) gives the child's
    view within one grey level (two for ``grayscale``) of :func:`to_view` on the child, at a
    fraction of the cost. ``view_hw`` is the child's view shape; any other op, or a shape that
    does not match (e.g. a quarter turn on a kept canvas), gives ``None``.
    """
    out: np.ndarray | None = None
    if op == "flip":
        code = _FLIP_CODES.get(str(args.get("direction", "horizontal")))
        out = None if code is None else cv2.flip(parent_view, code)
    elif op == "rotate":
        quarter = float(args.get("angle", 0.0)) % 360.0 / 90.0
        k = round(quarter) % 4
        if abs(quarter - round(quarter)) < 1e-9:
            out = parent_view.copy() if k == 0 else cv2.rotate(parent_view, _QUARTER_TURNS[k])
    elif op == "invert":
        out = cv2.bitwise_not(parent_view)
    elif op == "grayscale":
        out = cv2.cvtColor(cv2.cvtColor(parent_view, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)
    if out is None or out.shape[:2] != tuple(view_hw):
        return None
    out.setflags(write=False)
    return out
