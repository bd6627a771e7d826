"""Images in MCP replies: each encoded to fit the reply's byte budget, with how it was sent.

A reply's images share what :attr:`~m3gym.mcp.limits.McpLimits.max_response_bytes` leaves after
its text and structured content (:func:`image_budget`). Each is sent as PNG when it fits, else
lossy at falling quality, then downscaled step by step (:func:`encode_image`); the reply's text
says how each image not sent as the lossless view was sent, and which were left out
(:func:`fit_images`).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import cv2
import numpy as np

from m3gym.codec import png_bytes
from m3gym.mcp.limits import McpLimits


@dataclass
class EncodedImage:
    """An image ready for an MCP image content block, with how it was sent.

    Attributes:
        index: the image's index in the episode.
        data: the encoded bytes.
        mime_type: ``image/png``, ``image/jpeg`` or ``image/webp``.
        width: pixel width as sent.
        height: pixel height as sent.
        quality: the JPEG/WebP quality (``None`` for lossless PNG).
        view_width: width of the env's view the image was encoded from.
        full_width: width of the full-resolution image in the env (0 when unknown).
        full_height: height of the full-resolution image (0 when unknown).
    """

    index: int
    data: bytes
    mime_type: str
    width: int = 0
    height: int = 0
    quality: int | None = None
    view_width: int = 0
    full_width: int = 0
    full_height: int = 0

    @property
    def downscaled(self) -> bool:
        """Whether the image was sent smaller than the env's view."""
        return self.width < self.view_width

    def info(self) -> dict[str, Any]:
        """Return how the image was sent (for structured content)."""
        return {"index": self.index, "mime_type": self.mime_type, "width": self.width,
                "height": self.height, "quality": self.quality,
                "full_width": self.full_width, "full_height": self.full_height,
                "full_px_per_px": round(self.full_width / self.width, 4)
                if self.full_width and self.width else None}

    def note(self) -> str:
        """Return the sentence the reply text carries when the image is not the lossless view."""
        how = ("PNG" if self.quality is None else
               f"{self.mime_type.split('/')[1].upper()} quality {self.quality}")
        size = f"{self.width}x{self.height} {how}"
        if self.full_width:
            ratio = self.full_width / self.width
            return (f"Image {self.index} is sent as {size} to fit the reply limit: 1 px here = "
                    f"{ratio:.3g} px of its {self.full_width}x{self.full_height} "
                    "full-resolution image (multiply pixel positions by that).")
        return f"Image {self.index} is sent as {size} to fit the reply limit."


_LOSSY_STEPS = (0, 15, 30, 45)
"""Quality steps below ``image_quality`` tried before downscaling (floored at 20)."""

_DOWNSCALE = 0.75
"""Side factor of each downscaling step when no quality fits."""


def _imencode(img: np.ndarray, fmt: str, quality: int | None) -> bytes | None:
    if fmt == "png":
        return png_bytes(img)
    bgr = cv2.cvtColor(img, cv2.COLOR_RGB2BGR) if img.ndim == 3 else img
    if fmt == "webp":
        ok, buf = cv2.imencode(".webp", bgr, [cv2.IMWRITE_WEBP_QUALITY, int(quality or 85)])
    else:
        ok, buf = cv2.imencode(".jpg", bgr, [cv2.IMWRITE_JPEG_QUALITY, int(quality or 85)])
    return buf.tobytes() if ok else None


