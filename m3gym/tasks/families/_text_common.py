"""Task-building code shared by the text families and the classic glyph families.

Used by ``tiny_text``, ``rotated_text``, ``faint_text``, ``tiny_faint_text`` and (orientation
and shading helpers) the classic ``glyph_rotate`` and ``glyph_faint``.

Every text task asks for a code (see :func:`m3gym.tasks.render.random_code`) and offers six
choices built by :func:`view_lookalike_choices`: codes whose renders *at the agent's view
resolution* are near-identical, with the answer a uniformly random member of the set, so neither
the layout of the choices nor the reset view singles it out.
"""

from __future__ import annotations

from typing import Any

import cv2
import numpy as np

from m3gym.tasks import render as R
from m3gym.tasks.registry import FamilyConfig
from m3gym.tasks.spec import AnswerSpec, Checkpoint, Evidence, RefCall, Task

MIN_VIEW_HEIGHT: float = Evidence.min_view_height
MIN_CONTRAST: float = Evidence.min_contrast




def answer_spec(code: str) -> AnswerSpec:
    """Return the exact-match answer for a code with its separator-free/spaced variants."""
    return AnswerSpec(value=code, variants=R.code_variants(code))


def l1_task(
    family: FamilyConfig, domain: str, image: np.ndarray, question: str, code: str,
    choices: tuple[str, ...], call: RefCall, evidence: Evidence,
    checkpoints: tuple[Checkpoint, ...], metadata: dict[str, Any],
) -> Task:
    """Assemble a level-1 task (the task id is set by :func:`~m3gym.tasks.registry.make_task`)."""
    image = R.freeze(image)
    h, w = image.shape[:2]
    meta = {
        "level": 1, "family": family.name, "domain": domain,
        "evidence_area_fraction": evidence.area / float(h * w), "view_size": R.VIEW_SIZE,
        "image_size": [w, h], **metadata,
    }
    return Task(
        task_id=f"{family.name}/0", family=family.name, level=1, domain=domain, images=(image,),
        question=question, answer=answer_spec(code), reference=((call,),), evidence=(evidence,),
        checkpoints=checkpoints, choices=choices, capabilities=("visual_grounding",),
        metadata=meta,
    )


BRANDS: tuple[str, ...] = (
    "NORDA", "Velmo", "KRISP", "Alturo", "PIXEL+", "Oaklea", "Brio", "ZENTA", "Mareo", "Fjell",
    "QUADRA", "Lumo", "Torvik", "Sunnie", "HEXA", "Corva",
)
NAMES: tuple[str, ...] = (
    "A. Marlow", "J. Okafor", "T. Lindqvist", "M. Haddad", "R. Castell", "E. Novak", "K. Mbeki",
)
STREETS: tuple[str, ...] = (
    "12 Elm Row", "48 Quay St", "7 Harbour Rd", "230 Mill Ln", "5 Crescent Ave", "91 Rue Vert",
)


def crop_for(
    box: R.Box, margin: int, width: int, height: int, glyph: float,
) -> tuple[list[int], float]:
    """Return a 0–1000 ``bbox_2d`` covering ``box`` (plus ``margin``) and a legible zoom.

    The margin shrinks until some zoom in 1..5 shows ``glyph`` at >= 1.5x the legible height.
    """
    while True:
        grown = R.grow_box(box, margin, width, height)
        bbox = R.box_to_bbox1000(grown, width, height)
        x0, y0, x1, y1 = R.bbox1000_to_box(bbox, width, height)
        zoom = R.crop_zoom_for((x1 - x0, y1 - y0), glyph, MIN_VIEW_HEIGHT)
        if zoom is not None or margin == 0:
            if zoom is None:  # pragma: no cover - stickers are far smaller than 768/1.5 glyphs
                raise RuntimeError("sticker too large for a legible crop")
            return bbox, zoom
        margin //= 2



