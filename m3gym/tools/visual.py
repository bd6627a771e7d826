"""The image tools: Agentic-MME's 13 atomic visual operations plus ``enhance``.

Every tool reads one image of the :class:`~m3gym.state.ImageState` by index and returns a new
``uint8`` image; nothing touches disk and inputs are never modified (they are read-only).

This module holds their specs (:data:`VISUAL_TOOLS`) and re-exports every tool and helper: the
geometric tools are in :mod:`m3gym.tools.geometric`, the photometric ones in
:mod:`m3gym.tools.photometric`, what they share in :mod:`m3gym.tools.visual_common`, and the box
and affine maps in :mod:`m3gym.geometry`.

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

from collections.abc import Mapping
from typing import Any

from m3gym.geometry import affine_matrix, rotated_size, rotation_affine  # noqa: F401 - re-exported
from m3gym.pixels import to_gray  # noqa: F401 - re-exported
from m3gym.tools.base import ContentSimilarity, Discretization, FrameBehaviour, ImageArgs, ToolSpec

# every tool and helper once defined here stays importable from here
from m3gym.tools.geometric import (  # noqa: F401
    Coord,
    CropArgs,
    FlipArgs,
    ResizeArgs,
    RotateArgs,
    crop,
    crop_pixel_box,
    flip,
    resize,
    rotate,
)
from m3gym.tools.photometric import (  # noqa: F401
    AutocontrastArgs,
    BlurArgs,
    DenoiseArgs,
    EdgeDetectArgs,
    EnhanceArgs,
    Factor,
    NoArgs,
    ThresholdArgs,
    autocontrast,
    autocontrast_luts,
    blur,
    denoise,
    denoise_image,
    edge_detect,
    edge_map,
    enhance,
    enhance_image,
    equalize,
    equalize_luts,
    gaussian_blur,
    grayscale,
    invert,
    remove_impulses,
    sharpen,
    threshold,
)
from m3gym.tools.visual_common import (  # noqa: F401
    MAX_PIXELS,
    MAX_SIDE,
    apply_lut,
    channel_histograms,
    check_output_size,
    resize_to,
)

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
