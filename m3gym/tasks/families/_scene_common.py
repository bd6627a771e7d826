"""Shared helpers of the procedural families of every level (scenes, reference calls, knobs).

Scene sizing, the dial drawing of :mod:`m3gym.tasks.render.dials` (re-exported), reference-call
builders whose zoom is computed from the crop tool's own pixel rounding, difficulty-knob
interpolation and small choice helpers.

Every helper draws its randomness from the ``np.random.Generator`` it is given.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from m3gym.spec import Checkpoint, Evidence, RefCall
from m3gym.tasks import render
from m3gym.tasks.checkpoint_builders import evidence_checkpoints
from m3gym.tasks.render import pick, shuffled  # noqa: F401 (c2.pick / c2.shuffled)
from m3gym.tasks.render.dials import (  # noqa: F401 (the dial drawing, re-exported as c2.*)
    SUPERSAMPLE,
    TICK_RADIUS,
    DialRender,
    Stroke,
    bezel_shading,
    dial_direction,
    disk_alpha,
    draw_screws,
    drop_shadow,
    paste_patch,
    render_dial,
)
from m3gym.tools.visual import crop_pixel_box, rotated_size

Box = tuple[int, int, int, int]
Color = tuple[int, int, int]

MIN_VIEW_HEIGHT: float = 9.0
"""Detail height (px at view resolution) that counts as legible; the Evidence default."""

LEGIBILITY_MARGIN: float = 1.5
"""The reference zoom makes the decisive detail this many times ``MIN_VIEW_HEIGHT`` tall."""

PLATE_COLORS: dict[str, Color] = {
    "white": (238, 236, 228),
    "cream": (236, 226, 196),
    "pale yellow": (238, 228, 150),
    "pale blue": (196, 214, 236),
    "pale green": (200, 228, 196),
    "pale pink": (240, 206, 212),
    "light grey": (206, 206, 206),
}
"""Light plate colours used for labels, tags and dial plates (names may appear in questions)."""

TAB_COLORS: tuple[str, ...] = ("red", "blue", "green", "orange", "purple", "cyan", "pink",
                               "yellow")
"""Named colours of identifying tabs and dots (keys of :data:`render.NAMED_COLORS`)."""


def scene_size(rng: np.random.Generator, long_range: tuple[int, int] = (1400, 2000),
               aspect_range: tuple[float, float] = (0.6, 0.85)) -> tuple[int, int]:
    """Return a random landscape ``(width, height)`` with the long side in ``long_range``."""
    w = int(rng.integers(long_range[0], long_range[1] + 1))
    return w, int(w * rng.uniform(*aspect_range))


def full_view_scale(width: int, height: int) -> float:
    """Return the factor the full image is shown at (longest side to :data:`render.VIEW_SIZE`)."""
    return render.view_scale(height, width)


def box_union(a: Sequence[float], b: Sequence[float]) -> Box:
    """Return the smallest integer box covering boxes ``a`` and ``b``."""
    return (int(min(a[0], b[0])), int(min(a[1], b[1])), int(math.ceil(max(a[2], b[2]))),
            int(math.ceil(max(a[3], b[3]))))


def lerp(difficulty: float, easy: float, hard: float) -> float:
    """Return the knob value at ``difficulty`` in [0, 1] between its ``easy`` and ``hard`` ends."""
    return float(easy + (hard - easy) * difficulty)


def lerp_range(difficulty: float, easy: tuple[float, float], hard: tuple[float, float],
               integer: bool = False, half_even: bool = False) -> tuple[Any, Any]:
    """Return a ``(low, high)`` range interpolated between ``easy`` and ``hard``.

    Both ends move linearly (:func:`lerp`). Floats are rounded to 3 decimals. ``integer``
    rounds both ends to whole numbers, halves up, and keeps ``low <= high``; ``half_even``
    rounds halves to the even neighbour instead (Python's ``round``), the rule the lookup and
    document families' knobs were drawn with (a half such as ``labels`` 2.5 at difficulty 0.5
    would otherwise change their tasks).
    """
    lo, hi = lerp(difficulty, easy[0], hard[0]), lerp(difficulty, easy[1], hard[1])
    if not integer:
        return (round(lo, 3), round(hi, 3))
    if half_even:
        ilo, ihi = int(round(lo)), int(round(hi))
    else:
        ilo, ihi = int(math.floor(lo + 0.5)), int(math.floor(hi + 0.5))
    return (min(ilo, ihi), max(ilo, ihi))


def check_range(name: str, lo: float, hi: float, floor: float, ceil: float) -> None:
    """Raise ``ValueError`` unless ``floor <= lo <= hi <= ceil``."""
    if not floor <= lo <= hi <= ceil:
        raise ValueError(f"{name} must satisfy {floor} <= low <= high <= {ceil}, got ({lo}, {hi})")


def l2_metadata(family: str, domain: str, scene: str, evidence: tuple[Evidence, ...],
                image: np.ndarray, **extra: object) -> dict[str, object]:
    """Return the standard metadata dict of an L2 task."""
    area = float(image.shape[0] * image.shape[1])
    return {"level": 2, "family": family, "domain": domain, "scene": scene,
            "evidence_area_fraction": sum(e.area for e in evidence) / area, **extra}


# --------------------------------------------------------------------------------------------
# reference calls


def crop_bbox(box: Sequence[float], width: int, height: int) -> tuple[list[int], Box]:
    """Return the 0–1000 ``bbox_2d`` covering ``box`` and the pixel box the crop tool takes."""
    bbox = render.box_to_bbox1000(box, width, height)
    return bbox, crop_pixel_box([float(v) for v in bbox], width, height)


def zoom_for(crop_size: tuple[int, int], detail: float, rotate_deg: float = 0.0) -> float:
    """Return the smallest zoom (step 0.5, 1–5) that shows ``detail`` legibly with margin.

    With ``rotate_deg`` the zoomed crop is then rotated with ``expand`` (its view scale shrinks
    with the larger canvas). Raises ``ValueError`` when no zoom suffices (a generator bug).
    """
    w, h = crop_size
    for zoom in np.arange(1.0, 5.25, 0.5):
        zw, zh = max(1, round(w * zoom)), max(1, round(h * zoom))
        if rotate_deg % 90.0 != 0.0:
            zw, zh = rotated_size(rotate_deg, zw, zh)
        elif int(rotate_deg // 90) % 2:
            zw, zh = zh, zw
        if detail * zoom * render.view_scale(zh, zw) >= LEGIBILITY_MARGIN * MIN_VIEW_HEIGHT:
            return float(zoom)
    raise ValueError(f"no zoom up to 5 makes a {detail:.1f} px detail legible in a {w}x{h} crop")


def crop_call(call_id: str, image_index: int, box: Sequence[float], width: int, height: int,
              detail: float, rotate_deg: float = 0.0,
              depends_on: tuple[str, ...] = ()) -> RefCall:
    """Return a reference ``crop`` of ``box`` zoomed so ``detail`` px become legible."""
    bbox, px = crop_bbox(box, width, height)
    zoom = zoom_for((px[2] - px[0], px[3] - px[1]), detail, rotate_deg)
    return RefCall(call_id, "crop", {"image_index": image_index, "bbox_2d": bbox,
                                     "zoom_scale": zoom}, depends_on)


def chain_checkpoints(evidence: Sequence[Evidence],
                      steps: Sequence[Sequence[RefCall]]) -> tuple[Checkpoint, ...]:
    """Return the checkpoints of parallel chains, one chain per evidence.

    The i-th call without dependencies (a crop of an input) starts the chain of ``evidence[i]``;
    every later call joins the chain of the call it depends on. Each chain gets
    :func:`m3gym.tasks.checkpoint_builders.evidence_checkpoints`: an S checkpoint per call, a
    ``v_tool`` on its decisive (last) tool and a ``v_true``.
    """
    calls = [c for step in steps for c in step]
    roots = [c for c in calls if not c.depends_on]
    if len(roots) != len(evidence):
        raise ValueError(f"{len(roots)} chain starts for {len(evidence)} pieces of evidence")
    owner = {c.id: e.id for c, e in zip(roots, evidence)}
    for c in calls:
        if c.depends_on:
            owner[c.id] = owner[c.depends_on[0]]
    return tuple(cp for e in evidence
                 for cp in evidence_checkpoints(e.id, [c for c in calls if owner[c.id] == e.id]))


def normalized_angle(angle: float) -> float:
    """Return ``angle`` in degrees mapped to ``(-180, 180]``."""
    a = math.fmod(angle, 360.0)
    if a <= -180.0:
        a += 360.0
    elif a > 180.0:
        a -= 360.0
    return a


def degrade(img: np.ndarray, rng: np.random.Generator,
            sigma_range: tuple[float, float] = (0.8, 2.0)) -> np.ndarray:
    """Return ``img`` with mild sensor noise (the photographic look; keeps details legible)."""
    return render.add_sensor_noise(img, rng, float(rng.uniform(*sigma_range)))


def decorate(img: np.ndarray, rng: np.random.Generator, clutter: tuple[int, int],
             labels: tuple[int, int], texts: Sequence[str] | None = None) -> list[Box]:
    """Draw clutter, then distractor labels; return the boxes they hold (grown by 8 px).

    Called *before* the evidence is drawn: the evidence is then placed away from these boxes
    and drawn on top, so no clutter (a rotated ellipse may overflow its box) can spill into an
    evidence region after its clean render was taken.
    """
    h, w = img.shape[:2]
    boxes = render.add_clutter(img, rng, int(rng.integers(clutter[0], clutter[1] + 1)))
    placed = render.add_distractor_labels(img, rng, int(rng.integers(labels[0], labels[1] + 1)),
                                          avoid=boxes, texts=texts)
    grown = [render.grow_box(b, 8, w, h) for b in boxes]
    grown += [render.grow_box(p.box, 0.4 * p.glyph_height + 12, w, h) for p in placed]
    return grown


def local_soft_shadow(img: np.ndarray, rng: np.random.Generator, box: Box,
                      strength: float) -> np.ndarray:
    """Return ``img`` with :func:`render.soft_shadow` of ``box`` drawn on a padded sub-image.

    The same draws and pixels as the whole-image call for a small object, without copying the
    whole image: the shadow's offset and blur stay within 0.45 of the box's size (+ 2 px).
    """
    h, w = img.shape[:2]
    x0, y0, x1, y1 = box
    pad = int(math.ceil(0.45 * max(x1 - x0, y1 - y0))) + 4
    sx0, sy0, sx1, sy1 = max(0, x0 - pad), max(0, y0 - pad), min(w, x1 + pad), min(h, y1 + pad)
    sub = np.ascontiguousarray(img[sy0:sy1, sx0:sx1])
    img[sy0:sy1, sx0:sx1] = render.soft_shadow(sub, rng, (x0 - sx0, y0 - sy0, x1 - sx0,
                                                          y1 - sy0), strength)
    return img


def place(rng: np.random.Generator, size: tuple[int, int], bounds: Box,
          evidence: Sequence[Sequence[float]], decoration: Sequence[Sequence[float]],
          margin: int = 24) -> tuple[int, int] | None:
    """Return a free top-left for a ``size`` box, or ``None`` if none fits.

    Away from everything if possible, else away from the other evidence only (the evidence is
    then drawn on top of the decoration).
    """
    spot = render.find_free_spot(rng, size, bounds, [*evidence, *decoration], margin=margin,
                                 tries=40)
    if spot is None:
        spot = render.find_free_spot(rng, size, bounds, evidence, margin=margin, tries=60)
    return spot
