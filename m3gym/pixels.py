"""Pixel helpers shared by every layer (tools, scoring, the web corpus, the task renderers).

It sits below :mod:`m3gym.tasks` and :mod:`m3gym.web`, so that neither imports the other for a
colour conversion.
"""

from __future__ import annotations

import cv2
import numpy as np

__all__ = ["to_gray"]


def to_gray(img: np.ndarray) -> np.ndarray:
    """Return the 2-D gray version of a gray, 1-channel, RGB or RGBA image (the project's one).

    RGB uses the Rec. 601 luma ``0.299 R + 0.587 G + 0.114 B`` rounded (OpenCV's
    ``COLOR_RGB2GRAY``, the same as PIL's ``"L"``); RGBA ignores alpha. A 2-D input is returned
    as is, a 1-channel input as a view; a row-strided crop view is converted without a copy.
    """
    if img.ndim == 2:
        return img
    if img.ndim != 3 or img.shape[2] not in (1, 3, 4):
        raise ValueError(f"to_gray needs a gray, RGB or RGBA image, got shape {img.shape}")
    if img.shape[2] == 1:
        return img[:, :, 0]
    code = cv2.COLOR_RGBA2GRAY if img.shape[2] == 4 else cv2.COLOR_RGB2GRAY
    if img.strides[1] != img.shape[2] * img.itemsize:  # cv2 needs packed pixels
        img = np.ascontiguousarray(img)
    return cv2.cvtColor(img, code)
