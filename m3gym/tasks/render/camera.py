"""Camera effects: perspective placement, uneven light, soft shadows, lens and motion blur.

Everything is OpenCV on whole arrays (no per-pixel Python loops) and pure given the passed
``np.random.Generator``. Coordinates follow the package convention: a pixel ``(x, y)`` covers
``[x, x + 1) x [y, y + 1)``, so a ``w x h`` patch's corners are ``(0, 0), (w, 0), (w, h), (0, h)``
and a quad is four image points in that order (top-left, top-right, bottom-right, bottom-left).

* :func:`perspective_quad` samples where a flat ``w x h`` object lands when seen at an angle;
  :func:`warp_patch` pastes a patch there (in place) and returns the pixel box and the coverage
  mask (:func:`warp_alpha` warps any other layer, e.g. a text's ink, with the same geometry);
* :func:`uneven_lighting`, :func:`soft_shadow` (an object's), :func:`sheet_shadow` (a page's on
  the table), :func:`lens_blur`, :func:`motion_blur` return new images; both shadows darken
  under one blurred polygon drawn small (:func:`shade_polygon`);
* :func:`camera_pipeline` samples one chain of them plus sensor noise and JPEG per task, keeping
  the ``keep`` boxes (the evidence) in focus and out of cast shadows.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.tasks.render.degradations import (
    add_drawn_noise,
    draw_noise_offsets,
    jpeg_artifacts,
    thread_pool,
)
from m3gym.tasks.render.geometry import boxes_overlap, grow_box
from m3gym.tasks.render.util import Box, warp_perspective

MAX_TILT_DEG: float = 50.0
"""Largest out-of-plane tilt (pitch or yaw) :func:`perspective_quad` samples at strength 1."""

MAX_ROLL_DEG: float = 12.0
"""Largest in-plane rotation :func:`perspective_quad` samples at strength 1."""


def patch_corners(w: int, h: int) -> np.ndarray:
    """Return the ``float64`` corners ``(0,0), (w,0), (w,h), (0,h)`` of a ``w x h`` patch."""
    return np.array([[0.0, 0.0], [w, 0.0], [w, h], [0.0, h]], np.float64)


def perspective_quad(rng: np.random.Generator, w: int, h: int, strength: float) -> np.ndarray:
    """Return where a flat ``w x h`` patch's corners land when seen at an angle, ``(4, 2)``.

    A pinhole camera looks at the patch tilted by pitch and yaw up to ``strength *``
    :data:`MAX_TILT_DEG` and rolled up to ``strength *`` :data:`MAX_ROLL_DEG`; the projected
    quad is scaled to the patch's area and shifted so its bounding box starts at ``(0, 0)``
    (add the top-left where it should go). Strength 0 gives the patch's own rectangle and draws
    nothing from ``rng``.
    """
    if w <= 0 or h <= 0:
        raise ValueError(f"perspective_quad needs a positive size, got {w}x{h}")
    if not 0.0 <= strength <= 1.0:
        raise ValueError(f"strength must be in [0, 1], got {strength}")
    if strength == 0.0:
        return patch_corners(w, h)
    pitch, yaw = np.radians(rng.uniform(-1.0, 1.0, 2) * MAX_TILT_DEG * strength)
    roll = math.radians(float(rng.uniform(-1.0, 1.0)) * MAX_ROLL_DEG * strength)
    cp, sp, cy, sy, cr, sr = (math.cos(pitch), math.sin(pitch), math.cos(yaw), math.sin(yaw),
                              math.cos(roll), math.sin(roll))
    rx = np.array([[1, 0, 0], [0, cp, -sp], [0, sp, cp]])
    ry = np.array([[cy, 0, sy], [0, 1, 0], [-sy, 0, cy]])
    rz = np.array([[cr, -sr, 0], [sr, cr, 0], [0, 0, 1]])
    pts = np.c_[patch_corners(w, h) - (w / 2, h / 2), np.zeros(4)]
    focal = 1.6 * max(w, h)  # a normal lens: the patch fills a good part of the frame
    cam = pts @ (rz @ ry @ rx).T + (0.0, 0.0, focal)
    quad = focal * cam[:, :2] / cam[:, 2:3]
    area = 0.5 * abs(float(np.dot(quad[:, 0], np.roll(quad[:, 1], -1))
                           - np.dot(quad[:, 1], np.roll(quad[:, 0], -1))))
    quad *= math.sqrt(w * h / max(area, 1e-9))
    return quad - quad.min(axis=0)


def homography(w: int, h: int, quad: np.ndarray) -> np.ndarray:
    """Return the 3x3 homography taking a ``w x h`` patch's corners to ``quad``."""
    q = np.asarray(quad, np.float64).reshape(4, 2)
    return cv2.getPerspectiveTransform(patch_corners(w, h).astype(np.float32),
                                       q.astype(np.float32)).astype(np.float64)


def quad_box(quad: np.ndarray, width: int, height: int) -> Box:
    """Return the pixel box covering ``quad`` (rounded outward), clipped to the image."""
    q = np.asarray(quad, np.float64).reshape(4, 2)
    return grow_box((float(q[:, 0].min()), float(q[:, 1].min()),
                     float(q[:, 0].max()), float(q[:, 1].max())), 0.0, width, height)


def _box_matrix(w: int, h: int, quad: np.ndarray, box: Box) -> np.ndarray:
    """Return OpenCV's patch-pixel -> box-pixel matrix (pixel centres at integer coordinates)."""
    to_centre = np.array([[1.0, 0.0, 0.5], [0.0, 1.0, 0.5], [0.0, 0.0, 1.0]])
    from_centre = np.array([[1.0, 0.0, -0.5 - box[0]], [0.0, 1.0, -0.5 - box[1]],
                            [0.0, 0.0, 1.0]])
    return from_centre @ homography(w, h, quad) @ to_centre


