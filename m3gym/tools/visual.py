"""The image tools: Agentic-MME's 13 atomic visual operations plus ``enhance``.

Every tool reads one image of the :class:`~m3gym.state.ImageState` by index and returns a new
``uint8`` image; nothing touches disk and inputs are never modified (they are read-only).

Conventions shared by all tools:

* **Channels.** Inputs are ``(H, W, 3)`` RGB or ``(H, W)`` grayscale ``uint8``; every tool accepts
  both. Tools whose result is a single intensity channel by nature (``grayscale``, ``threshold``,
  ``edge_detect``) always return a 2-D ``(H, W)`` array; every other tool keeps the channel layout
  of its input.
* **Coordinates.** Affine maps (``ToolOutput.step_affine``) use *continuous* pixel coordinates:
  pixel ``(i, j)`` covers ``[j, j+1) x [i, i+1)``, so its centre is ``(j + 0.5, i + 0.5)`` and the
  image spans ``[0, W] x [0, H]``. In this convention a resize by ``s`` is exactly ``x' = s x``, a
  crop at ``x0`` is exactly ``x' = x - x0`` and a horizontal flip is exactly ``x' = W - x``, so
  evidence boxes ``(x0, y0, x1, y1)`` map corner to corner.
* **Geometric tools** (crop, rotate, flip, resize) return the exact 2x3 map from parent pixels to
  new pixels; **photometric tools** return ``step_affine=None``.
* **Size limits.** Geometric tools refuse outputs larger than :data:`MAX_SIDE` pixels a side or
  :data:`MAX_PIXELS` pixels in all, and smaller than 1 pixel, with a message saying why.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any, Literal

import cv2
import numpy as np
from pydantic import Field, field_validator, model_validator

from m3gym.geometry import (
    EDGE_EPS,
    affine_matrix,
    bbox1000_edges,
    bbox1000_spans_a_pixel,
    bbox1000_to_box,
    rotated_size,
    rotation_affine,
)
from m3gym.pixels import to_gray
from m3gym.tools.base import (
    ContentSimilarity,
    Discretization,
    FrameBehaviour,
    ImageArgs,
    ToolContext,
    ToolError,
    ToolOutput,
    ToolSpec,
)

MAX_SIDE = 8192
"""Largest side, in pixels, a geometric tool may produce."""

MAX_PIXELS = 4096 * 4096
"""Largest pixel count (width x height) a geometric tool may produce (48 MiB as RGB)."""

_EPS = EDGE_EPS

# PIL's ImageFilter kernels, applied with cv2.filter2D (replicated borders).
_SHARPEN_KERNEL = np.array([[-2, -2, -2], [-2, 32, -2], [-2, -2, -2]], np.float32) / 16.0
_SMOOTH_KERNEL = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], np.float32) / 13.0
_FIND_EDGES_KERNEL = np.array([[-1, -1, -1], [-1, 8, -1], [-1, -1, -1]], np.float32)
# 3x3 neighbourhood without its centre: min/max over the 8 neighbours (impulse detection).
_RING = np.array([[1, 1, 1], [1, 0, 1], [1, 1, 1]], np.uint8)
_IDENTITY_LUT = np.arange(256, dtype=np.uint8)
# Counter-clockwise quarter turns k = 1, 2, 3 as cv2.rotate codes (same result as np.rot90).
_QUARTER_TURN_CODES = {1: cv2.ROTATE_90_COUNTERCLOCKWISE, 2: cv2.ROTATE_180,
                       3: cv2.ROTATE_90_CLOCKWISE}


# --------------------------------------------------------------------------------------------
# small helpers
# --------------------------------------------------------------------------------------------


def _lower(value: Any) -> Any:
    """Lower-case and strip strings so enum arguments are case-insensitive."""
    return value.strip().lower() if isinstance(value, str) else value


def _source(ctx: ToolContext, index: int) -> np.ndarray:
    """Return the pixels of image ``index`` (raises a precise ToolError for a bad index)."""
    return ctx.image(index).array


def _size_text(array: np.ndarray) -> str:
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


# --------------------------------------------------------------------------------------------
# crop
# --------------------------------------------------------------------------------------------

Coord = Annotated[float, Field(ge=0, le=1000)]


class CropArgs(ImageArgs):
    """Arguments of ``crop``."""

    bbox_2d: list[Coord] = Field(
        min_length=4, max_length=4,
        description=(
            "Region to keep as [x1, y1, x2, y2] on a 0-1000 scale of the source image: (0, 0) is "
            "the top-left corner and (1000, 1000) the bottom-right corner, whatever the image's "
            "pixel size. Requires x1 < x2 and y1 < y2."
        ),
    )
    zoom_scale: float = Field(
        default=1.0, ge=0.5, le=5.0,
        description=(
            "Magnification of the cropped region, 0.5-5.0. Values > 1 enlarge it with a "
            "high-quality filter (useful to read small text); 1.0 keeps the original pixels."
        ),
    )

    @field_validator("bbox_2d")
    @classmethod
    def _ordered(cls, box: list[float]) -> list[float]:
        x1, y1, x2, y2 = box
        if not x1 < x2:
            raise ValueError(f"bbox_2d needs x1 < x2 (left edge before right edge), got x1={x1:g}, "
                             f"x2={x2:g}")
        if not y1 < y2:
            raise ValueError(f"bbox_2d needs y1 < y2 (top edge above bottom edge), got y1={y1:g}, "
                             f"y2={y2:g}")
        return box


def crop_pixel_box(box: list[float], width: int, height: int) -> tuple[int, int, int, int]:
    """Map a 0-1000 box to integer pixel edges ``(x0, y0, x1, y1)``, rounding outward.

    :func:`m3gym.geometry.bbox1000_to_box`, after refusing (:class:`ToolError`) a box that covers
    less than one pixel in either direction.
    """
    if not bbox1000_spans_a_pixel(box, width, height):
        fx1, fy1, fx2, fy2 = bbox1000_edges(box, width, height)
        raise ToolError(
            f"crop: bbox_2d {list(box)} covers {fx2 - fx1:.2f}x{fy2 - fy1:.2f} px of the "
            f"{width}x{height} image; the box must span at least 1 pixel each way"
        )
    return bbox1000_to_box(box, width, height)


def crop(ctx: ToolContext, args: CropArgs) -> ToolOutput:
    """Crop a 0-1000 box of the image, optionally zooming it; zoom 1.0 returns a view."""
    src = _source(ctx, args.image_index)
    h, w = src.shape[:2]
    x0, y0, x1, y1 = crop_pixel_box(args.bbox_2d, w, h)
    cw, ch = x1 - x0, y1 - y0
    zoom = args.zoom_scale
    out_w, out_h = max(1, round(cw * zoom)), max(1, round(ch * zoom))
    if zoom != 1.0:
        check_output_size(out_w, out_h, f"crop: zoom_scale {zoom:g} of a {cw}x{ch} px box")
    view = src[y0:y1, x0:x1]
    if (out_w, out_h) == (cw, ch):
        out, out_w, out_h = view, cw, ch
    else:
        interp = cv2.INTER_LANCZOS4 if zoom > 1 else cv2.INTER_AREA
        out = cv2.resize(view, (out_w, out_h), interpolation=interp)
    sx, sy = out_w / cw, out_h / ch
    affine = affine_matrix(sx, 0.0, -x0 * sx, 0.0, sy, -y0 * sy)
    box = "[" + ",".join(f"{v:g}" for v in args.bbox_2d) + "]"
    return ToolOutput(
        text=f"Cropped {box} of Image {args.image_index} (pixels x {x0}-{x1}, y {y0}-{y1}) "
             f"at zoom {zoom:g}.",
        image=out, parent=args.image_index, step_affine=affine,
    )


# --------------------------------------------------------------------------------------------
# rotate
# --------------------------------------------------------------------------------------------


class RotateArgs(ImageArgs):
    """Arguments of ``rotate``."""

    angle: float = Field(
        description=(
            "Rotation in degrees; positive turns the image counter-clockwise, negative clockwise. "
            "Multiples of 90 are lossless."
        ),
    )
    expand: bool = Field(
        default=True,
        description=(
            "If true, enlarge the canvas so the whole rotated image fits; if false, keep the "
            "original size and cut off the corners. Uncovered areas are filled with black."
        ),
    )


def _place(src: np.ndarray, out_w: int, out_h: int, ox: int, oy: int) -> np.ndarray:
    """Return an ``out_h x out_w`` black canvas with ``src`` pasted at integer offset (ox, oy)."""
    canvas = np.zeros((out_h, out_w, *src.shape[2:]), dtype=np.uint8)
    h, w = src.shape[:2]
    dx0, dy0 = max(0, ox), max(0, oy)
    dx1, dy1 = min(out_w, ox + w), min(out_h, oy + h)
    if dx1 > dx0 and dy1 > dy0:
        canvas[dy0:dy1, dx0:dx1] = src[dy0 - oy:dy1 - oy, dx0 - ox:dx1 - ox]
    return canvas


def rotate(ctx: ToolContext, args: RotateArgs) -> ToolOutput:
    """Rotate counter-clockwise; quarter turns are exact, other angles bilinear on black."""
    src = _source(ctx, args.image_index)
    h, w = src.shape[:2]
    angle = math.fmod(args.angle, 360.0)
    quarter = angle / 90.0
    desc = f"Rotated Image {args.image_index} by {args.angle:g} degrees counter-clockwise"
    if abs(quarter - round(quarter)) < _EPS:
        k = round(quarter) % 4
        turned = (np.ascontiguousarray(src) if k == 0
                  else cv2.rotate(src, _QUARTER_TURN_CODES[k]))
        tw, th = (h, w) if k % 2 else (w, h)
        affine = rotation_affine(90.0 * k, w, h, tw, th)
        if args.expand or (tw, th) == (w, h):
            return ToolOutput(text=f"{desc} (lossless, {_size_text(turned)}).", image=turned,
                              parent=args.image_index, step_affine=affine)
        # Same canvas: centre the turned image at a whole-pixel offset so no resampling happens.
        ox, oy = (w - tw) // 2, (h - th) // 2
        out = _place(turned, w, h, ox, oy)
        shift = affine_matrix(1.0, 0.0, ox, 0.0, 1.0, oy)
        full = np.vstack([shift, [0, 0, 1]]) @ np.vstack([affine, [0, 0, 1]])
        return ToolOutput(text=f"{desc} (lossless, canvas kept at {w}x{h}).", image=out,
                          parent=args.image_index, step_affine=affine_matrix(*full[:2].ravel()))
    out_w, out_h = rotated_size(angle, w, h) if args.expand else (w, h)
    check_output_size(out_w, out_h, f"rotate: angle {args.angle:g} with expand")
    affine = rotation_affine(angle, w, h, out_w, out_h)
    # cv2 samples at integer pixel indices (centres at i, not i + 0.5): shift in and out.
    to_index = affine.copy()
    to_index[:, 2] += affine[:, :2].sum(axis=1) * 0.5 - 0.5
    out = cv2.warpAffine(src, to_index, (out_w, out_h), flags=cv2.INTER_LINEAR,
                         borderMode=cv2.BORDER_CONSTANT, borderValue=0)
    return ToolOutput(text=f"{desc} ({_size_text(out)}, corners filled black).", image=out,
                      parent=args.image_index, step_affine=affine)


# --------------------------------------------------------------------------------------------
# flip
# --------------------------------------------------------------------------------------------


class FlipArgs(ImageArgs):
    """Arguments of ``flip``."""

    direction: Literal["horizontal", "vertical", "both"] = Field(
        default="horizontal",
        description=(
            "'horizontal' mirrors left-right, 'vertical' mirrors top-bottom, 'both' does both "
            "(same as a 180-degree rotation)."
        ),
    )

    _norm = field_validator("direction", mode="before")(_lower)


_FLIP_CODES = {"horizontal": 1, "vertical": 0, "both": -1}


def flip(ctx: ToolContext, args: FlipArgs) -> ToolOutput:
    """Mirror the image horizontally, vertically or both (lossless)."""
    src = _source(ctx, args.image_index)
    h, w = src.shape[:2]
    out = cv2.flip(src, _FLIP_CODES[args.direction])
    fx = args.direction in ("horizontal", "both")
    fy = args.direction in ("vertical", "both")
    affine = affine_matrix(-1.0 if fx else 1.0, 0.0, float(w) if fx else 0.0,
                           0.0, -1.0 if fy else 1.0, float(h) if fy else 0.0)
    return ToolOutput(text=f"Flipped Image {args.image_index} {args.direction}.", image=out,
                      parent=args.image_index, step_affine=affine)


# --------------------------------------------------------------------------------------------
# resize
# --------------------------------------------------------------------------------------------


class ResizeArgs(ImageArgs):
    """Arguments of ``resize``: either ``width`` and ``height``, or ``scale``."""

    width: int | None = Field(
        default=None, ge=1, le=MAX_SIDE,
        description="New width in pixels; give it together with height (and without scale).",
    )
    height: int | None = Field(
        default=None, ge=1, le=MAX_SIDE,
        description="New height in pixels; give it together with width (and without scale).",
    )
    scale: float | None = Field(
        default=None, gt=0, le=16,
        description="Uniform scale factor (e.g. 2.0 doubles both sides); use instead of "
                    "width/height.",
    )

    @model_validator(mode="after")
    def _one_form(self) -> ResizeArgs:
        has_w, has_h, has_s = (self.width is not None, self.height is not None,
                               self.scale is not None)
        if has_s and (has_w or has_h):
            raise ValueError("resize takes either 'scale' or 'width' and 'height', not both")
        if not has_s and not (has_w and has_h):
            if has_w or has_h:
                missing = "height" if has_w else "width"
                raise ValueError(f"resize with width/height needs both: '{missing}' is missing")
            raise ValueError("resize needs either 'width' and 'height', or 'scale'")
        return self


def resize(ctx: ToolContext, args: ResizeArgs) -> ToolOutput:
    """Resize to ``width x height`` or by ``scale`` (area filter to shrink, cubic to enlarge)."""
    src = _source(ctx, args.image_index)
    h, w = src.shape[:2]
    if args.scale is not None:
        out_w, out_h = round(w * args.scale), round(h * args.scale)
        what = f"resize: scale {args.scale:g} of a {w}x{h} image"
    else:
        out_w, out_h = int(args.width), int(args.height)  # type: ignore[arg-type]
        what = f"resize: width {out_w}, height {out_h}"
    check_output_size(out_w, out_h, what)
    out = resize_to(src, out_w, out_h)
    affine = affine_matrix(out_w / w, 0.0, 0.0, 0.0, out_h / h, 0.0)
    return ToolOutput(text=f"Resized Image {args.image_index} from {w}x{h} to {out_w}x{out_h}.",
                      image=out, parent=args.image_index, step_affine=affine)


# --------------------------------------------------------------------------------------------
# photometric tools
# --------------------------------------------------------------------------------------------


def _photometric(args: ImageArgs, out: np.ndarray, text: str) -> ToolOutput:
    return ToolOutput(text=text, image=out, parent=args.image_index, step_affine=None)


class NoArgs(ImageArgs):
    """Arguments of a tool that takes only the image (and an optional label)."""


def grayscale(ctx: ToolContext, args: NoArgs) -> ToolOutput:
    """Convert to single-channel luma (PIL ``"L"`` weights); output is 2-D ``(H, W)``."""
    out = np.ascontiguousarray(to_gray(_source(ctx, args.image_index)))
    return _photometric(args, out, f"Converted Image {args.image_index} to grayscale.")


class AutocontrastArgs(ImageArgs):
    """Arguments of ``autocontrast``."""

    cutoff: float = Field(
        default=0.0, ge=0, le=49,
        description=(
            "Percent of the darkest and of the lightest pixels to ignore (0-49) before "
            "stretching each channel to the full 0-255 range."
        ),
    )


def autocontrast_luts(hists: np.ndarray, cutoff: float) -> np.ndarray:
    """Return PIL-style autocontrast lookup tables, one per histogram row."""
    luts = np.empty(hists.shape, dtype=np.uint8)
    levels = np.arange(256, dtype=np.float64)
    for c, hist in enumerate(hists):
        total = int(hist.sum())
        cut = total * cutoff / 100.0
        below = np.cumsum(hist)
        above = np.cumsum(hist[::-1])[::-1]
        lo_idx = np.flatnonzero(below > cut)
        hi_idx = np.flatnonzero(above > cut)
        if lo_idx.size == 0 or hi_idx.size == 0 or hi_idx[-1] <= lo_idx[0]:
            luts[c] = _IDENTITY_LUT
            continue
        lo, hi = int(lo_idx[0]), int(hi_idx[-1])
        scale = 255.0 / (hi - lo)
        luts[c] = np.clip(np.floor(levels * scale - lo * scale), 0, 255).astype(np.uint8)
    return luts


def autocontrast(ctx: ToolContext, args: AutocontrastArgs) -> ToolOutput:
    """Stretch each channel so its (cut) darkest level becomes 0 and lightest 255."""
    src = _source(ctx, args.image_index)
    luts = autocontrast_luts(channel_histograms(src), args.cutoff)
    out = apply_lut(src, luts[0] if src.ndim == 2 else luts)
    return _photometric(args, out, f"Auto-contrasted Image {args.image_index} "
                                   f"(cutoff {args.cutoff:g}%).")


def invert(ctx: ToolContext, args: NoArgs) -> ToolOutput:
    """Return the negative image (255 - value)."""
    out = cv2.bitwise_not(_source(ctx, args.image_index))
    return _photometric(args, out, f"Inverted Image {args.image_index}.")


def equalize_luts(hists: np.ndarray) -> np.ndarray:
    """Return PIL ``ImageOps.equalize`` lookup tables, one per histogram row."""
    luts = np.empty(hists.shape, dtype=np.uint8)
    for c, hist in enumerate(hists):
        used = hist[hist > 0]
        step = (int(used.sum()) - int(used[-1])) // 255 if used.size > 1 else 0
        if step == 0:
            luts[c] = _IDENTITY_LUT
            continue
        before = np.concatenate([[0], np.cumsum(hist)[:-1]])
        luts[c] = np.minimum((step // 2 + before) // step, 255).astype(np.uint8)
    return luts


def equalize(ctx: ToolContext, args: NoArgs) -> ToolOutput:
    """Equalize the histogram of each channel separately (like PIL ``ImageOps.equalize``)."""
    src = _source(ctx, args.image_index)
    luts = equalize_luts(channel_histograms(src))
    out = apply_lut(src, luts[0] if src.ndim == 2 else luts)
    return _photometric(args, out, f"Equalized the histogram of Image {args.image_index}.")


class ThresholdArgs(ImageArgs):
    """Arguments of ``threshold``."""

    value: int = Field(default=128, ge=0, le=255,
                       description="Threshold on the grayscale intensity, 0-255.")
    mode: Literal["binary", "binary_inv", "trunc", "tozero"] = Field(
        default="binary",
        description=(
            "'binary': 255 where intensity > value, else 0; 'binary_inv': the opposite; "
            "'trunc': values above value become value; 'tozero': values <= value become 0."
        ),
    )

    _norm = field_validator("mode", mode="before")(_lower)


_THRESHOLD_TYPES = {"binary": cv2.THRESH_BINARY, "binary_inv": cv2.THRESH_BINARY_INV,
                    "trunc": cv2.THRESH_TRUNC, "tozero": cv2.THRESH_TOZERO}


def threshold(ctx: ToolContext, args: ThresholdArgs) -> ToolOutput:
    """Threshold the grayscale intensity; output is 2-D ``(H, W)``."""
    gray = to_gray(_source(ctx, args.image_index))
    _, out = cv2.threshold(gray, args.value, 255, _THRESHOLD_TYPES[args.mode])
    return _photometric(args, out, f"Thresholded Image {args.image_index} at {args.value} "
                                   f"({args.mode}).")


class BlurArgs(ImageArgs):
    """Arguments of ``blur``."""

    radius: float = Field(default=2.0, ge=0, le=50,
                          description="Gaussian blur radius (standard deviation) in pixels, 0-50.")


def gaussian_blur(src: np.ndarray, sigma: float) -> np.ndarray:
    """Gaussian blur with standard deviation ``sigma``; large sigmas are blurred at lower scale.

    Above sigma 6 the image is shrunk so the remaining blur is sigma 3, blurred, and enlarged
    back; the error is far below what a blur that wide shows and keeps the cost flat in sigma.
    """
    if sigma <= 0:
        return np.ascontiguousarray(src)
    h, w = src.shape[:2]
    factor = sigma / 3.0
    if sigma <= 6 or min(h, w) / factor < 8:
        return cv2.GaussianBlur(src, (0, 0), sigmaX=sigma, borderType=cv2.BORDER_REFLECT)
    small_w, small_h = max(1, round(w / factor)), max(1, round(h / factor))
    small = cv2.resize(src, (small_w, small_h), interpolation=cv2.INTER_AREA)
    # INTER_AREA already averages over ~factor pixels (variance factor^2/12): take it off.
    rest = math.sqrt(max(0.25, 9.0 - 1.0 / 12.0))
    small = cv2.GaussianBlur(small, (0, 0), sigmaX=rest, borderType=cv2.BORDER_REFLECT)
    return cv2.resize(small, (w, h), interpolation=cv2.INTER_LINEAR)


def blur(ctx: ToolContext, args: BlurArgs) -> ToolOutput:
    """Gaussian blur with standard deviation ``radius``."""
    out = gaussian_blur(_source(ctx, args.image_index), args.radius)
    return _photometric(args, out, f"Blurred Image {args.image_index} (Gaussian radius "
                                   f"{args.radius:g}).")


def sharpen(ctx: ToolContext, args: NoArgs) -> ToolOutput:
    """Sharpen with PIL's SHARPEN kernel (centre 32, neighbours -2, divided by 16)."""
    out = cv2.filter2D(_source(ctx, args.image_index), -1, _SHARPEN_KERNEL,
                       borderType=cv2.BORDER_REPLICATE)
    return _photometric(args, out, f"Sharpened Image {args.image_index}.")