TRANSFORMS: tuple[str, ...] = ("rot90", "rot180", "rot270", "flip_h", "flip_v")
"""How ``rotated_text`` distorts the scene: rotations counter-clockwise, or mirror flips."""
EVIDENCE_ORIENTATION: dict[str, tuple[float, bool]] = {
    # transform -> (Evidence.angle, Evidence.mirrored): mirror first, then rotate CCW
    "rot90": (90.0, False), "rot180": (180.0, False), "rot270": (-90.0, False),
    "flip_h": (0.0, True), "flip_v": (180.0, True),
}


def upright_call(transform: str) -> RefCall:
    """Return the one call that makes an image distorted by ``transform`` upright again."""
    if transform.startswith("rot"):
        angle = {"rot90": -90, "rot180": 180, "rot270": 90}[transform]
        return RefCall("c1", "rotate", {"image_index": 0, "angle": angle, "expand": True})
    direction = {"flip_h": "horizontal", "flip_v": "vertical"}[transform]
    return RefCall("c1", "flip", {"image_index": 0, "direction": direction})


def apply_transform(img: np.ndarray, transform: str) -> np.ndarray:
    """Return ``img`` rotated counter-clockwise (``rotN``) or mirrored (``flip_h``/``flip_v``)."""
    ops = {
        "rot90": lambda a: cv2.rotate(a, cv2.ROTATE_90_COUNTERCLOCKWISE),
        "rot180": lambda a: cv2.rotate(a, cv2.ROTATE_180),
        "rot270": lambda a: cv2.rotate(a, cv2.ROTATE_90_CLOCKWISE),
        "flip_h": lambda a: cv2.flip(a, 1),
        "flip_v": lambda a: cv2.flip(a, 0),
    }
    return ops[transform](img)


def transform_box(box: R.Box, transform: str, width: int, height: int) -> R.Box:
    """Return where ``box`` of a ``width`` x ``height`` image lands after ``transform``."""
    x0, y0, x1, y1 = box
    if transform == "rot90":
        return (y0, width - x1, y1, width - x0)
    if transform == "rot180":
        return (width - x1, height - y1, width - x0, height - y0)
    if transform == "rot270":
        return (height - y1, x0, height - y0, x1)
    if transform == "flip_h":
        return (width - x1, y0, width - x0, y1)
    if transform == "flip_v":
        return (x0, height - y1, x1, height - y0)
    raise ValueError(f"unknown transform {transform!r}")


def shading_field(rng: np.random.Generator, height: int, width: int,
                   depth: float) -> np.ndarray:
    """Return an ``uint8`` lighting offset of ``depth`` levels peak to peak (0..depth).

    Soft bands of light and shade (a curled page under a lamp): a sinusoid with a period of
    0.25-0.4 page sides in a random direction plus a weaker linear ramp in another. Computed on
    an 1/8-size grid and resized (linear), so it is smooth at every glyph scale.
    """
    gh, gw = max(2, height // 8), max(2, width // 8)
    ys = np.linspace(-0.5, 0.5, gh, dtype=np.float32)[:, None]
    xs = np.linspace(-0.5, 0.5, gw, dtype=np.float32)[None, :]
    ramp_dir, band_dir, phase = rng.uniform(0.0, 2.0 * np.pi, size=3)
    period = float(rng.uniform(0.25, 0.4))
    ramp = np.cos(ramp_dir) * xs + np.sin(ramp_dir) * ys
    across = np.cos(band_dir) * xs + np.sin(band_dir) * ys
    field = 0.4 * ramp + np.sin(across * np.float32(2.0 * np.pi / period) + np.float32(phase))
    lo, hi = float(field.min()), float(field.max())
    field = cv2.convertScaleAbs(field, alpha=depth / max(hi - lo, 1e-6),
                                beta=-lo * depth / max(hi - lo, 1e-6))
    return cv2.resize(field, (width, height), interpolation=cv2.INTER_LINEAR)
