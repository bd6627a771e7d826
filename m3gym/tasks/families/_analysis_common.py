"""Code shared by the level-3 analysis families (cross_image, knowledge_count, grid_period).

Every task that searches records the offline world it was built from in
``metadata["world"] = {"seed": ..., "split": ...}`` so the env hands the same world to the tools.

**Checkpoints and calls.** The scorer's exclusivity is per axis group (one call satisfies at most
one S and at most one ``v_tool`` checkpoint; ``v_true`` is judged on artifacts), so every
reference call carries one S checkpoint, every evidence one ``v_tool`` (on its decisive tool) and
one ``v_true``, and ``search_hit`` asks for the target ranked first. The oracle scores S = V = 1.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from m3gym.spec import Evidence, RefCall
from m3gym.tasks import render as R
from m3gym.tasks.registry import FamilyConfig

MIN_VIEW_HEIGHT: float = Evidence.min_view_height
"""Glyph height (view pixels) the scorer needs to call evidence legible."""

SEARCH_MAX_RANK: int = 1
"""The expected page must rank first for ``search_hit``: a query for a near-duplicate entity
lists the target at ranks 2–5, which must not count as finding it."""

GLOBAL_TOOLS: tuple[str, ...] = ("autocontrast", "equalize")
"""Global histogram operations accepted by ``grid_period``'s ``global_op`` checkpoint."""

SPLITS: tuple[str, ...] = ("train", "test")
"""Offline-world splits a family may draw its entities from."""


def check_world_config(split: str, world_seed: int) -> None:
    """Raise ``ValueError`` for an unknown split or a negative world seed."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if not isinstance(world_seed, int) or world_seed < 0:
        raise ValueError(f"world_seed must be a non-negative int, got {world_seed!r}")


def l3_metadata(family: FamilyConfig, domain: str, scene: str, images: tuple[np.ndarray, ...],
                evidence: tuple[Evidence, ...], **extra: Any) -> dict[str, Any]:
    """Return the standard metadata dict of a level-3 analysis task."""
    total = sum(float(im.shape[0] * im.shape[1]) for im in images)
    return {
        "level": 3, "family": family.name, "domain": domain, "scene": scene,
        "evidence_area_fraction": sum(e.area for e in evidence) / total,
        "view_size": R.VIEW_SIZE, "image_sizes": [[im.shape[1], im.shape[0]] for im in images],
        **extra,
    }


def crop_call(call_id: str, index: int, box: R.Box, image: np.ndarray, glyph: float,
              depends_on: tuple[str, ...] = ()) -> RefCall:
    """Return a reference crop of pixel ``box`` zoomed so glyphs of ``glyph`` px read at view."""
    h, w = image.shape[:2]
    bbox = R.box_to_bbox1000(box, w, h)
    px = R.bbox1000_to_box(bbox, w, h)
    zoom = R.crop_zoom_for((px[2] - px[0], px[3] - px[1]), glyph, MIN_VIEW_HEIGHT)
    if zoom is None:
        raise ValueError(f"crop box {box} is too large for glyphs of {glyph:.1f} px")
    return RefCall(call_id, "crop", {"image_index": index, "bbox_2d": bbox, "zoom_scale": zoom},
                   depends_on)