class DenoiseArgs(ImageArgs):
    """Arguments of ``denoise``."""

    strength: float = Field(
        default=10, ge=1, le=30,
        description=(
            "Denoising strength 1-30 (roughly the noise standard deviation to remove, in 8-bit "
            "levels). Higher removes more noise but flattens faint detail."
        ),
    )


def remove_impulses(src: np.ndarray, margin: int = 40, extreme: int = 8) -> np.ndarray:
    """Replace salt-and-pepper pixels by their 3x3 median, leaving other pixels untouched.

    A channel value is an impulse when it lies more than ``margin`` levels outside the range of
    its 8 neighbours (an isolated dot; thin strokes have neighbours along them), or when it is
    near-black/near-white (within ``extreme`` of 0/255) and more than ``margin`` from the median.
    Work buffers are reused (``dst=``) because fresh large arrays cost page faults.
    """
    med = cv2.medianBlur(src, 3)
    # mask = outside the neighbour range by more than margin
    mask = cv2.erode(src, _RING, borderType=cv2.BORDER_REPLICATE)
    work = cv2.dilate(src, _RING, borderType=cv2.BORDER_REPLICATE)
    cv2.subtract(mask, src, dst=mask)
    cv2.subtract(src, work, dst=work)
    cv2.max(mask, work, dst=mask)
    # Comparisons with a constant as lookup tables (cv2.compare with a scalar misreads 1x1 images)
    above_margin = np.where(_IDENTITY_LUT > margin, 255, 0).astype(np.uint8)
    extreme_lut = np.where((_IDENTITY_LUT <= extreme) | (_IDENTITY_LUT >= 255 - extreme),
                           255, 0).astype(np.uint8)
    cv2.LUT(mask, above_margin, dst=mask)
    # ... or near-black/white and far from the median
    far = cv2.absdiff(src, med)
    cv2.LUT(far, above_margin, dst=far)
    cv2.bitwise_and(cv2.LUT(src, extreme_lut, dst=work), far, dst=far)
    cv2.bitwise_or(mask, far, dst=mask)
    # out = src where mask == 0, med where mask == 255 (bitwise select)
    cv2.bitwise_xor(src, med, dst=work)
    cv2.bitwise_and(work, mask, dst=work)
    return cv2.bitwise_xor(src, work, dst=work)


