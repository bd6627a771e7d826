"""An example tool, complete and small: docs/contributing.md, "Add a tool".

A built-in tool lives in ``m3gym/tools/visual.py`` (one more entry of ``VISUAL_TOOLS``); this one
is added at run time with ``m3gym.tools.register_tool``. ``tests/tools/test_catalogue.py``
registers it and finds it in the schemas, the prompt, the MCP tool list, code mode and the
discrete wrapper, so the example cannot rot.
"""

from __future__ import annotations

import cv2
import numpy as np
from pydantic import Field

from m3gym.tools import (
    Discretization,
    ToolContext,
    ToolOutput,
    ToolRegistration,
    ToolSpec,
    register_tool,
)
from m3gym.tools.base import ImageArgs


class PosterizeArgs(ImageArgs):
    """Arguments of ``posterize``: the image (``image_index``, ``label``) and the level count."""

    levels: int = Field(default=4, ge=2, le=64,
                        description="Values kept per channel, 2-64 (fewer = flatter colours).")


def posterize_image(src: np.ndarray, levels: int) -> np.ndarray:
    """Return ``src`` (gray or RGB ``uint8``) with each channel cut to ``levels`` even values.

    Value ``v`` falls in bin ``v * levels // 256`` and becomes that bin's level on an even
    0..255 scale, so 0 and 255 are kept: ``levels=2`` maps 0..127 to 0 and 128..255 to 255.
    """
    bins = np.arange(256) * levels // 256
    lut = np.rint(bins * 255.0 / (levels - 1)).astype(np.uint8)
    return cv2.LUT(src, lut)


def posterize(ctx: ToolContext, args: PosterizeArgs) -> ToolOutput:
    """Posterize image ``args.image_index`` (a new image in the same frame: no affine)."""
    out = posterize_image(ctx.image(args.image_index).array, args.levels)
    return ToolOutput(text=f"Posterized Image {args.image_index} to {args.levels} levels.",
                      image=out, parent=args.image_index, step_affine=None)


POSTERIZE_TOOL = ToolSpec(
    name="posterize",
    description="Reduce each colour channel of an image to a few levels (posterize), which "
                "flattens gradients and noise into solid regions. Returns the index of the new "
                "image.",
    args_model=PosterizeArgs,
    fn=posterize,
    kind="visual",
    frame="preserving",  # pixels change, geometry does not (a crop would be "affine")
    content={"image_index": "image"},
    discrete=Discretization(options=({"levels": 2}, {"levels": 4}, {"levels": 8})),
)
"""The catalogue entry: schema, prompt signature and discretization all come from it."""


def register() -> ToolRegistration:
    """Add ``posterize`` to the catalogue; in a ``with`` block it is removed at the end."""
    return register_tool(POSTERIZE_TOOL)
