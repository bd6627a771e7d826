"""Shared code of the classic-RL suite: level-1 glyph tasks at low resolution, fixed answers.

The three families mirror the three ``M3Bench-L1`` operations (``crop``, ``rotate``/``flip``,
``autocontrast``) on small images (``side`` = 288 px, 384 px for ``glyph_zoom``, seen through a
96-px view), and every task
asks for one digit of :data:`GLYPHS` with the choices always listed in the same order. A choice
index therefore means the same digit in every episode, so a pixel policy can learn a classifier,
and every tool call costs microseconds: this is the suite for stable-baselines3-style training
(``M3Bench-Classic``, ``M3Bench-Classic-Discrete``). Checkpoints, rewards and the M3 score work
exactly as in the benchmark levels, scored at the families' :attr:`view_size` of 96 px.

* ``glyph_zoom`` — a digit on a small red-framed tag in a cluttered scene, 3–3.25 px tall in the
  view: one ``crop`` around the tag (a 3x3 grid cell or a quadrant) makes it legible.
* ``glyph_rotate`` — a card with a large digit photographed rotated by 90/180/270 degrees or
  mirrored: one ``rotate`` or ``flip`` makes it upright.
* ``glyph_faint`` — a digit printed a few gray levels from its paper in a washed-out photo: one
  ``autocontrast`` restores it.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import cv2
import numpy as np

from m3gym.spec import AnswerSpec, Checkpoint, Evidence, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.registry import FamilyConfig

GLYPHS: tuple[str, ...] = tuple("01234567")
"""The answer set of every classic task, in the fixed order of the choices (no 9: it is a 6 turned
upside down)."""

CLASSIC_VIEW: int = 96
"""View size (longest side) the classic families are designed and scored for."""

CLASSIC_MIN_VIEW_HEIGHT: float = 6.0
"""A digit from a closed set of eight is legible at 6 px (text codes need 9)."""

TAG_FRAME: R.Color = (220, 30, 30)
"""Frame colour of the target tag in ``glyph_zoom`` (decoy tags have none)."""

BACKGROUNDS: tuple[str, ...] = ("wood", "fabric", "noise", "gradient", "asphalt", "brick")
"""Background textures the classic scenes draw from."""


def glyph_patch(rng: np.random.Generator, digit: str, height: float) -> R.TextPatch:
    """Return ``digit`` rendered ``height`` px tall in a random readable face, stroke 1 or 2."""
    thickness = 2 if height >= 20 else 1
    return R.render_text(digit, height, R.pick(rng, R.READABLE_FACES), thickness)


def check_common(side: int, glyphs: tuple[str, ...]) -> None:
    """Raise ``ValueError`` for an image side or answer set the classic families cannot use."""
    if not 192 <= side <= 768:
        raise ValueError("side must lie in 192..768 px")
    if len(glyphs) < 2 or len(set(glyphs)) != len(glyphs) or any(
            len(g) != 1 or not g.isdigit() for g in glyphs):
        raise ValueError("glyphs must be >= 2 distinct single digits")


def classic_task(
    family: FamilyConfig, domain: str, image: np.ndarray, question: str, digit: str,
    glyphs: tuple[str, ...], call: RefCall, evidence: Evidence,
    checkpoints: tuple[Checkpoint, ...], metadata: dict[str, Any],
) -> Task:
    """Assemble a classic task: fixed choices (``glyphs`` in order), exact digit answer."""
    image = R.freeze(image)
    h, w = image.shape[:2]
    meta = {
        "level": 1, "family": family.name, "domain": domain, "suite": "classic",
        "evidence_area_fraction": evidence.area / float(h * w), "view_size": CLASSIC_VIEW,
        "image_size": [w, h], **metadata,
    }
    return Task(
        task_id=f"{family.name}/0", family=family.name, level=1, domain=domain, images=(image,),
        question=question, answer=AnswerSpec(value=digit), reference=((call,),),
        evidence=(replace(evidence, min_view_height=CLASSIC_MIN_VIEW_HEIGHT),),
        checkpoints=checkpoints, choices=tuple(glyphs), capabilities=("visual_grounding",),
        metadata=meta,
    )


def glyph_evidence(img: np.ndarray, placed: R.PlacedText, margin: int) -> Evidence:
    """Return the evidence of a pasted digit: its box grown by ``margin`` and its ink mask."""
    h, w = img.shape[:2]
    box = R.grow_box(placed.box, margin, w, h)
    mask = R.embed_mask(placed.mask, (placed.box[0] - box[0], placed.box[1] - box[1]),
                        (box[3] - box[1], box[2] - box[0]))
    return R.region_evidence("digit", img, box, mask, text=placed.text,
                             glyph_height=placed.glyph_height)


def grid_cell(cell: int, side: int) -> R.Box:
    """Return the pixel box of 3x3 grid cell ``cell`` (row by row) of a ``side`` square."""
    r, c = divmod(cell, 3)
    edges = [round(side * k / 3) for k in range(4)]
    return (edges[c], edges[r], edges[c + 1], edges[r + 1])


def draw_tag(img: np.ndarray, patch: R.TextPatch, xy: tuple[int, int], plate: R.Color,
             frame: R.Color | None, frame_px: int = 2) -> tuple[R.Box, R.PlacedText]:
    """Draw a tag (plate, optional ``frame_px`` frame, the digit) at ``xy``; return box, text."""
    pw, ph = patch.size
    pad = 3
    x, y = xy
    w, h = pw + 2 * pad + 2, ph + 2 * pad + 2
    cv2.rectangle(img, (x, y), (x + w - 1, y + h - 1), plate, -1)
    if frame is not None:
        cv2.rectangle(img, (x, y), (x + w - 1, y + h - 1), frame, frame_px)
    placed = R.paste_text(img, patch, x + pad + 1, y + pad + 1, R.ink_for(plate))
    return (x, y, x + w, y + h), placed


def tag_size(patch: R.TextPatch) -> tuple[int, int]:
    """Return the ``(w, h)`` of the tag :func:`draw_tag` draws around ``patch``."""
    pw, ph = patch.size
    return pw + 8, ph + 8