def denoise_image(src: np.ndarray, strength: float) -> np.ndarray:
    """Remove impulse noise, then Gaussian-like noise with an edge-preserving bilateral filter.

    ``strength`` sets the bilateral range sigma (4.5 x strength levels): differences well below
    it are smoothed, larger ones (edges, text strokes) are kept. 50-80x faster than
    ``cv2.fastNlMeansDenoisingColored`` on 1024x1024 and better on salt-and-pepper noise.
    """
    clean = remove_impulses(src)
    return cv2.bilateralFilter(clean, d=5, sigmaColor=4.5 * strength, sigmaSpace=3.0,
                               borderType=cv2.BORDER_REFLECT)


def denoise(ctx: ToolContext, args: DenoiseArgs) -> ToolOutput:
    """Remove salt-and-pepper and Gaussian noise while keeping edges (see denoise_image)."""
    out = denoise_image(_source(ctx, args.image_index), args.strength)
    return _photometric(args, out, f"Denoised Image {args.image_index} (strength "
                                   f"{args.strength:g}).")


class EdgeDetectArgs(ImageArgs):
    """Arguments of ``edge_detect``."""

    method: Literal["canny", "sobel", "simple"] = Field(
        default="canny",
        description=(
            "'canny': thin binary edges (thresholds 100/200); 'sobel': gradient magnitude "
            "(3x3 kernels); 'simple': 3x3 Laplacian-like edge filter (PIL FIND_EDGES)."
        ),
    )

    _norm = field_validator("method", mode="before")(_lower)


