"""Image bytes: one PNG encoder for every writer of RGB or grayscale ``uint8`` images.

The verl/SFT exports, the report's full-size images and the MCP server's replies all encode
with :func:`png_bytes` (OpenCV, deterministic bytes for a given compression level).
"""

from __future__ import annotations

import cv2
import numpy as np


def png_bytes(array: np.ndarray, compression: int | None = None) -> bytes:
    """Return a lossless PNG of an RGB or grayscale ``uint8`` image.

    ``compression`` is OpenCV's ``IMWRITE_PNG_COMPRESSION`` (0-9; ``None``: OpenCV's default).
    An image OpenCV cannot encode raises ``ValueError``.
    """
    img = cv2.cvtColor(array, cv2.COLOR_RGB2BGR) if array.ndim == 3 else array
    params = [] if compression is None else [cv2.IMWRITE_PNG_COMPRESSION, int(compression)]
    ok, buf = cv2.imencode(".png", np.ascontiguousarray(img), params)
    if not ok:
        raise ValueError(f"cannot encode an image of shape {array.shape} as PNG")
    return buf.tobytes()
