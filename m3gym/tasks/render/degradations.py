"""Image degradations: faded ink, compressed dynamic range, sensor noise, blur, JPEG."""

from __future__ import annotations

import os
from collections.abc import Sequence
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache

import cv2
import numpy as np

from m3gym.tasks.render.util import Color


def faded_color(paper: Color, contrast: float) -> Color:
    """Return ink that is ``contrast`` gray levels darker than ``paper`` (same hue shift)."""
    return tuple(int(np.clip(round(c - contrast), 0, 255)) for c in paper)  # type: ignore[return-value]



def compress_dynamic_range(img: np.ndarray, low: Sequence[float], span: float) -> np.ndarray:
    """Return ``img`` mapped linearly from 0..255 to ``low[c] .. low[c] + span`` per channel.

    ``low`` has one offset per channel (a tint); the result is a washed-out, low-contrast image.
    One ``cv2.transform`` pass (rounded, saturated), about three times faster than a 3-channel
    ``cv2.LUT``.
    """
    channels = 1 if img.ndim == 2 else img.shape[2]
    if len(low) != channels:
        raise ValueError(f"need {channels} offsets, got {len(low)}")
    m = np.zeros((channels, channels + 1), np.float32)
    m[np.arange(channels), np.arange(channels)] = span / 255.0
    m[:, channels] = np.asarray(low, np.float32)
    if channels == 1:
        return cv2.convertScaleAbs(img, alpha=float(m[0, 0]), beta=float(m[0, 1]))
    return cv2.transform(img, m)



NOISE_TILE_SHAPE: tuple[int, int] = (197, 643)
"""Rows and columns of the cached unit-noise tile (prime-ish sizes: repeats never align)."""



@lru_cache(maxsize=1)
def _noise_tile_parts() -> tuple[np.ndarray, np.ndarray]:
    """Return the cached read-only positive and negative parts of a unit Gaussian noise tile.

    The tile (``NOISE_TILE_SHAPE`` x 3, float32) comes from a fixed seed, so it is the same in
    every process; ``unit = pos - neg`` with ``pos, neg >= 0``.
    """
    unit = np.random.default_rng(20240531).standard_normal((*NOISE_TILE_SHAPE, 3),
                                                           dtype=np.float32)
    pos, neg = np.maximum(unit, 0.0), np.maximum(-unit, 0.0)
    pos.setflags(write=False)
    neg.setflags(write=False)
    return pos, neg



