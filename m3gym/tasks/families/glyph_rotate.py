"""Classic suite, ``glyph_rotate``: a digit card shot rotated or mirrored (one rotate/flip)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.spec import Checkpoint, Task
from m3gym.tasks import render as R
from m3gym.tasks.families._glyph_common import (
    BACKGROUNDS,
    CLASSIC_MIN_VIEW_HEIGHT,
    CLASSIC_VIEW,
    GLYPHS,
    check_common,
    classic_task,
    glyph_clutter,
    glyph_noise,
    glyph_patch,
    glyph_surface,
)
from m3gym.tasks.families._scene_common import check_range
from m3gym.tasks.families._text_common import (
    EVIDENCE_ORIENTATION,
    TRANSFORMS,
    apply_transform,
    transform_box,
    upright_call,
)
from m3gym.tasks.registry import FamilyConfig, register_family


@register_family
@dataclass
class GlyphRotateFamily(FamilyConfig):
    """Read the digit on a card photographed rotated or mirrored (classic suite).

    Scene:
        A ``side`` px square of texture with clutter and a paper card holding one digit of
        ``glyphs`` (Hershey face, ``glyph_min``-``glyph_max`` px) with a bar under it that marks
        the card's bottom; sensor noise ``noise_sigma``; then the whole image is turned or
        mirrored by one of ``transforms``.
    Question:
        "The card in the image was photographed rotated or mirrored. Which digit is printed on
        it? Answer with one of: 0, 1, ..., 7." Fixed choices ``glyphs`` in order.
    Why a tool is needed:
        ``v_true`` counts the evidence as read only upright; one ``rotate`` or ``flip`` makes
        the card upright, and the digit is legible by size (a third of its size in the 96 px
        view). Known limit (the view-only leak probe): a quarter turn or a flip permutes
        pixels, so a pixel classifier that sees the view (a CNN, or the probe's template
        matcher) can read the turned digit before the tool. The leak test keeps this family as a
        known exception, and ``audit-leaks`` labels the miss structural because it measures it
        (:func:`~m3gym.audit.leaks.reference_unexplained_share`: 0).
    Reference trajectory:
        One ``rotate`` by the inverse angle (``expand``) or one ``flip``.
    Checkpoints:
        ``s_upright`` (a rotate/flip made the card upright), ``v_tool`` (applied to an image
        holding the digit), ``v_true`` (some image shows it upright and legibly).
    Difficulty:
        ``difficulty_knobs`` (the default config is the classic suite's, not difficulty 0): at
        0 glyphs 48-56 px, turns only, clutter 1-3; at 1 glyphs 30-38 px, every transform
        (mirrors too), clutter 6-10, noise 2-3.5.
    Config:
        ``side``, ``glyph_min``, ``glyph_max``, ``transforms``, ``clutter``, ``noise_sigma``,
        ``glyphs``.
    """

    name: ClassVar[str] = "glyph_rotate"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 1
    suite: ClassVar[str] = "classic"
    view_size: ClassVar[int] = CLASSIC_VIEW
    domains: ClassVar[tuple[str, ...]] = ("Society",)
    description: ClassVar[str] = "Turn a rotated or mirrored digit card upright (rotate / flip)."

    side: int = 288
    glyph_min: float = 40.0
    glyph_max: float = 56.0
    transforms: tuple[str, ...] = TRANSFORMS
    clutter: tuple[int, int] = (3, 6)
    noise_sigma: tuple[float, float] = (1.0, 2.5)
    glyphs: tuple[str, ...] = GLYPHS

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Smaller digits, mirrors, more clutter and noise as ``d`` rises."""
        d = float(difficulty)
        return {
            "glyph_min": 48.0 - 18.0 * d, "glyph_max": 56.0 - 18.0 * d,
            "transforms": TRANSFORMS if d >= 0.5 else ("rot90", "rot180", "rot270"),
            "clutter": (1 + round(5 * d), 3 + round(7 * d)),
            "noise_sigma": (0.5 + 1.5 * d, 1.5 + 2.0 * d),
        }

    def validate(self) -> None:
        """Check sizes and transforms."""
        check_common(self.side, self.glyphs)
        check_range("clutter", *self.clutter, 0, 30)
        check_range("noise_sigma", *self.noise_sigma, 0.0, 10.0)
        if self.glyph_min * CLASSIC_VIEW / self.side < 1.5 * CLASSIC_MIN_VIEW_HEIGHT:
            raise ValueError("glyph_min would not be legible in the view once upright")
        if not self.glyph_min <= self.glyph_max <= self.side * 0.3:
            raise ValueError("need glyph_min <= glyph_max <= 0.3 * side")
        if not self.transforms or any(t not in TRANSFORMS for t in self.transforms):
            raise ValueError(f"transforms must be among {TRANSFORMS}")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one glyph-rotate task."""
        side = self.side
        img = glyph_surface(rng, side, R.pick(rng, BACKGROUNDS))
        digit = R.pick(rng, self.glyphs)
        patch = glyph_patch(rng, digit, self.glyph_min, self.glyph_max)
        pw, ph = patch.size
        cw, ch = pw + 2 * int(pw * 0.6) + 16, ph + int(ph * 0.9) + 16
        cx = int(rng.integers(8, side - cw - 8, endpoint=True))
        cy = int(rng.integers(8, side - ch - 8, endpoint=True))
        paper = R.jitter_color(rng, (238, 232, 215), 10)
        card = (cx, cy, cx + cw, cy + ch)
        cv2.rectangle(img, (cx, cy), (cx + cw - 1, cy + ch - 1), paper, -1)
        ink = R.jitter_color(rng, (30, 30, 40), 15)
        gx, gy = cx + (cw - pw) // 2, cy + 8 + int(ph * 0.15)
        placed = R.paste_text(img, patch, gx, gy, ink)
        bar_y = gy + ph + max(4, int(ph * 0.2))
        cv2.rectangle(img, (gx - 4, bar_y), (gx + pw + 3, bar_y + max(3, ph // 8)), ink, -1)
        glyph_clutter(img, rng, int(rng.integers(*self.clutter, endpoint=True)),
                      avoid=[R.grow_box(card, 6, side, side)], size_range=(0.08, 0.2))
        ev_up = R.grow_box(placed.box, 2, side, side)
        clean_up = img[ev_up[1]:ev_up[3], ev_up[0]:ev_up[2]].copy()
        mask_up = R.embed_mask(placed.mask, (placed.box[0] - ev_up[0], placed.box[1] - ev_up[1]),
                               (ev_up[3] - ev_up[1], ev_up[2] - ev_up[0]))
        transform = R.pick(rng, self.transforms)
        img = glyph_noise(img, rng, *self.noise_sigma)
        img = apply_transform(img, transform)
        box0 = transform_box(ev_up, transform, side, side)
        clean0 = apply_transform(np.ascontiguousarray(clean_up), transform)
        mask0 = apply_transform(mask_up.astype(np.uint8), transform).astype(bool)
        angle, mirrored = EVIDENCE_ORIENTATION[transform]
        evidence = replace(
            R.region_evidence("digit", clean0, box0, mask0, text=digit,
                              glyph_height=placed.glyph_height, clean_is_region=True),
            angle=angle, mirrored=mirrored)
        question = ("The card in the image was photographed rotated or mirrored. Which digit is "
                    f"printed on it? Answer with one of: {', '.join(self.glyphs)}.")
        checkpoints = (
            Checkpoint("s_upright", "S", "rotate_upright", {"evidence": "digit"},
                       "a rotate/flip made the card upright"),
            Checkpoint("v_tool", "V", "v_tool", {"evidence": "digit", "tools": ["rotate", "flip"]},
                       "a rotate/flip was applied to an image holding the digit"),
            Checkpoint("v_true", "V", "v_true", {"evidence": "digit"},
                       "some image shows the digit upright and legibly"),
        )
        meta = {"transform": transform, "upright_box": list(ev_up), "card_box": list(card)}
        return classic_task(self, "Society", img, question, digit, self.glyphs,
                            upright_call(transform), evidence, checkpoints, meta)