def edge_map(gray: np.ndarray, method: str) -> np.ndarray:
    """Return the 2-D uint8 edge map of a grayscale image by ``method``."""
    if method == "canny":
        return cv2.Canny(gray, 100, 200)
    if method == "sobel":
        gx = cv2.Sobel(gray, cv2.CV_32F, 1, 0, ksize=3)
        gy = cv2.Sobel(gray, cv2.CV_32F, 0, 1, ksize=3)
        return cv2.convertScaleAbs(cv2.magnitude(gx, gy))
    return cv2.filter2D(gray, -1, _FIND_EDGES_KERNEL, borderType=cv2.BORDER_REPLICATE)


def edge_detect(ctx: ToolContext, args: EdgeDetectArgs) -> ToolOutput:
    """Detect edges on the grayscale intensity; output is 2-D ``(H, W)``."""
    out = edge_map(to_gray(_source(ctx, args.image_index)), args.method)
    return _photometric(args, out, f"Detected edges in Image {args.image_index} "
                                   f"({args.method}).")


Factor = Annotated[float, Field(ge=0, le=5)]


class EnhanceArgs(ImageArgs):
    """Arguments of ``enhance``."""

    brightness: Factor = Field(
        default=1.0, description="Brightness multiplier 0-5: 0 = black, 1 = unchanged, 2 = twice "
                                 "as bright.")
    contrast: Factor = Field(
        default=1.0, description="Contrast multiplier 0-5: 0 = flat mean gray, 1 = unchanged, "
                                 ">1 = more contrast.")
    sharpness: Factor = Field(
        default=1.0, description="Sharpness multiplier 0-5: 0 = smoothed, 1 = unchanged, "
                                 ">1 = sharper.")


