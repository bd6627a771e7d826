"""The evidence of the lookup scenes: faint labels on plates, and look-alike decoys.

:func:`draw_faint_label` draws a plate whose text is a few levels darker than the plate, seen
through a mild perspective, and returns the text's exact ink mask and glyph height in image
coordinates (with the crop box the reference trajectory uses); :func:`draw_decoy_labels` draws
look-alikes elsewhere in the image.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.tasks import render as R
from m3gym.tasks.render.scene_primitives import (
    EVIDENCE_FACES,
    place_patch,
    quad_inner_box,
    shade,
    text_patch,
)

PLATE_COLORS: tuple[R.Color, ...] = ((236, 232, 220), (222, 228, 236), (240, 236, 200),
                                     (210, 222, 210), (200, 200, 204), (236, 214, 214))
"""Light tag and plate colours (the faint ink is a few levels darker)."""

EVIDENCE_TILT: float = 0.06
"""Perspective strength of evidence plates (a few degrees: the plate stays nearly rectangular)."""


@dataclass(frozen=True)
class FaintLabel:
    """A plate with (possibly faint) text drawn into a scene.

    Attributes:
        plate: the plate's pixel box.
        text: the placed text (tight box, ink mask, glyph height) in image coordinates.
        crop_box: a box around the text lying inside the plate (what the reference crops).
    """

    plate: R.Box
    text: R.PlacedText
    crop_box: R.Box


def evidence_patch(rng: np.random.Generator, text: str, glyph: float) -> R.TextPatch:
    """Return the TrueType patch of evidence ``text`` in one of :data:`EVIDENCE_FACES`."""
    return text_patch(text, glyph, R.pick_font(rng, EVIDENCE_FACES))


def label_pads(patch: R.TextPatch) -> tuple[int, int]:
    """Return ``(crop pad, plate pad)`` of a label.

    The crop keeps about one glyph around the text and stays a few pixels inside the plate.
    """
    crop_pad = max(7, math.ceil(patch.glyph_height * 0.9))
    return crop_pad, crop_pad + 8


def label_size(patch: R.TextPatch) -> tuple[int, int]:
    """Return the ``(w, h)`` of the plate :func:`draw_faint_label` draws for ``patch``."""
    pad = label_pads(patch)[1]
    return patch.size[0] + 2 * pad, patch.size[1] + 2 * pad


def draw_faint_label(img: np.ndarray, rng: np.random.Generator, text: str, glyph: float,
                     contrast: float, at: tuple[int, int], plate_color: R.Color,
                     patch: R.TextPatch | None = None, tilt: float = EVIDENCE_TILT
                     ) -> FaintLabel:
    """Draw a plate with ``text`` whose ink is ``contrast`` levels darker than the plate.

    The plate (a printed card with a thin darker rim and a soft shadow) is placed at ``at``
    through a mild perspective (strength ``tilt``). The returned ink mask and glyph height are
    those of the warped text; the crop box lies inside the plate's rim with about one glyph
    around the text (so ``autocontrast`` on that crop stretches only plate and ink).
    """
    patch = patch or evidence_patch(rng, text, glyph)
    crop_pad, pad = label_pads(patch)
    pw, ph = patch.size[0] + 2 * pad, patch.size[1] + 2 * pad
    card = np.empty((ph, pw, 3), np.uint8)
    card[:] = plate_color
    cv2.rectangle(card, (0, 0), (pw - 1, ph - 1), shade(plate_color, 0.82), 1)
    ink = R.faded_color(plate_color, contrast)
    R.paste_text(card, patch, pad, pad, ink)
    text_alpha = np.zeros((ph, pw), np.uint8)
    text_alpha[pad:pad + patch.size[1], pad:pad + patch.size[0]] = patch.alpha
    placed_card = place_patch(img, rng, card, None, at, tilt, shadow=0.35)
    assert placed_card is not None  # nothing to avoid
    plate, quad = placed_card
    cover = R.warp_alpha(text_alpha, quad, plate) >= 128
    ys, xs = np.nonzero(cover)
    tb = (plate[0] + int(xs.min()), plate[1] + int(ys.min()),
          plate[0] + int(xs.max()) + 1, plate[1] + int(ys.max()) + 1)
    mask = cover[tb[1] - plate[1]:tb[3] - plate[1], tb[0] - plate[0]:tb[2] - plate[0]]
    left, right = np.linalg.norm(quad[3] - quad[0]), np.linalg.norm(quad[2] - quad[1])
    g = patch.glyph_height * min(left, right) / ph
    placed = R.PlacedText(text, tb, mask, g)
    inner = quad_inner_box(quad, 3)
    crop_box = (max(tb[0] - crop_pad, inner[0]), max(tb[1] - crop_pad, inner[1]),
                min(tb[2] + crop_pad, inner[2]), min(tb[3] + crop_pad, inner[3]))
    return FaintLabel(plate, placed, crop_box)


def draw_decoy_labels(img: np.ndarray, rng: np.random.Generator, texts: list[str],
                      glyph: tuple[float, float], contrast: tuple[float, float],
                      keep: list[R.Box], not_in: str, bounds: R.Box | None = None
                      ) -> list[str]:
    """Draw look-alike faint labels with ``texts`` outside the ``not_in`` part of the image.

    Each label looks like the evidence (same glyph and contrast ranges) but lies in another
    part of the image (:func:`R.position_phrase` differs from ``not_in``), so the question's
    position names the target; ``bounds`` (default: the image) is where they may go. Placed
    plates are added to ``keep``; returns the drawn texts.
    """
    h, w = img.shape[:2]
    bounds = bounds or (20, 20, w - 20, h - 20)
    drawn: list[str] = []
    for text in texts:
        patch = evidence_patch(rng, text, float(rng.uniform(*glyph)))
        size = label_size(patch)
        for _ in range(30):
            spot = R.find_free_spot(rng, size, bounds, keep, margin=24, tries=20)
            if spot is None:
                break
            box = (spot[0], spot[1], spot[0] + size[0], spot[1] + size[1])
            if R.position_phrase(box, w, h) == not_in:
                continue
            col = R.jitter_color(rng, R.pick(rng, PLATE_COLORS), 8)
            label = draw_faint_label(img, rng, text, patch.glyph_height,
                                     float(rng.uniform(*contrast)), spot, col, patch)
            keep.append(label.plate)
            drawn.append(text)
            break
    return drawn
