"""Tool-call dicts the heuristic plans yield, and what the plans read back from their results."""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from m3gym.agents.heuristic.view import EpisodeView


def crop_call(index: int, bbox: Sequence[int], zoom: float) -> dict[str, Any]:
    """Return a ``crop`` call dict."""
    return {"name": "crop", "arguments": {"image_index": int(index), "bbox_2d": list(bbox),
                                          "zoom_scale": round(float(zoom), 2)}}


def op_call(name: str, index: int, **kwargs: Any) -> dict[str, Any]:
    """Return a call dict of an image tool ``name`` on image ``index`` with ``kwargs``."""
    return {"name": name, "arguments": {"image_index": int(index), **kwargs}}


def fix_call(index: int, fix: tuple[str, object]) -> dict[str, Any]:
    """Return the rotate/flip call that applies ``fix``.

    ``fix`` is what :func:`~m3gym.agents.heuristic.vision.apply_fix` takes.
    """
    op, arg = fix
    if op == "rotate":
        return op_call("rotate", index, angle=int(arg), expand=True)  # type: ignore[call-overload]
    return op_call("flip", index, direction=str(arg))


def crop_pixels(text: str) -> tuple[int, int, int, int] | None:
    """Return the source pixel box ``(x0, y0, x1, y1)`` a crop's result text reports."""
    m = re.search(r"pixels x (\d+)-(\d+), y (\d+)-(\d+)", text)
    if not m:
        return None
    x0, x1, y0, y1 = (int(v) for v in m.groups())
    return x0, y0, x1, y1


def full_size(view: EpisodeView, index: int) -> tuple[int, int]:
    """Return ``(width, height)`` of image ``index`` at full resolution (view size if unknown)."""
    if index in view.sizes:
        return view.sizes[index]
    h, w = view.images[index].shape[:2]
    return w, h