def _scaled_strip(unit: np.ndarray, alpha: float, ox: int, w: int) -> np.ndarray:
    """Return columns ``ox .. ox + w`` of ``unit`` repeated along x, scaled by ``alpha``, as uint8.

    ``cv2.convertScaleAbs`` is element-wise, so scaling only the tile columns a strip narrower
    than the tile reads gives the same bytes as scaling the whole tile and slicing (a third to
    a half of the work on the classic scenes' 288-384 px images); wider strips scale the tile
    once and repeat it.
    """
    tw = unit.shape[1]
    if w >= tw:
        reps = -(-(w + ox) // tw)
        return np.tile(cv2.convertScaleAbs(unit, alpha=alpha), (1, reps, 1))[:, ox:ox + w]
    if ox + w <= tw:
        return cv2.convertScaleAbs(unit[:, ox:ox + w], alpha=alpha)
    return np.concatenate([cv2.convertScaleAbs(unit[:, ox:], alpha=alpha),
                           cv2.convertScaleAbs(unit[:, :ox + w - tw], alpha=alpha)], axis=1)


def add_sensor_noise(
    img: np.ndarray, rng: np.random.Generator, sigma: float, inplace: bool = False,
) -> np.ndarray:
    """Return ``img`` plus zero-mean Gaussian noise of std ``sigma`` levels.

    With ``inplace`` the (writeable) ``img`` itself is modified and returned; otherwise the
    result is written to a new array in the same pass (no separate copy).

    The noise is one fixed tile of unit noise (``NOISE_TILE_SHAPE``), scaled by ``sigma`` and
    rounded to whole levels once per call (on the tile, not on the image), then repeated from a
    random offset with saturating ``uint8`` adds: indistinguishable from fresh noise at these
    amplitudes and several times faster. Deterministic in ``rng`` and independent of the
    number of OpenCV threads (integer element-wise ops only).
    """
    if sigma <= 0:
        return img
    return add_drawn_noise(img, sigma, draw_noise_offsets(rng), inplace)


def draw_noise_offsets(rng: np.random.Generator) -> tuple[int, int, bool]:
    """Draw :func:`add_sensor_noise`'s tile offsets ``(rows, columns)`` and its sign flip."""
    th, tw = NOISE_TILE_SHAPE
    oy, ox = int(rng.integers(th)), int(rng.integers(tw))
    return oy, ox, bool(rng.integers(2))


def add_drawn_noise(img: np.ndarray, sigma: float, offsets: tuple[int, int, bool],
                    inplace: bool = False, row0: int = 0) -> np.ndarray:
    """Return ``img`` plus the noise of :func:`add_sensor_noise` with drawn ``offsets``.

    ``row0`` is the row of the whole image that ``img``'s first row is: a band of rows gets
    the very bytes the same rows of the whole image get (the noise is element-wise).
    """
    h, w = img.shape[:2]
    pos_unit, neg_unit = _noise_tile_parts()
    th, tw = NOISE_TILE_SHAPE
    oy, ox, flip = offsets
    oy = (oy + row0) % th
    # scale and round the tile columns the image reads, laid out as one full-width strip
    # starting at column ``ox``: the image is then processed in a few contiguous row bands
    pos = _scaled_strip(pos_unit, float(sigma), ox, w)
    neg = _scaled_strip(neg_unit, float(sigma), ox, w)
    if flip:
        pos, neg = neg, pos
    if img.ndim == 2:
        pos, neg = np.ascontiguousarray(pos[..., 0]), np.ascontiguousarray(neg[..., 0])
    elif img.shape[2] != 3:
        raise ValueError(f"add_sensor_noise needs a gray or RGB image, got {img.shape}")
    out = img if inplace else np.empty_like(img)
    for y in range(-oy, h, th):
        y0, y1 = max(y, 0), min(y + th, h)
        ty = y0 - y
        band = out[y0:y1]
        cv2.add(img[y0:y1], pos[ty:ty + y1 - y0], dst=band)
        cv2.subtract(band, neg[ty:ty + y1 - y0], dst=band)
    return out



def mild_blur(img: np.ndarray, sigma: float) -> np.ndarray:
    """Return ``img`` blurred with a Gaussian of std ``sigma`` px (unchanged if ``sigma`` <= 0)."""
    return cv2.GaussianBlur(img, (0, 0), sigma) if sigma > 0 else img



def jpeg_artifacts(img: np.ndarray, quality: int, out: np.ndarray | None = None
                   ) -> np.ndarray:
    """Return ``img`` after a JPEG round trip at ``quality`` (RGB in, RGB out).

    A tall image is coded as :func:`jpeg_bands` bands of whole MCU rows at once, one per OpenCV
    thread: the very bytes of one round trip of the whole image (see there), in about
    ``1 / threads`` of the wall time on an idle machine. ``out`` (writeable, ``img``'s shape
    and type) receives the result when given.
    """
    h = img.shape[0]
    cuts = jpeg_bands(h, cv2.getNumThreads())
    if len(cuts) <= 2:
        whole = _jpeg_round_trip(img, quality)
        if out is None:
            return whole
        out[...] = whole
        return out
    if out is None:
        out = np.empty_like(img)

    dst = out

    def band(j: int) -> None:
        y0, y1 = cuts[j], cuts[j + 1]
        s, e = max(0, y0 - JPEG_MCU_ROWS), min(h, y1 + JPEG_MCU_ROWS)
        dst[y0:y1] = _jpeg_round_trip(img[s:e], quality)[y0 - s:y1 - s]

    list(thread_pool().map(band, range(len(cuts) - 1)))
    return out


JPEG_MCU_ROWS: int = 16
"""Rows of one MCU row of a 4:2:0 JPEG (OpenCV's default sampling)."""

JPEG_BAND_MIN_ROWS: int = 384
"""Fewest rows of a band :func:`jpeg_bands` cuts (smaller images are coded whole)."""


def jpeg_bands(height: int, threads: int) -> list[int]:
    """Return the row cuts ``[0, ..., height]`` of the bands a JPEG round trip is split into.

    At most ``threads`` bands of at least :data:`JPEG_BAND_MIN_ROWS` rows, cut on multiples of
    :data:`JPEG_MCU_ROWS`. Each band is coded with one MCU row more on each side of its cuts
    (when there is one) and only its own rows are kept: the encoder codes every MCU row on its
    own (colour conversion, 2x2 chroma averaging, DCT and quantization are per block; only the
    lossless entropy coding runs across blocks), and the decoder's chroma upsampling reads one
    chroma row across a cut, which falls in the extra MCU row. So the kept rows are the bytes
    of the whole image's round trip (``tests/render/test_camera_bands.py`` compares them).
    """
    n = max(1, min(int(threads), height // JPEG_BAND_MIN_ROWS))
    if n <= 1:
        return [0, height]
    mid = [round(height * j / n / JPEG_MCU_ROWS) * JPEG_MCU_ROWS for j in range(1, n)]
    return [0, *mid, height]


def _jpeg_round_trip(img: np.ndarray, quality: int) -> np.ndarray:
    """Return ``img`` after one JPEG round trip at ``quality`` (RGB in, RGB out)."""
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(img, cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:  # pragma: no cover - OpenCV always encodes uint8 RGB
        raise RuntimeError("JPEG encoding failed")
    # libjpeg-turbo converts YCbCr straight to RGB: the same pixels as decoding to BGR and
    # swapping the channels (tests/render/test_fast_paths_same_bytes.py), without the extra pass
    return cv2.imdecode(buf, cv2.IMREAD_COLOR_RGB)


_POOL: dict[int, ThreadPoolExecutor] = {}
"""The per-process thread pool of :func:`thread_pool` (keyed by process id: not shared with a
forked child, whose copy has no threads)."""


def thread_pool() -> ThreadPoolExecutor:
    """Return this process's pool of ``cv2.getNumThreads()`` threads (OpenCV drops the GIL)."""
    pid = os.getpid()
    pool = _POOL.get(pid)
    if pool is None:
        _POOL.clear()
        pool = _POOL[pid] = ThreadPoolExecutor(max_workers=max(2, cv2.getNumThreads()),
                                               thread_name_prefix="m3gym-render")
    return pool
