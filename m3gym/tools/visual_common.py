"""What every image tool shares: output size limits, source lookup, LUT, histogram and resize.

The tools themselves are in :mod:`m3gym.tools.geometric` (crop, rotate, flip, resize) and
:mod:`m3gym.tools.photometric` (the pixel-value ops); :mod:`m3gym.tools.visual` holds their
specs and the conventions they follow.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from m3gym.tools.base import ToolContext, ToolError

MAX_SIDE = 8192
"""Largest side, in pixels, a geometric tool may produce."""

MAX_PIXELS = 4096 * 4096
"""Largest pixel count (width x height) a geometric tool may produce (48 MiB as RGB)."""


def lowered(value: Any) -> Any:
    """Lower-case and strip strings so enum arguments are case-insensitive."""
    return value.strip().lower() if isinstance(value, str) else value


def source_pixels(ctx: ToolContext, index: int) -> np.ndarray:
    """Return the pixels of image ``index`` (raises a precise ToolError for a bad index)."""
    return ctx.image(index).array


def size_text(array: np.ndarray) -> str:
    """Return ``"WxH"`` of an image array."""
    return f"{array.shape[1]}x{array.shape[0]}"


def check_output_size(width: int, height: int, what: str) -> None:
    """Raise :class:`ToolError` when a ``width x height`` output is empty or too large."""
    if width < 1 or height < 1:
        raise ToolError(f"{what} would give a {width}x{height} image; the result needs at least "
                        "1 pixel in each direction")
    if width > MAX_SIDE or height > MAX_SIDE:
        raise ToolError(f"{what} would give a {width}x{height} image; the largest allowed side "
                        f"is {MAX_SIDE} px")
    if width * height > MAX_PIXELS:
        raise ToolError(f"{what} would give a {width}x{height} image ({width * height} px); the "
                        f"largest allowed image has {MAX_PIXELS} px")


def apply_lut(src: np.ndarray, lut: np.ndarray) -> np.ndarray:
    """Apply a 256-entry lookup table (one for all channels, or ``(C, 256)`` per channel)."""
    if lut.ndim == 1:
        return cv2.LUT(src, lut)
    # Per-channel tables: cv2.LUT takes a (1, 256, C) table for a C-channel image.
    return cv2.LUT(src, np.ascontiguousarray(lut.T.reshape(1, 256, lut.shape[0])))


def channel_histograms(src: np.ndarray) -> np.ndarray:
    """Return the ``(C, 256)`` int64 histogram of every channel (C = 1 for grayscale)."""
    channels = 1 if src.ndim == 2 else src.shape[2]
    hists = [cv2.calcHist([src], [c], None, [256], [0, 256]).ravel() for c in range(channels)]
    return np.rint(np.stack(hists)).astype(np.int64)


def resize_to(src: np.ndarray, width: int, height: int) -> np.ndarray:
    """Resize with INTER_AREA when shrinking and INTER_CUBIC when enlarging (exact copy if same)."""
    h, w = src.shape[:2]
    if (width, height) == (w, h):
        return np.ascontiguousarray(src)
    shrink = width * height < w * h
    interp = cv2.INTER_AREA if shrink else cv2.INTER_CUBIC
    return cv2.resize(src, (width, height), interpolation=interp)
