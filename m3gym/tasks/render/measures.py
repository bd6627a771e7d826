"""Measurements on images.

The project's :func:`ink_surround_contrast`, PIL's autocontrast (:func:`autocontrast_luts`,
:func:`autocontrast_pil`) and :func:`region_evidence` (:func:`~m3gym.pixels.to_gray` lives below
the task layer, in :mod:`m3gym.pixels`).
"""

from __future__ import annotations

import cv2
import numpy as np

from m3gym.pixels import to_gray
from m3gym.spec import Evidence
from m3gym.tasks.render.util import Box


def ink_surround_contrast(gray: np.ndarray, mask: np.ndarray) -> float:
    """Return ``|mean(ink) - mean(surround)|`` in gray levels for a region and its ink mask.

    The surround is the region minus the ink dilated by one pixel (3x3), so anti-aliased stroke
    edges count for neither side. Returns 0 when either side is empty.
    """
    g = to_gray(gray).astype(np.float32)
    ink = mask.astype(bool)
    near = cv2.dilate(ink.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    surround = ~near
    if not ink.any() or not surround.any():
        return 0.0
    return float(abs(g[ink].mean() - g[surround].mean()))



def autocontrast_luts(img: np.ndarray, cutoff: float = 0.0) -> np.ndarray:
    """Return the per-channel lookup tables of PIL's ``ImageOps.autocontrast(img, cutoff)``.

    For each channel, ``cutoff`` percent of the pixels are ignored at each end of the histogram
    and the remaining range is stretched linearly to 0..255 (PIL's exact integer arithmetic).
    Returns a ``uint8`` array ``(256, 1, C)`` usable with ``cv2.LUT`` (``C`` = 1 for gray).
    Applying the tables to a small region measures the op's effect without transforming the
    whole image.
    """
    channels = 1 if img.ndim == 2 else img.shape[2]
    luts = []
    for c in range(channels):
        hist = cv2.calcHist([np.ascontiguousarray(img)], [c], None, [256], [0, 256]).ravel()
        hist = hist.astype(np.int64)
        n = int(hist.sum())
        cut = int(n * float(cutoff) // 100)
        lo = int(np.searchsorted(np.cumsum(hist), cut, side="right"))
        hi = 255 - int(np.searchsorted(np.cumsum(hist[::-1]), cut, side="right"))
        if hi <= lo:
            luts.append(np.arange(256, dtype=np.uint8))
            continue
        scale = 255.0 / (hi - lo)
        ix = (np.arange(256, dtype=np.float64) * scale - lo * scale).astype(np.int64)
        luts.append(np.clip(ix, 0, 255).astype(np.uint8))
    return np.stack(luts, axis=1).reshape(256, 1, channels)



def autocontrast_pil(img: np.ndarray, cutoff: float = 0.0) -> np.ndarray:
    """Return ``img`` after PIL's ``ImageOps.autocontrast(img, cutoff)`` (per-channel LUTs)."""
    luts = autocontrast_luts(img, cutoff)
    return cv2.LUT(img, luts[:, :, 0] if img.ndim == 2 else luts)



def region_evidence(
    evidence_id: str, clean: np.ndarray, box: Box, mask: np.ndarray, *, text: str | None,
    glyph_height: float, image: int = 0, clean_is_region: bool = False,
) -> Evidence:
    """Return an :class:`Evidence` for ``box`` from an undegraded render.

    ``clean`` is the whole clean image (cropped here at ``box``) or, with ``clean_is_region``,
    already the region (e.g. an upright render of rotated evidence). ``mask`` is the ink mask
    with the region's shape. The stored arrays are read-only copies.
    """
    x0, y0, x1, y1 = box
    region = clean if clean_is_region else clean[y0:y1, x0:x1]
    gray = np.array(to_gray(region), dtype=np.uint8, copy=True)
    ink = np.array(mask, dtype=bool, copy=True)
    if gray.shape != ink.shape:
        raise ValueError(f"clean {gray.shape} and mask {ink.shape} differ")
    gray.setflags(write=False)
    ink.setflags(write=False)
    return Evidence(id=evidence_id, image=image, box=(float(x0), float(y0), float(x1), float(y1)),
                    text=text, glyph_height=float(glyph_height), clean=gray, mask=ink)



def freeze(img: np.ndarray) -> np.ndarray:
    """Return ``img`` as a contiguous read-only array (no copy when already contiguous)."""
    out = np.ascontiguousarray(img)
    out.setflags(write=False)
    return out