def _scaled_lut(factor: float, pivot: float) -> np.ndarray:
    levels = np.arange(256, dtype=np.float64)
    return np.clip(np.rint(pivot + factor * (levels - pivot)), 0, 255).astype(np.uint8)


def enhance_image(src: np.ndarray, brightness: float, contrast: float,
                  sharpness: float) -> np.ndarray:
    """Apply PIL ``ImageEnhance`` Brightness, then Contrast, then Sharpness (vectorized).

    Each is a blend ``degenerate + f (image - degenerate)``: black for brightness, the mean
    luma (rounded) for contrast, PIL's SMOOTH filter for sharpness. Factor 1.0 skips the stage.
    """
    out = src
    if brightness != 1.0:
        out = cv2.LUT(out, _scaled_lut(brightness, 0.0))
    if contrast != 1.0:
        mean = math.floor(float(cv2.mean(to_gray(out))[0]) + 0.5)
        out = cv2.LUT(out, _scaled_lut(contrast, float(mean)))
    if sharpness != 1.0:
        smooth = cv2.filter2D(out, -1, _SMOOTH_KERNEL, borderType=cv2.BORDER_REPLICATE)
        out = cv2.addWeighted(out, sharpness, smooth, 1.0 - sharpness, 0.0)
    return np.ascontiguousarray(out)


