"""The photometric image tools: they change pixel values, never geometry (no affine).

``grayscale``, ``autocontrast``, ``invert``, ``equalize``, ``threshold``, ``blur``, ``sharpen``,
``denoise``, ``edge_detect`` and ``enhance``. ``grayscale``, ``threshold`` and ``edge_detect``
return a 2-D ``(H, W)`` array; the others keep their input's channel layout.
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

import cv2
import numpy as np
from pydantic import Field, field_validator

from m3gym.pixels import to_gray
from m3gym.tools.base import ImageArgs, ToolContext, ToolOutput
from m3gym.tools.visual_common import apply_lut, channel_histograms, lowered, source_pixels

# PIL's ImageFilter kernels, applied with cv2.filter2D (replicated borders).
_SHARPEN_KERNEL = np.array([[-2, -2, -2], [-2, 32, -2], [-2, -2, -2]], np.float32) / 16.0
_SMOOTH_KERNEL = np.array([[1, 1, 1], [1, 5, 1], [1, 1, 1]], np.float32) / 13.0
_FIND_EDGES_KERNEL = np.array([[-1, -1, -1], [-1, 8, -1], [-1, -1, -1]], np.float32)
# 3x3 neighbourhood without its centre: min/max over the 8 neighbours (impulse detection).
_RING = np.array([[1, 1, 1], [1, 0, 1], [1, 1, 1]], np.uint8)
_IDENTITY_LUT = np.arange(256, dtype=np.uint8)


# --------------------------------------------------------------------------------------------
# photometric tools
# --------------------------------------------------------------------------------------------


def _photometric(args: ImageArgs, out: np.ndarray, text: str) -> ToolOutput:
    return ToolOutput(text=text, image=out, parent=args.image_index, step_affine=None)


class NoArgs(ImageArgs):
    """Arguments of a tool that takes only the image (and an optional label)."""


def grayscale(ctx: ToolContext, args: NoArgs) -> ToolOutput:
    """Convert to single-channel luma (PIL ``"L"`` weights); output is 2-D ``(H, W)``."""
    out = np.ascontiguousarray(to_gray(source_pixels(ctx, args.image_index)))
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
    src = source_pixels(ctx, args.image_index)
    luts = autocontrast_luts(channel_histograms(src), args.cutoff)
    out = apply_lut(src, luts[0] if src.ndim == 2 else luts)
    return _photometric(args, out, f"Auto-contrasted Image {args.image_index} "
                                   f"(cutoff {args.cutoff:g}%).")


def invert(ctx: ToolContext, args: NoArgs) -> ToolOutput:
    """Return the negative image (255 - value)."""
    out = cv2.bitwise_not(source_pixels(ctx, args.image_index))
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
    src = source_pixels(ctx, args.image_index)
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

    _norm = field_validator("mode", mode="before")(lowered)


_THRESHOLD_TYPES = {"binary": cv2.THRESH_BINARY, "binary_inv": cv2.THRESH_BINARY_INV,
                    "trunc": cv2.THRESH_TRUNC, "tozero": cv2.THRESH_TOZERO}


def threshold(ctx: ToolContext, args: ThresholdArgs) -> ToolOutput:
    """Threshold the grayscale intensity; output is 2-D ``(H, W)``."""
    gray = to_gray(source_pixels(ctx, args.image_index))
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
    out = gaussian_blur(source_pixels(ctx, args.image_index), args.radius)
    return _photometric(args, out, f"Blurred Image {args.image_index} (Gaussian radius "
                                   f"{args.radius:g}).")


def sharpen(ctx: ToolContext, args: NoArgs) -> ToolOutput:
    """Sharpen with PIL's SHARPEN kernel (centre 32, neighbours -2, divided by 16)."""
    out = cv2.filter2D(source_pixels(ctx, args.image_index), -1, _SHARPEN_KERNEL,
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
    out = denoise_image(source_pixels(ctx, args.image_index), args.strength)
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

    _norm = field_validator("method", mode="before")(lowered)


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
    out = edge_map(to_gray(source_pixels(ctx, args.image_index)), args.method)
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
    out = enhance_image(source_pixels(ctx, args.image_index), args.brightness, args.contrast,
                        args.sharpness)
    return _photometric(args, out, f"Enhanced Image {args.image_index} (brightness "
                                   f"{args.brightness:g}, contrast {args.contrast:g}, sharpness "
                                   f"{args.sharpness:g}).")
