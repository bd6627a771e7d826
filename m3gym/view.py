"""The agent's view: images are shown downscaled so that their longest side is ``view_size``.

Tools always work at full resolution; observations, legibility checks (``v_true``) and task
generators all use the scale defined here.
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


def to_view(array: np.ndarray, view_size: int) -> np.ndarray:
    """Return ``array`` as RGB at the agent's view resolution (longest side ≤ ``view_size``)."""
    if array.ndim == 2:
        array = cv2.cvtColor(array, cv2.COLOR_GRAY2RGB)
    h, w = array.shape[:2]
    vh, vw = view_shape(h, w, view_size)
    if (vh, vw) != (h, w):
        array = cv2.resize(array, (vw, vh), interpolation=cv2.INTER_AREA)
    array = np.ascontiguousarray(array)
    array.setflags(write=False)
    return array