def warp_alpha(alpha: np.ndarray, quad: np.ndarray, box: Box) -> np.ndarray:
    """Return the ``uint8`` layer ``alpha`` (patch frame) warped onto ``quad``, cropped to ``box``.

    The same geometry as :func:`warp_patch`; e.g. the ink of a text drawn on the patch becomes
    ``warp_alpha(text_alpha, quad, box) >= 128`` in the box's frame.
    """
    h, w = alpha.shape[:2]
    bw, bh = box[2] - box[0], box[3] - box[1]
    if bw <= 0 or bh <= 0:
        return np.zeros((max(bh, 0), max(bw, 0)), np.uint8)
    return cv2.warpPerspective(np.ascontiguousarray(alpha, np.uint8), _box_matrix(w, h, quad, box),
                               (bw, bh), flags=cv2.INTER_LINEAR, borderMode=cv2.BORDER_CONSTANT,
                               borderValue=0)


def warp_patch(
    img: np.ndarray, patch_rgb: np.ndarray, patch_alpha: np.ndarray | None, quad: np.ndarray,
) -> tuple[Box, np.ndarray]:
    """Paste ``patch_rgb`` onto ``quad`` of ``img`` (in place) through a homography.

    ``patch_alpha`` (``uint8`` ``(h, w)``, 255 = opaque; ``None`` = opaque everywhere) is warped
    bilinearly, which anti-aliases the edges. Returns the pixel box (the quad's bounds clipped
    to the image) and the coverage mask in the box's frame: True where the pasted coverage is
    >= 50 %, the same rule as :attr:`TextPatch.mask`. Pixels with zero coverage are untouched.
    """
    ph, pw = patch_rgb.shape[:2]
    if patch_rgb.ndim != 3 or patch_rgb.shape[2] != 3:
        raise ValueError(f"warp_patch needs an RGB patch, got shape {patch_rgb.shape}")
    if patch_alpha is not None and patch_alpha.shape[:2] != (ph, pw):
        raise ValueError(f"alpha {patch_alpha.shape} does not match patch {patch_rgb.shape}")
    q = np.asarray(quad, np.float64)
    if q.shape != (4, 2) or not np.isfinite(q).all():
        raise ValueError(f"quad must be four finite (x, y) points, got shape {q.shape}")
    box = quad_box(q, img.shape[1], img.shape[0])
    bw, bh = box[2] - box[0], box[3] - box[1]
    if bw <= 0 or bh <= 0:
        return box, np.zeros((max(bh, 0), max(bw, 0)), bool)
    alpha = np.full((ph, pw), 255, np.uint8) if patch_alpha is None else patch_alpha
    cover = warp_alpha(alpha, q, box)
    colour = warp_perspective(np.ascontiguousarray(patch_rgb), _box_matrix(pw, ph, q, box),
                              (bw, bh), border_mode=cv2.BORDER_REPLICATE)
    region = img[box[1]:box[3], box[0]:box[2]]
    a = cover.astype(np.float32)
    a *= np.float32(1.0 / 255.0)
    blended = cv2.blendLinear(colour.astype(region.dtype), region, a, np.float32(1.0) - a)
    _copy_where(region, blended, cover > 0, img.flags.c_contiguous)
    return box, cover >= 128


def _copy_where(dst: np.ndarray, src: np.ndarray, where: np.ndarray, inside_c: bool) -> None:
    """Copy ``src`` into ``dst`` where the 2-D bool ``where`` is True: ``np.copyto(where=)``.

    With ``inside_c`` (``dst`` is a box of a C-contiguous image, which OpenCV writes through in
    place) ``cv2.copyTo`` does it with a one-byte mask, several times faster than numpy
    broadcasting the mask over the channels.
    """
    if inside_c and dst.dtype == np.uint8 and src.dtype == np.uint8 and dst.ndim in (2, 3):
        cv2.copyTo(src, where.view(np.uint8), dst)
    else:
        np.copyto(dst, src, where=where[..., None] if dst.ndim == 3 else where)


def _smooth_gain(rng: np.random.Generator, h: int, w: int, cells: int) -> np.ndarray:
    """Return a smooth float32 ``(h, w)`` field in [0, 1] from a bicubic ``cells``-grid."""
    coarse = rng.random((cells + 1, cells + 1), dtype=np.float32)
    field = cv2.resize(coarse, (w, h), interpolation=cv2.INTER_CUBIC)
    return np.clip(field, 0.0, 1.0, out=field)


FIELD_SIDE: int = 160
"""Longest side, in pixels, at which smooth fields (light, shadows, focus) are computed."""


