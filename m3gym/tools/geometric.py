"""The geometric image tools: ``crop``, ``rotate``, ``flip`` and ``resize``.

Each returns the new image and the exact 2x3 map from parent pixels to new pixels
(``ToolOutput.step_affine``), in the continuous pixel coordinates of :mod:`m3gym.geometry`. The
0-1000 ``bbox_2d`` of ``crop`` maps to pixels with :func:`m3gym.geometry.bbox1000_to_box`
(rounding outward).
"""

from __future__ import annotations

import math
from typing import Annotated, Literal

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
from m3gym.tools.base import ImageArgs, ToolContext, ToolError, ToolOutput
from m3gym.tools.visual_common import (
    MAX_SIDE,
    check_output_size,
    lowered,
    resize_to,
    size_text,
    source_pixels,
)

_EPS = EDGE_EPS
# Counter-clockwise quarter turns k = 1, 2, 3 as cv2.rotate codes (same result as np.rot90).
_QUARTER_TURN_CODES = {1: cv2.ROTATE_90_COUNTERCLOCKWISE, 2: cv2.ROTATE_180,
                       3: cv2.ROTATE_90_CLOCKWISE}


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
    src = source_pixels(ctx, args.image_index)
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
    src = source_pixels(ctx, args.image_index)
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
            return ToolOutput(text=f"{desc} (lossless, {size_text(turned)}).", image=turned,
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
    return ToolOutput(text=f"{desc} ({size_text(out)}, corners filled black).", image=out,
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

    _norm = field_validator("direction", mode="before")(lowered)


_FLIP_CODES = {"horizontal": 1, "vertical": 0, "both": -1}


def flip(ctx: ToolContext, args: FlipArgs) -> ToolOutput:
    """Mirror the image horizontally, vertically or both (lossless)."""
    src = source_pixels(ctx, args.image_index)
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
    src = source_pixels(ctx, args.image_index)
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