def encode_image(array: np.ndarray, budget: int, fmt: str = "auto", quality: int = 85,
                 index: int = 0, full_size: tuple[int, int] = (0, 0)) -> EncodedImage | None:
    """Return an RGB/gray ``uint8`` image encoded within ``budget`` bytes, or None.

    ``auto``: PNG when it fits, else JPEG from ``quality`` down (steps of 15, floor 20), then
    the same at 3/4 of the size, again and again (down to 16 px on the short side). ``png``
    only downscales; ``jpeg`` / ``webp`` never send PNG. ``full_size`` (width, height) is the
    full-resolution image's size, for the note on how it was sent.
    """
    img = array
    view_w = int(array.shape[1])

    def done(data: bytes, mime: str, q: int | None, im: np.ndarray) -> EncodedImage:
        return EncodedImage(int(index), data, mime, int(im.shape[1]), int(im.shape[0]), q,
                            view_w, int(full_size[0]), int(full_size[1]))

    lossy = "webp" if fmt == "webp" else "jpeg"
    qualities = sorted({max(20, quality - step) for step in _LOSSY_STEPS}, reverse=True)
    while min(img.shape[:2]) >= 16:
        if fmt in ("auto", "png"):
            data = _imencode(img, "png", None)
            if data is not None and len(data) <= budget:
                return done(data, "image/png", None, img)
        if fmt != "png":
            for q in qualities:
                data = _imencode(img, lossy, q)
                if data is not None and len(data) <= budget:
                    return done(data, f"image/{lossy}", q, img)
        size = (max(1, int(img.shape[1] * _DOWNSCALE)), max(1, int(img.shape[0] * _DOWNSCALE)))
        img = cv2.resize(img, size, interpolation=cv2.INTER_AREA)
    return None


def encode_images(indices: tuple[int, ...], images: tuple[np.ndarray, ...], budget: int,
                  fmt: str = "auto", quality: int = 85,
                  full_sizes: tuple[tuple[int, int], ...] | None = None,
                  ) -> tuple[list[EncodedImage], list[int]]:
    """Encode images within a shared byte ``budget``; return them and the indices left out."""
    out: list[EncodedImage] = []
    left: list[int] = []
    for n, (index, array) in enumerate(zip(indices, images)):
        share = budget // max(1, len(images) - n)
        full = full_sizes[n] if full_sizes else (0, 0)
        enc = encode_image(array, share, fmt, quality, int(index), full)
        if enc is None:
            left.append(int(index))
            continue
        budget -= len(enc.data)
        out.append(enc)
    return out, left


def json_len(value: Any) -> int:
    """Return the length of ``value`` as JSON (what it weighs in a reply)."""
    return len(json.dumps(value, default=str))


REPLY_OVERHEAD = 4096
"""Bytes a reply keeps free for the JSON-RPC envelope and the content blocks' own keys."""

NOTE_BYTES = 400
"""Bytes a reply keeps free per image for the sentence on how it was sent."""


def image_budget(limits: McpLimits, text: str, data: Mapping[str, Any], n_images: int) -> int:
    """Return the raw (pre-base64) image bytes a reply may carry besides ``text`` and ``data``.

    The text is sent once as a text block and ``data`` once as structured content; images go
    as base64 (4 bytes per 3).
    """
    room = (limits.max_response_bytes - REPLY_OVERHEAD - json_len(text) - json_len(data)
            - n_images * (NOTE_BYTES + json_len({"index": 0, "mime_type": "image/jpeg",
                                                   "width": 0, "height": 0, "quality": 0,
                                                   "full_width": 0, "full_height": 0,
                                                   "full_px_per_px": 0.0})))
    return max(0, room) * 3 // 4


def fit_images(limits: McpLimits, text: str, data: dict[str, Any],
               indices: tuple[int, ...], arrays: tuple[np.ndarray, ...],
               full_sizes: tuple[tuple[int, int], ...]) -> tuple[str, list[EncodedImage]]:
    """Encode a reply's images within :attr:`McpLimits.max_response_bytes`.

    Returns the text with a sentence for each image not sent as the lossless view (its size,
    format and scale to the full-resolution image) and for each left out; ``data`` gains
    ``images_sent`` (how each image went) and ``images_left_out``.
    """
    budget = image_budget(limits, text, data, len(arrays))
    images, left = encode_images(indices, arrays, budget, limits.image_format,
                                 limits.image_quality, full_sizes)
    notes = [i.note() for i in images if i.downscaled or i.quality is not None]
    if notes:
        notes.append("Tools work on the full-resolution image and bbox_2d uses a 0-1000 scale of "
                     "it, so coordinates do not depend on how an image is sent.")
    if left:
        notes.append(f"Images {left} do not fit in one reply ({limits.max_response_bytes} "
                     "bytes) even downscaled: they exist in the episode; crop them smaller to "
                     "see them.")
    data["images_sent"] = [i.info() for i in images]
    data["images_left_out"] = left
    if notes:
        text = text + "\n\n" + "\n".join(notes)
    return text, images