def enhance(ctx: ToolContext, args: EnhanceArgs) -> ToolOutput:
    """Adjust brightness, contrast and sharpness by multipliers (1.0 = unchanged)."""
    out = enhance_image(_source(ctx, args.image_index), args.brightness, args.contrast,
                        args.sharpness)
    return _photometric(args, out, f"Enhanced Image {args.image_index} (brightness "
                                   f"{args.brightness:g}, contrast {args.contrast:g}, sharpness "
                                   f"{args.sharpness:g}).")


# --------------------------------------------------------------------------------------------
# specs
# --------------------------------------------------------------------------------------------


_IMAGE_CONTENT: Mapping[str, ContentSimilarity] = {"image_index": "image"}
_SAME = object()  # lineage_op default: the tool's own name


def _spec(name: str, description: str, model: type[ImageArgs], fn: Any, *,
          frame: FrameBehaviour = "preserving", equivalence: str | None = None,
          content: Mapping[str, ContentSimilarity] = _IMAGE_CONTENT,
          signature: str | None = None, code_names: tuple[str, ...] = (),
          code_attributes: tuple[str, ...] = (), lineage_op: Any = _SAME,
          discrete: Discretization | None = None) -> ToolSpec:
    return ToolSpec(name=name, description=description, args_model=model, fn=fn, kind="visual",
                    frame=frame, equivalence=equivalence, content=content,
                    code_signature=signature, code_names=code_names,
                    code_attributes=code_attributes,
                    lineage_op=name if lineage_op is _SAME else lineage_op, discrete=discrete)


