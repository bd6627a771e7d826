"""The discrete wrapper's pixel observations: letterboxed images and the choices panel.

:func:`letterbox` fits an image into the square observation, :func:`render_choices` draws the
choice strings (``choices_obs="pixels"``) and :func:`encode_choices` one-hot encodes them
(``choices_obs="chars"``) for :class:`~m3gym.wrappers.discrete.DiscreteToolWrapper`.
"""

from __future__ import annotations

from collections.abc import Sequence

import cv2
import numpy as np


def letterbox(image: np.ndarray, size: int) -> np.ndarray:
    """Return ``image`` (RGB) shrunk/enlarged into a black ``size x size x 3`` square, centred.

    Large images are first subsampled by an integer stride (a free numpy view) down to about
    four times the target size, so the area filter only reads ~16 pixels per output pixel: the
    cost no longer grows with the source resolution.
    """
    h, w = image.shape[:2]
    stride = max(1, max(h, w) // (4 * size))
    if stride > 1:
        image = np.ascontiguousarray(image[::stride, ::stride])
        h, w = image.shape[:2]
    scale = size / max(h, w)
    nw, nh = max(1, round(w * scale)), max(1, round(h * scale))
    if (nw, nh) == (w, h):
        small = image  # already the right size (e.g. a crop zoomed to the view): no resampling
    else:
        interp = cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR
        small = cv2.resize(image, (nw, nh), interpolation=interp)
    if small.ndim == 2:
        small = cv2.cvtColor(small, cv2.COLOR_GRAY2RGB)
    out = np.zeros((size, size, 3), dtype=np.uint8)
    y0, x0 = (size - nh) // 2, (size - nw) // 2
    out[y0:y0 + nh, x0:x0 + nw] = small
    return out


def render_choices(choices: Sequence[str], size: int, max_choices: int) -> np.ndarray:
    """Return the choice strings drawn one per row (white on black) as ``(size, size, 1)``."""
    panel = np.zeros((size, size), dtype=np.uint8)
    row_h = size / max_choices
    scale = max(0.25, row_h / 30.0)
    for i, text in enumerate(choices[:max_choices]):
        baseline = int((i + 1) * row_h - max(1.0, row_h * 0.2))
        cv2.putText(panel, str(text), (1, baseline), cv2.FONT_HERSHEY_SIMPLEX, scale, 255, 1,
                    cv2.LINE_AA)
    return panel[:, :, None]


CHOICE_ALPHABET: str = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ-.:/ ?"
"""Symbols of the ``choices_obs="chars"`` encoding (letters case-folded; others become ``?``)."""

CHOICE_CHARS: int = 12
"""Characters per choice in the ``"chars"`` encoding (longer choices are cut)."""


def encode_choices(choices: Sequence[str], max_choices: int) -> np.ndarray:
    """Return the flat one-hot code of the choices (``float32``, axes choice, char, symbol).

    Length ``max_choices * CHOICE_CHARS * len(CHOICE_ALPHABET)``; reshape to those three axes to
    read it. Unused choices and positions are zero.
    """
    out = np.zeros((max_choices, CHOICE_CHARS, len(CHOICE_ALPHABET)), np.float32)
    unknown = len(CHOICE_ALPHABET) - 1
    for i, text in enumerate(list(choices)[:max_choices]):
        for j, ch in enumerate(str(text).upper()[:CHOICE_CHARS]):
            k = CHOICE_ALPHABET.find(ch)
            out[i, j, k if k >= 0 else unknown] = 1
    return out.reshape(-1)