def _apply_gain(img: np.ndarray, gain: np.ndarray) -> np.ndarray:
    """Return ``img * gain``, rounded and saturated to ``uint8``.

    ``gain`` is float32, either ``img``'s size or smaller (then upscaled bilinearly first).
    """
    h, w = img.shape[:2]
    if gain.shape != (h, w):
        gain = cv2.resize(gain, (w, h), interpolation=cv2.INTER_LINEAR)
    if img.ndim == 2:
        return cv2.multiply(img, gain, dtype=cv2.CV_8U)
    # Per band of rows, so the three-channel gain stays in cache (3x faster on a 3000 px
    # page than merging the whole gain first); every pixel's product and rounding is the same.
    # A large image's bands are shared among OpenCV's threads (element-wise: the same bytes).
    out = np.empty_like(img)
    rows = max(1, GAIN_BAND_FLOATS // max(1, w * img.shape[2]))

    def bands(start: int, stop: int) -> None:
        for y in range(start, stop, rows):
            y1 = min(y + rows, stop)
            cv2.multiply(img[y:y1], cv2.merge([gain[y:y1]] * img.shape[2]), dst=out[y:y1],
                         dtype=cv2.CV_8U)

    n = min(cv2.getNumThreads(), h * w // GAIN_THREAD_PIXELS)
    if n <= 1:
        bands(0, h)
        return out
    cuts = [round(h * j / n) for j in range(n + 1)]
    list(thread_pool().map(lambda j: bands(cuts[j], cuts[j + 1]), range(n)))
    return out


GAIN_THREAD_PIXELS: int = 1 << 20
"""Pixels per thread :func:`_apply_gain` needs before it shares an image among threads."""


GAIN_BAND_FLOATS: int = 1 << 18
"""Floats of three-channel gain :func:`_apply_gain` expands at a time (1 MiB)."""


def _field_shape(h: int, w: int) -> tuple[int, int]:
    """Return the ``(rows, cols)`` of a smooth field for an ``h x w`` image."""
    scale = min(1.0, FIELD_SIDE / max(h, w))
    return max(2, round(h * scale)), max(2, round(w * scale))


def uneven_lighting(img: np.ndarray, rng: np.random.Generator, strength: float) -> np.ndarray:
    """Return ``img`` under uneven light: a smooth falloff and a broad hot spot.

    The gain lies in about ``[1 - 0.55 * strength, 1 + 0.12 * strength]``. Strength 0 returns
    ``img`` itself and draws nothing.
    """
    if strength <= 0:
        return img
    return _apply_gain(img, _lighting_gain(rng, *img.shape[:2], strength))


def _lighting_gain(rng: np.random.Generator, h: int, w: int, strength: float) -> np.ndarray:
    """Return :func:`uneven_lighting`'s gain on the small field of an ``h x w`` image."""
    fh, fw = _field_shape(h, w)
    falloff = _smooth_gain(rng, fh, fw, 2)
    cx, cy = rng.uniform(0.0, 1.0, 2)
    spread = float(rng.uniform(0.35, 0.8))
    xs = (np.arange(fw, dtype=np.float32) / (fw - 1) - np.float32(cx)) / np.float32(spread)
    ys = (np.arange(fh, dtype=np.float32) / (fh - 1) - np.float32(cy)) / np.float32(spread)
    spot = np.exp(-(xs[None, :] ** 2 + ys[:, None] ** 2))
    gain = np.float32(1.0 - 0.55 * strength) + np.float32(0.55 * strength) * falloff
    gain += np.float32(0.12 * strength) * spot
    return gain.astype(np.float32)


def soft_shadow(
    img: np.ndarray, rng: np.random.Generator, box: Sequence[float] | np.ndarray, strength: float,
    keep: Sequence[Sequence[float]] = (), inplace: bool = False,
) -> np.ndarray:
    """Return ``img`` with the soft drop shadow of an object at ``box`` (or a ``(4, 2)`` quad).

    The shadow is the object's shape offset down-right/left by a few percent of its size,
    blurred by about a tenth of its size and darkening by up to ``0.6 * strength``. Call it
    before pasting the object (the object then covers its own part of the shadow). Strength 0
    returns ``img`` itself and draws nothing. No pixel of a ``keep`` box changes: the blur is
    narrowed so the shadow's reach stops short of them, and a shadow that would fall on one
    is not drawn (the draws from ``rng`` do not depend on ``keep``). With ``inplace`` the
    shadow is drawn into ``img`` itself and ``img`` is returned (no copy of the whole image;
    the same pixels as ``img[:] = soft_shadow(img, ...)``).
    """
    if strength <= 0:
        return img
    h, w = img.shape[:2]
    pts = np.asarray(box, np.float64)
    if pts.shape == (4,):
        x0, y0, x1, y1 = pts
        pts = np.array([[x0, y0], [x1, y0], [x1, y1], [x0, y1]], np.float64)
    if pts.shape != (4, 2):
        raise ValueError(f"soft_shadow needs a box or a (4, 2) quad, got shape {pts.shape}")
    size = float(max(np.ptp(pts[:, 0]), np.ptp(pts[:, 1]), 1.0))
    offset = np.array([rng.uniform(-0.06, 0.06), rng.uniform(0.02, 0.08)]) * size * strength
    blur = max(0.5, size * float(rng.uniform(0.04, 0.12)))
    darkness = float(rng.uniform(0.35, 0.6)) * strength
    shifted = pts + offset
    sx0, sy0 = int(math.floor(shifted[:, 0].min())), int(math.floor(shifted[:, 1].min()))
    sx1, sy1 = int(math.ceil(shifted[:, 0].max())), int(math.ceil(shifted[:, 1].max()))
    if keep:
        room = _shadow_room((sx0, sy0, sx1, sy1), keep, w, h)
        blur = min(blur, (room - 2) / 3.0)  # the drawn region (3 sigma + 2) ends before keep
        if blur < 0.5:
            return img if inplace else img.copy()
    pad = int(3 * blur) + 2
    bx0, by0 = max(0, sx0 - pad), max(0, sy0 - pad)
    bx1, by1 = min(w, sx1 + pad), min(h, sy1 + pad)
    out = img if inplace else img.copy()
    if bx1 <= bx0 or by1 <= by0:
        return out
    k = max(1, int(blur // 3))  # the shadow is smooth: draw it k times smaller
    mh, mw = max(1, -(-(by1 - by0) // k)), max(1, -(-(bx1 - bx0) // k))
    out[by0:by1, bx0:bx1] = shade_polygon(img, shifted, (bx0, by0, bx1, by1), k, (mh, mw),
                                          blur / k, darkness)
    return out


def _shadow_room(bounds: Box, keep: Sequence[Sequence[float]], w: int, h: int) -> float:
    """Return how far (px) a shadow drawn around ``bounds`` may reach before a ``keep`` box.

    Per box the larger of the horizontal and vertical gaps between ``bounds`` and the box's
    pixels (negative when they overlap); the smallest over the boxes that lie in the image.
    """
    x0, y0, x1, y1 = bounds
    room = float("inf")
    for k in keep:
        kx0, ky0 = max(0, math.floor(k[0])), max(0, math.floor(k[1]))
        kx1, ky1 = min(w, math.ceil(k[2])), min(h, math.ceil(k[3]))
        if kx1 <= kx0 or ky1 <= ky0:
            continue
        gap = max(kx0 - x1, x0 - kx1, ky0 - y1, y0 - ky1)
        room = min(room, float(gap))
    return room


def sheet_shadow(img: np.ndarray, rng: np.random.Generator, quad: np.ndarray,
                 strength: float, covered: Box | None = None) -> np.ndarray:
    """Return ``img`` darkened by the soft, offset outline of a sheet of paper at ``quad``.

    Drawn before the sheet is composited (the shadow falls on the table). A page lies flat, so
    unlike :func:`soft_shadow` (an object standing off its background: an offset, blur and
    darkness drawn in proportion to its size) the outline moves 4-16 px down-right, is blurred
    by 1.5 % of the sheet's size at a quarter of the resolution over the whole image, and
    ``strength`` in ``[0, 0.6]`` is the darkening at its core. ``covered`` is a box the caller
    then covers wholly with the sheet (:func:`~m3gym.tasks.render.documents.covered_box`):
    its pixels are left unshaded, as nobody sees them. The draws do not depend on it.
    """
    h, w = img.shape[:2]
    small = 4
    shifted = np.asarray(quad, np.float64) + rng.uniform(4.0, 16.0, size=2)
    side = float(np.ptp(shifted[:, 0] / small) + np.ptp(shifted[:, 1] / small))
    return shade_polygon(img, shifted, (0, 0, w, h), small, (max(2, h // small),
                         max(2, w // small)), max(1.0, 0.015 * side), strength, covered)


def shade_polygon(img: np.ndarray, pts: np.ndarray, box: Box, k: int,
                  mask_shape: tuple[int, int], sigma: float, darkness: float,
                  covered: Box | None = None) -> np.ndarray:
    """Return the ``box`` region of ``img`` darkened under the blurred polygon ``pts``.

    The polygon (image coordinates) is drawn anti-aliased ``k`` times smaller into a
    ``mask_shape`` (rows, cols) mask with the box's top-left at its origin, blurred with a
    Gaussian of ``sigma`` mask pixels and stretched bilinearly over the box; where the mask is
    1 the region darkens by ``darkness`` (a gain of ``1 - darkness``). The pixels of
    ``covered`` (image coordinates; the caller pastes over them) are left as they are. The
    soft shadows' common step (:func:`soft_shadow`, :func:`sheet_shadow`).
    """
    x0, y0, x1, y1 = box
    mask = np.zeros(mask_shape, np.float32)
    cv2.fillPoly(mask, [np.round((pts - (x0, y0)) / k * 16).astype(np.int32)], 1.0,
                 cv2.LINE_AA, shift=4)
    mask = cv2.GaussianBlur(mask, (0, 0), sigma)
    bw, bh = x1 - x0, y1 - y0
    gain = cv2.resize(mask, (bw, bh), interpolation=cv2.INTER_LINEAR)
    # Where the mask is 0 the gain is exactly 1 and the pixel stays as it is: only the box
    # around the mask's support is multiplied (the same bytes, a fraction of the work when the
    # polygon is small against the box, as a page's shadow on a whole photo).
    sx0, sy0, sx1, sy1 = _support_box(mask, bw, bh)
    if sx1 <= sx0 or sy1 <= sy0:
        return img[y0:y1, x0:x1].copy()
    if covered is None and (sx0, sy0, sx1, sy1) == (0, 0, bw, bh):
        _darken_gain(gain, darkness)
        return _apply_gain(img[y0:y1, x0:x1], gain)
    out = img[y0:y1, x0:x1].copy()
    tiles = [(sx0, sy0, sx1, sy1)] if covered is None else _blend_tiles(
        (sx0, sy0, sx1, sy1), (covered[0] - x0, covered[1] - y0, covered[2] - x0,
                               covered[3] - y0))[0]
    for tx0, ty0, tx1, ty1 in tiles:  # element-wise: each tile's bytes are the whole box's
        part = gain[ty0:ty1, tx0:tx1]
        _darken_gain(part, darkness)
        out[ty0:ty1, tx0:tx1] = _apply_gain(img[y0 + ty0:y0 + ty1, x0 + tx0:x0 + tx1],
                                            np.ascontiguousarray(part))
    return out


def _darken_gain(mask: np.ndarray, darkness: float) -> None:
    """Turn a shadow ``mask`` into its gain ``1 - darkness * mask`` (in place).

    No fresh image-sized float arrays: ``-(d * m) + 1`` rounds exactly as ``1 - d * m`` does.
    """
    np.multiply(mask, -np.float32(darkness), out=mask)
    mask += np.float32(1.0)


def _support_box(mask: np.ndarray, width: int, height: int) -> Box:
    """Return the box of a ``width x height`` bilinear resize of ``mask`` that can be non-zero.

    An output pixel of ``cv2.resize`` (``INTER_LINEAR``) blends the two source rows (columns)
    around ``(y + 0.5) * rows / height - 0.5``; it is 0 when both are 0. The box is grown by
    two pixels each way over that bound (empty when the mask is all 0).
    """
    rows = np.flatnonzero(mask.any(axis=1))
    cols = np.flatnonzero(mask.any(axis=0))
    if rows.size == 0:
        return (0, 0, 0, 0)
    mh, mw = mask.shape[:2]

    def span(lo: int, hi: int, n_src: int, n_out: int) -> tuple[int, int]:
        scale = n_out / n_src  # output pixels per source pixel
        a = math.floor((lo - 0.5) * scale - 0.5) - 2
        b = math.ceil((hi + 1.5) * scale - 0.5) + 2
        return max(0, a), min(n_out, b)

    ax, bx = span(int(cols[0]), int(cols[-1]), mw, width)
    ay, by = span(int(rows[0]), int(rows[-1]), mh, height)
    return ax, ay, bx, by


SPATIAL_KERNEL_SIDE: int = 7
"""Largest blur kernel side :func:`lens_blur` / :func:`motion_blur` apply at full size.

OpenCV's ``filter2D`` switches to a DFT for kernels of 50 taps or more, which costs 80-120 ms
on a 3000 px page; a larger blur is applied to the image shrunk by an integer factor (area
mean) with a kernel shrunk alike, then enlarged back (bilinear): the same defocus at a tenth of
the cost, and a blur this large has removed the detail the shrinking drops.
"""


def _kernel_filter(img: np.ndarray, side: int, kernel_for: Callable[[float], np.ndarray]
                   ) -> np.ndarray:
    """Return ``img`` filtered with ``kernel_for(1.0)`` (``side`` taps), shrunk first if large.

    ``kernel_for(f)`` builds the kernel for the image shrunk ``f`` times. With ``side`` at most
    :data:`SPATIAL_KERNEL_SIDE` the kernel is applied at full size.
    """
    if side <= SPATIAL_KERNEL_SIDE:
        return cv2.filter2D(img, -1, kernel_for(1.0), borderType=cv2.BORDER_REFLECT)
    h, w = img.shape[:2]
    f = math.ceil(side / SPATIAL_KERNEL_SIDE)
    small = cv2.resize(img, (max(1, round(w / f)), max(1, round(h / f))),
                       interpolation=cv2.INTER_AREA)
    small = cv2.filter2D(small, -1, kernel_for(float(f)), borderType=cv2.BORDER_REFLECT)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)


def _disk_kernel(radius: float) -> np.ndarray:
    """Return the normalised anti-aliased disk kernel of ``radius`` px (side ``2 ceil(r) + 1``)."""
    r = int(math.ceil(radius))
    scale = 8  # anti-aliased disk: draw 8x larger, then area-average
    big = np.zeros(((2 * r + 1) * scale, (2 * r + 1) * scale), np.float32)
    c = (2 * r + 1) * scale / 2.0 - 0.5
    cv2.circle(big, (round(c * 16), round(c * 16)), round(radius * scale * 16), 1.0, -1,
               cv2.LINE_AA, shift=4)
    kernel = cv2.resize(big, (2 * r + 1, 2 * r + 1), interpolation=cv2.INTER_AREA)
    kernel /= kernel.sum()
    return kernel


def _line_kernel(length: float, angle_deg: float) -> np.ndarray:
    """Return the normalised anti-aliased line kernel ``length`` px long along ``angle_deg``."""
    r = int(math.ceil(length / 2)) + 1
    size = 2 * r + 1
    scale = 8
    big = np.zeros((size * scale, size * scale), np.float32)
    c = size * scale / 2.0 - 0.5
    dx = math.cos(math.radians(angle_deg)) * length * scale / 2
    dy = -math.sin(math.radians(angle_deg)) * length * scale / 2
    p0 = (round((c - dx) * 16), round((c - dy) * 16))
    p1 = (round((c + dx) * 16), round((c + dy) * 16))
    cv2.line(big, p0, p1, 1.0, scale, cv2.LINE_AA, shift=4)
    kernel = cv2.resize(big, (size, size), interpolation=cv2.INTER_AREA)
    kernel /= kernel.sum()
    return kernel


def lens_blur(img: np.ndarray, radius: float) -> np.ndarray:
    """Return ``img`` defocused by a disk kernel of ``radius`` px (``img`` if radius <= 0.25).

    A disk wider than :data:`SPATIAL_KERNEL_SIDE` is applied to the image shrunk (see there).
    """
    if radius <= 0.25:
        return img
    return _kernel_filter(img, 2 * int(math.ceil(radius)) + 1,
                          lambda f: _disk_kernel(max(0.26, radius / f)))


def motion_blur(img: np.ndarray, length: float, angle_deg: float) -> np.ndarray:
    """Return ``img`` smeared along ``angle_deg`` (0 = horizontal) over ``length`` px.

    ``img`` itself when ``length`` < 1. A kernel wider than :data:`SPATIAL_KERNEL_SIDE` is
    applied to the image shrunk (see there).
    """
    if length < 1.0:
        return img
    return _kernel_filter(img, 2 * (int(math.ceil(length / 2)) + 1) + 1,
                          lambda f: _line_kernel(max(1.0, length / f), angle_deg))


def _cast_shadow(
    img: np.ndarray, rng: np.random.Generator, strength: float, keep: Sequence[Sequence[float]],
) -> np.ndarray:
    """Return ``img`` with a soft cast shadow across a corner (``img`` if it touches ``keep``).

    The draws from ``rng`` do not depend on ``keep``.
    """
    gain = _cast_shadow_gain(rng, *img.shape[:2], strength, keep)
    return img if gain is None else _apply_gain(img, gain)


def _cast_shadow_gain(rng: np.random.Generator, h: int, w: int, strength: float,
                      keep: Sequence[Sequence[float]]) -> np.ndarray | None:
    """Return :func:`_cast_shadow`'s gain on the small field (``None``: it would touch keep)."""
    corner = int(rng.integers(4))
    reach = rng.uniform(0.25, 0.6, 2) * (w, h)
    blur = max(1.0, 0.03 * max(h, w) * float(rng.uniform(0.5, 1.5)))
    darkness = float(rng.uniform(0.2, 0.4)) * strength
    ax, ay = (0 if corner in (0, 3) else w), (0 if corner < 2 else h)
    tri = np.array([[ax, ay], [abs(ax - reach[0]), ay], [ax, abs(ay - reach[1])]], np.float64)
    bounds = (tri[:, 0].min(), tri[:, 1].min(), tri[:, 0].max(), tri[:, 1].max())
    if any(boxes_overlap(bounds, k, margin=3 * blur) for k in keep):
        return None
    sh, sw = _field_shape(h, w)  # the shadow is smooth: compute it small
    scale = np.array([sw / w, sh / h])
    mask = np.zeros((sh, sw), np.float32)
    cv2.fillPoly(mask, [np.round(tri * scale * 16).astype(np.int32)], 1.0, cv2.LINE_AA, shift=4)
    mask = cv2.GaussianBlur(mask, (0, 0), max(0.5, blur * float(scale[0])))
    return 1.0 - np.float32(darkness) * mask


def _keep_mask(h: int, w: int, keep: Sequence[Sequence[float]], feather: float) -> np.ndarray:
    """Return a float32 ``(h, w)`` weight, 1 on the ``keep`` boxes fading to 0 over ``feather``.

    The fade is computed on a small field and upscaled; the boxes themselves are exactly 1.
    """
    sh, sw = _field_shape(h, w)
    sx, sy = sw / w, sh / h
    small = np.zeros((sh, sw), np.float32)
    for k in keep:
        x0, y0, x1, y1 = grow_box(k, feather / 2, w, h)
        cv2.rectangle(small, (int(x0 * sx), int(y0 * sy)),
                      (max(int(x0 * sx), math.ceil(x1 * sx) - 1),
                       max(int(y0 * sy), math.ceil(y1 * sy) - 1)), 1.0, -1)
    small = cv2.GaussianBlur(small, (0, 0), max(0.5, feather / 2 * sx))
    mask = cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)
    for k in keep:
        x0, y0, x1, y1 = grow_box(k, 0.0, w, h)
        mask[y0:y1, x0:x1] = 1.0
    return mask


def _span(a: int, b: int, n: int) -> tuple[int, int]:
    """Return the ``[start, stop)`` that the slice ``a:b`` takes of ``n`` items (numpy's rule)."""
    start, stop, _ = slice(a, b).indices(n)
    return start, max(start, stop)


def _sharp_region(keep: Sequence[Sequence[float]], feather: float, w: int,
                  h: int) -> tuple[Box, Box]:
    """Return the ``keep`` boxes' blend region and its largest box of weight exactly 1.

    The region is the bounding box of the boxes grown by ``2 * feather`` (where
    :func:`_keep_mask` can be > 0), as its numpy slice takes it; the solid box is the largest
    box :func:`_keep_mask` sets to 1, as its slice takes it.
    """
    x0, y0, x1, y1 = _grown_bounds(keep, feather, w, h)
    (rx0, rx1), (ry0, ry1) = _span(x0, x1, w), _span(y0, y1, h)
    solid = (0, 0, 0, 0)
    for k in keep:
        bx0, by0, bx1, by1 = grow_box(k, 0.0, w, h)
        (sx0, sx1), (sy0, sy1) = _span(bx0, bx1, w), _span(by0, by1, h)
        if (sx1 - sx0) * (sy1 - sy0) > (solid[2] - solid[0]) * (solid[3] - solid[1]):
            solid = (sx0, sy0, sx1, sy1)
    return (rx0, ry0, rx1, ry1), solid


def _grown_bounds(keep: Sequence[Sequence[float]], feather: float, w: int, h: int) -> Box:
    """Return the bounding box of the ``keep`` boxes grown by ``2 * feather`` (each clipped)."""
    grown = [grow_box(k, 2 * feather, w, h) for k in keep]
    return (min(g[0] for g in grown), min(g[1] for g in grown),
            max(g[2] for g in grown), max(g[3] for g in grown))


def _blend_tiles(region: Box, solid: Box) -> tuple[list[Box], Box | None]:
    """Split ``region`` into the tiles to blend and the part of ``solid`` inside it.

    The tiles (up to four strips: above, below, left and right of the solid part) and that
    part cover ``region`` without overlap; the part is ``None`` when ``solid`` misses it.
    """
    x0, y0, x1, y1 = region
    if x1 <= x0 or y1 <= y0:
        return [], None
    sx0, sy0 = max(solid[0], x0), max(solid[1], y0)
    sx1, sy1 = min(solid[2], x1), min(solid[3], y1)
    if sx1 <= sx0 or sy1 <= sy0:
        return [region], None
    strips = [(x0, y0, x1, sy0), (x0, sy1, x1, y1), (x0, sy0, sx0, sy1), (sx1, sy0, x1, sy1)]
    return [t for t in strips if t[2] > t[0] and t[3] > t[1]], (sx0, sy0, sx1, sy1)


def _sharpen(blurred: np.ndarray, shot: np.ndarray, sharp: np.ndarray, region: Box,
             solid: Box, row0: int = 0) -> None:
    """Blend ``shot`` over ``blurred`` (in place) by the weight ``sharp`` on ``region``.

    ``cv2.blendLinear(shot, blurred, s, 1 - s)`` on the region, per pixel as one call on the
    whole region gives; ``sharp`` is exactly 1 on ``solid``, where that blend is ``shot``
    itself (``(a * 1 + b * 0) / (1 + 1e-5)`` rounds to ``a`` for every ``uint8``), so the solid
    part is copied and only the strips around it are blended. ``blurred`` and ``shot`` hold
    the image's rows from ``row0``; ``region`` and ``solid`` are in image pixels, ``region``'s
    rows among those held.
    """
    tiles, inside = _blend_tiles(region, solid)
    for x0, y0, x1, y1 in tiles:
        s = sharp[y0:y1, x0:x1]
        blurred[y0 - row0:y1 - row0, x0:x1] = cv2.blendLinear(
            shot[y0 - row0:y1 - row0, x0:x1], blurred[y0 - row0:y1 - row0, x0:x1], s,
            np.float32(1.0) - s)
    if inside is not None:
        x0, y0, x1, y1 = inside
        blurred[y0 - row0:y1 - row0, x0:x1] = shot[y0 - row0:y1 - row0, x0:x1]


@dataclass(frozen=True)
class CameraDraw:
    """Everything :func:`camera_pipeline` draws from its generator for one ``h x w`` image.

    ``gain`` is the light (and cast shadow) on the small field; ``blur`` is ``None`` or
    ``(kernel side, kernel_for)`` (the kernel for the image shrunk ``f`` times, see
    :func:`_kernel_filter`); ``noise`` the noise's tile offsets and flip.
    """

    shape: tuple[int, int]
    gain: np.ndarray
    blur: tuple[int, Callable[[float], np.ndarray]] | None
    sigma: float
    noise: tuple[int, int, bool] | None
    quality: int


def draw_camera(rng: np.random.Generator, h: int, w: int, strength: float,
                keep: Sequence[Sequence[float]] = ()) -> CameraDraw:
    """Draw :func:`camera_pipeline`'s chain for an ``h x w`` image (``0 < strength <= 1``).

    The draws are those :func:`camera_pipeline` makes, in the same order; none depends on
    ``keep`` (it only decides whether a drawn cast shadow is applied).
    """
    # the light and the cast shadow are one gain on the small field, applied in one pass
    gain = _lighting_gain(rng, h, w, strength * float(rng.uniform(0.4, 1.0)))
    if rng.random() < 0.5:
        shadow = _cast_shadow_gain(rng, h, w, strength, keep)  # draws the same whatever keep is
        if shadow is not None:
            gain *= shadow
    blur: tuple[int, Callable[[float], np.ndarray]] | None = None
    blur_kind = int(rng.integers(3))
    if blur_kind:
        scale = max(h, w) / 1000.0
        if blur_kind == 1:
            radius = float(rng.uniform(0.6, 2.0)) * strength * max(scale, 0.5)
            if radius > 0.25:  # lens_blur's own test
                blur = (2 * int(math.ceil(radius)) + 1,
                        lambda f: _disk_kernel(max(0.26, radius / f)))
        else:
            length = float(rng.uniform(1.5, 4.0)) * strength * max(scale, 0.5)
            angle = float(rng.uniform(0.0, 180.0))
            if length >= 1.0:  # motion_blur's own test
                blur = (2 * (int(math.ceil(length / 2)) + 1) + 1,
                        lambda f: _line_kernel(max(1.0, length / f), angle))
    sigma = float(rng.uniform(1.0, 4.0)) * strength
    noise = draw_noise_offsets(rng) if sigma > 0 else None
    quality = int(round(95 - float(rng.uniform(10.0, 35.0)) * strength))
    return CameraDraw((h, w), gain, blur, sigma, noise, quality)


def render_camera(img: np.ndarray, d: CameraDraw, keep: Sequence[Sequence[float]] = (),
                  gain: np.ndarray | None = None, sharp: np.ndarray | None = None,
                  out: np.ndarray | None = None) -> np.ndarray:
    """Return ``img`` through the drawn chain ``d`` (:func:`camera_pipeline`'s pixels).

    ``gain`` and ``sharp`` are the whole-image gain and keep mask when already made (see
    :class:`BandRenderer`); they are made here otherwise. ``out`` receives the pixels when
    given (the JPEG decoder writes there).
    """
    h, w = img.shape[:2]
    shot = _apply_gain(img, d.gain if gain is None else gain)
    if d.blur is not None:
        blurred = _kernel_filter(shot, *d.blur)
        if keep:
            feather = 0.02 * max(h, w)
            region, solid = _sharp_region(keep, feather, w, h)
            if sharp is None:
                sharp = _keep_mask(h, w, keep, feather)
            _sharpen(blurred, shot, sharp, region, solid)
        shot = blurred
    if d.noise is not None:
        shot = add_drawn_noise(shot, d.sigma, d.noise, inplace=shot is not img)
    return jpeg_artifacts(shot, d.quality, out)


JPEG_MCU: int = 16
"""Rows of one JPEG MCU row (4:2:0 chroma): the round trip codes each MCU on its own."""

JPEG_GUARD: int = 8
"""Rows next to a band's cut that the decoder's chroma upsampling may change (it reads one
chroma row across; 8 is ample)."""


class BandRenderer:
    """Renders rows of :func:`render_camera`'s output without the rest of the image.

    Every step of the chain is element-wise or row-local: the gain (element-wise once the small
    field is resized to the whole image, which is done once), a blur kernel of at most
    :data:`SPATIAL_KERNEL_SIDE` taps (row-local on full-width rows; the shrunk path of larger
    kernels resizes the whole image and is not banded), the sharp blend of the ``keep`` boxes
    (element-wise once the whole mask is made), the noise (element-wise) and the JPEG round
    trip (each 16-row MCU row is coded on its own; the decoder's chroma upsampling reads one
    chroma row across a cut, so :data:`JPEG_GUARD` rows next to a cut are not used). A band is
    rendered on full-width rows aligned to MCU rows, so the rows it returns are the very bytes
    of the whole image's.
    """

    def __init__(self, img: np.ndarray, d: CameraDraw, keep: Sequence[Sequence[float]]) -> None:
        self.img, self.d, self.keep = img, d, list(keep)
        h, w = img.shape[:2]
        self._gain: np.ndarray | None = None
        self._sharp: tuple[np.ndarray, Box, Box] | None = None
        self.bandable = d.blur is None or d.blur[0] <= SPATIAL_KERNEL_SIDE
        self.shape = (h, w)

    def _full_gain(self) -> np.ndarray:
        if self._gain is None:
            h, w = self.shape
            g = self.d.gain
            self._gain = g if g.shape == (h, w) else cv2.resize(g, (w, h),
                                                                interpolation=cv2.INTER_LINEAR)
        return self._gain

    def _sharp_box(self) -> tuple[np.ndarray, Box, Box]:
        if self._sharp is None:
            h, w = self.shape
            feather = 0.02 * max(h, w)
            region, solid = _sharp_region(self.keep, feather, w, h)
            self._sharp = (_keep_mask(h, w, self.keep, feather), region, solid)
        return self._sharp

    def rows(self, y0: int, y1: int) -> np.ndarray | None:
        """Return rows ``y0:y1`` of the whole output (``None``: this chain cannot be banded)."""
        if not self.bandable:
            return None
        h, w = self.shape
        # the rows coded: whole MCU rows, JPEG_GUARD rows beyond the wanted ones at a cut
        jy0 = 0 if y0 - JPEG_GUARD <= 0 else (y0 - JPEG_GUARD) // JPEG_MCU * JPEG_MCU
        jy1 = -(-(y1 + JPEG_GUARD) // JPEG_MCU) * JPEG_MCU
        if jy1 >= h:
            jy1 = h
        # the rows the blur reads around them
        m = 0 if self.d.blur is None else self.d.blur[0] // 2 + 1
        ay0, ay1 = max(0, jy0 - m), min(h, jy1 + m)
        out = _apply_gain(self.img[ay0:ay1], self._full_gain()[ay0:ay1])
        if self.d.blur is not None:
            blurred = _kernel_filter(out, *self.d.blur)
            if self.keep:
                # the rows of render_camera's blend region (as its slices take them) held here
                sharp, (rx0, ry0, rx1, ry1), solid = self._sharp_box()
                r0, r1 = max(ry0, ay0), min(ry1, ay1)
                if r1 > r0:
                    _sharpen(blurred, out, sharp, (rx0, r0, rx1, r1), solid, ay0)
            out = blurred
        out = np.ascontiguousarray(out[jy0 - ay0:jy1 - ay0])
        if self.d.noise is not None:
            out = add_drawn_noise(out, self.d.sigma, self.d.noise, inplace=True, row0=jy0)
        return jpeg_artifacts(out, self.d.quality)[y0 - jy0:y1 - jy0]


@dataclass
class DeferredCamera:
    """A :func:`camera_pipeline` call left undone: ``out`` is filled by :meth:`finish`."""

    out: np.ndarray
    img: np.ndarray
    draw: CameraDraw
    keep: list[Sequence[float]]
    bands: BandRenderer

    def finish(self) -> None:
        """Write the whole output into ``out`` (in place; its flags are kept)."""
        writeable = self.out.flags.writeable
        self.out.setflags(write=True)
        b = self.bands
        render_camera(self.img, self.draw, self.keep, b._gain,
                      None if b._sharp is None else b._sharp[0], out=self.out)
        self.out.setflags(write=writeable)

    def fill_rows(self, y0: int, y1: int) -> bool:
        """Write rows ``y0:y1`` of the output into ``out``; False when they cannot be banded."""
        rows = self.bands.rows(y0, y1)
        if rows is None:
            return False
        writeable = self.out.flags.writeable
        self.out.setflags(write=True)
        self.out[y0:y1] = rows
        self.out.setflags(write=writeable)
        return True


_DEFERRED: ContextVar[list[DeferredCamera] | None] = ContextVar("_DEFERRED", default=None)


@contextmanager
def deferred_cameras() -> Iterator[list[DeferredCamera]]:
    """Within the block, :func:`camera_pipeline` draws its chain but renders nothing.

    Each call returns a zero image of the right size and appends a :class:`DeferredCamera` to
    the yielded list: its rows can then be rendered alone (:meth:`DeferredCamera.fill_rows`)
    and the whole image at once (:meth:`DeferredCamera.finish`), into the returned array. The
    generator is left where :func:`camera_pipeline` leaves it. Code inside the block must not
    read a returned image (only pass it on) nor change a camera's input afterwards.
    """
    pending: list[DeferredCamera] = []
    token = _DEFERRED.set(pending)
    try:
        yield pending
    finally:
        _DEFERRED.reset(token)


def camera_pipeline(
    img: np.ndarray, rng: np.random.Generator, strength: float,
    keep: Sequence[Sequence[float]] = (),
) -> np.ndarray:
    """Return ``img`` as a camera would record it: one chain of effects sampled by ``rng``.

    In order: :func:`uneven_lighting` (always) and a cast shadow (half the tasks; never over a
    ``keep`` box), applied as one gain, lens or motion blur (two tasks in three; the ``keep``
    boxes and a feathered margin stay sharp, as if in focus), sensor noise and a JPEG round
    trip. Every amount scales with ``strength`` in [0, 1]; strength 0 returns ``img`` itself
    and draws nothing. ``keep``
    holds the boxes whose legibility the task relies on (the evidence). The input is not
    modified. The draws from ``rng`` do not depend on ``keep``. Inside
    :func:`deferred_cameras` the chain is drawn and its rendering left to the caller.
    """
    if not 0.0 <= strength <= 1.0:
        raise ValueError(f"strength must be in [0, 1], got {strength}")
    if strength == 0.0:
        return img
    if img.ndim != 3 or img.shape[2] != 3 or img.dtype != np.uint8:
        raise ValueError(f"camera_pipeline needs a uint8 RGB image, got {img.dtype} {img.shape}")
    h, w = img.shape[:2]
    d = draw_camera(rng, h, w, strength, keep)
    pending = _DEFERRED.get()
    if pending is None:
        return render_camera(img, d, keep)
    keep = [tuple(k) for k in keep]
    out = np.zeros_like(img)
    pending.append(DeferredCamera(out, img, d, keep, BandRenderer(img, d, keep)))
    return out