def _options(key: str, values: tuple[Any, ...], **fixed: Any) -> tuple[dict[str, Any], ...]:
    """Return the discrete wrapper's argument sets ``{key: v, **fixed}`` for each value."""
    return tuple({key: v, **fixed} for v in values)


VISUAL_TOOLS: tuple[ToolSpec, ...] = (
    _spec("crop", "Crop a region of an image given as bbox_2d [x1, y1, x2, y2] on a 0-1000 scale "
          "((0,0) top-left, (1000,1000) bottom-right), optionally zoomed in by zoom_scale. "
          "Returns the index of the new image.", CropArgs, crop, frame="affine",
          content={"bbox_2d": "box"}, signature="crop(image_index, bbox_2d, zoom_scale=1.0)",
          lineage_op="crop_px", discrete=Discretization(default_slot=1)),
    _spec("rotate", "Rotate an image by angle degrees (positive = counter-clockwise). Returns the "
          "index of the new image.", RotateArgs, rotate, frame="affine", equivalence="upright",
          content={"angle": "upright_angle"}, signature="rotate(image_index, angle, expand=True)",
          code_names=("rot90", "warpAffine"),
          discrete=Discretization(_options("angle", (90, 180, 270), expand=True), 2)),
    _spec("flip", "Mirror an image horizontally, vertically or both. Returns the index of the "
          "new image.", FlipArgs, flip, frame="affine", equivalence="upright",
          content={"direction": "exact"}, signature='flip(image_index, direction="horizontal")',
          code_names=("fliplr", "flipud", "mirror", "transpose"),
          discrete=Discretization(_options("direction", ("horizontal", "vertical", "both")), 3)),
    _spec("resize", "Resize an image to width x height pixels, or by a scale factor. Returns the "
          "index of the new image.", ResizeArgs, resize,
          signature="resize(image_index, width=None, height=None, scale=None)",
          code_names=("thumbnail",)),
    _spec("grayscale", "Convert an image to grayscale (single channel). Returns the index of the "
          "new image.", NoArgs, grayscale, signature="grayscale(i)",
          code_names=("cvtColor", "convert"), discrete=Discretization(default_slot=10)),
    _spec("autocontrast", "Stretch each channel to the full 0-255 range, optionally ignoring a "
          "cutoff percent of extreme pixels; reveals faint content. Returns the index of the new "
          "image.", AutocontrastArgs, autocontrast, equivalence="contrast",
          signature="autocontrast(i, cutoff=0)", code_names=("normalize",),
          discrete=Discretization(_options("cutoff", (0.0, 0.5, 1.0, 2.0, 5.0, 10.0)), 4)),
    _spec("invert", "Invert the colours of an image (negative). Returns the index of the new "
          "image.", NoArgs, invert, signature="invert(i)", code_names=("bitwise_not",),
          discrete=Discretization(default_slot=9)),
    _spec("equalize", "Equalize the histogram of each channel to boost low-contrast detail. "
          "Returns the index of the new image.", NoArgs, equalize, equivalence="contrast",
          signature="equalize(i)", code_names=("equalizeHist", "createCLAHE"),
          discrete=Discretization(default_slot=5)),
    _spec("threshold", "Binarize (or truncate) an image's grayscale intensity at a threshold "
          "value. Returns the index of the new image.", ThresholdArgs, threshold,
          equivalence="contrast", signature='threshold(i, value=128, mode="binary")',
          code_names=("adaptiveThreshold",),
          discrete=Discretization(_options("value", (64, 96, 128, 160, 192, 224),
                                           mode="binary"), 6)),
    _spec("blur", "Gaussian-blur an image with the given radius. Returns the index of the new "
          "image.", BlurArgs, blur, signature="blur(i, radius=2)", code_names=("GaussianBlur",),
          code_attributes=("GaussianBlur",),
          discrete=Discretization(_options("radius", (1.0, 2.0, 4.0)))),
    _spec("sharpen", "Sharpen an image (crisper edges and text). Returns the index of the new "
          "image.", NoArgs, sharpen, signature="sharpen(i)",
          code_names=("UnsharpMask", "filter2D"), code_attributes=("SHARPEN", "EDGE_ENHANCE"),
          discrete=Discretization(default_slot=7)),
    _spec("denoise", "Remove noise (grain and salt-and-pepper specks) while keeping edges. "
          "Returns the index of the new image.", DenoiseArgs, denoise,
          signature="denoise(i, strength=10)",
          code_names=("medianBlur", "bilateralFilter", "fastNlMeansDenoising",
                      "fastNlMeansDenoisingColored"),
          discrete=Discretization(_options("strength", (5.0, 10.0, 20.0)), 8)),
    _spec("edge_detect", "Compute an edge map of an image (canny, sobel or simple). Returns the "
          "index of the new image.", EdgeDetectArgs, edge_detect,
          signature='edge_detect(i, method="canny")', code_names=("Canny", "Sobel", "Laplacian"),
          code_attributes=("FIND_EDGES",),
          discrete=Discretization(_options("method", ("canny", "sobel", "simple")))),
    _spec("enhance", "Adjust brightness, contrast and sharpness by multipliers (1.0 = "
          "unchanged). Returns the index of the new image.", EnhanceArgs, enhance,
          equivalence="contrast", signature="enhance(i, brightness=1, contrast=1, sharpness=1)",
          code_names=("Contrast", "Brightness"), lineage_op=None),
)
"""The 14 image tools in Agentic-MME's order (the 13 atomic ops, then ``enhance``)."""
