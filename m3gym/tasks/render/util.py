"""Small shared helpers: box and colour types, random picks, colours, solid images."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import cv2
import numpy as np

Box = tuple[int, int, int, int]
"""A pixel box ``(x0, y0, x1, y1)``, exclusive ``x1``/``y1``."""



Color = tuple[int, int, int]
"""An RGB colour, channels 0..255."""



NAMED_COLORS: dict[str, Color] = {
    "red": (206, 40, 40),
    "blue": (40, 90, 210),
    "green": (40, 150, 60),
    "yellow": (240, 210, 40),
    "orange": (240, 130, 30),
    "purple": (130, 60, 170),
    "pink": (240, 130, 180),
    "white": (245, 245, 240),
    "cyan": (40, 190, 210),
}
"""Colours that questions may name, with an RGB value each (insertion order is fixed)."""



def pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    """Return one element of ``options`` chosen by ``rng``."""
    return options[int(rng.integers(len(options)))]



def shuffled(rng: np.random.Generator, items: Sequence[Any]) -> tuple[Any, ...]:
    """Return ``items`` in an order drawn by ``rng``."""
    return tuple(items[int(i)] for i in rng.permutation(len(items)))



def rand_color(rng: np.random.Generator, low: int = 0, high: int = 256) -> Color:
    """Return a random RGB colour with channels in ``[low, high)``."""
    c = rng.integers(low, high, size=3).tolist()
    return (c[0], c[1], c[2])



def jitter_color(rng: np.random.Generator, color: Color, amount: int = 20) -> Color:
    """Return ``color`` with each channel moved by up to ``amount`` levels (clipped)."""
    d = rng.integers(-amount, amount + 1, size=3).tolist()
    return (min(255, max(0, int(color[0]) + d[0])), min(255, max(0, int(color[1]) + d[1])),
            min(255, max(0, int(color[2]) + d[2])))



def luminance(color: Color) -> float:
    """Return the Rec. 601 luma of an RGB colour (the weights of ``cv2.COLOR_RGB2GRAY``)."""
    r, g, b = color
    return 0.299 * r + 0.587 * g + 0.114 * b



def ink_for(color: Color) -> Color:
    """Return near-black or near-white ink, whichever contrasts more with ``color``."""
    return (20, 20, 24) if luminance(color) > 128 else (246, 246, 246)



def solid_image(height: int, width: int, color: Sequence[float], dtype: type = np.uint8
                ) -> np.ndarray:
    """Return a new ``(height, width, 3)`` image of ``dtype`` filled with ``color``.

    Filled with ``cv2.rectangle``: numpy's broadcast of a 3-tuple into an ``(H, W, 3)`` array is
    over twenty times slower.
    """
    out = np.empty((height, width, 3), dtype)
    cv2.rectangle(out, (0, 0), (width, height), tuple(float(c) for c in color), -1)
    return out


def warp_perspective(src: np.ndarray, matrix: np.ndarray, size: tuple[int, int],
                     flags: int = cv2.INTER_LINEAR, border_mode: int = cv2.BORDER_CONSTANT,
                     border_value: float = 0.0) -> np.ndarray:
    """Return ``cv2.warpPerspective`` of ``src`` into a ``size = (w, h)`` canvas.

    A ``uint8`` RGB image goes through four channels (an opaque alpha added, then dropped):
    OpenCV 5 warps four ``uint8`` channels on its vectorised path, in about the time of one
    and under half that of three, and each channel comes out byte for byte as the plain
    three-channel warp's (tests/render/test_util_warp.py; two channels take another path, which
    differs). Other images are warped as they are.
    """
    if src.dtype == np.uint8 and src.ndim == 3 and src.shape[2] == 3:
        four = cv2.warpPerspective(cv2.cvtColor(src, cv2.COLOR_RGB2RGBA), matrix, size,
                                   flags=flags, borderMode=border_mode, borderValue=border_value)
        return cv2.cvtColor(four, cv2.COLOR_RGBA2RGB)
    return cv2.warpPerspective(src, matrix, size, flags=flags, borderMode=border_mode,
                               borderValue=border_value)

