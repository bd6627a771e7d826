"""Classic suite, ``glyph_faint``: a faded digit in a washed-out photo (one autocontrast)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.spec import Checkpoint, Evidence, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.families._glyph_common import (
    CLASSIC_MIN_VIEW_HEIGHT,
    CLASSIC_VIEW,
    GLYPHS,
    check_common,
    classic_task,
    glyph_clutter,
    glyph_noise,
    glyph_patch,
    glyph_surface,
    shading_gray,
)
from m3gym.tasks.families._scene_common import check_range
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tools.catalogue import CONTRAST_TOOLS


@register_family
@dataclass
class GlyphFaintFamily(FamilyConfig):
    """Read a digit printed a few gray levels from its paper in a washed-out photo (classic).

    Scene:
        A ``side`` px square of texture with clutter and a paper card holding one digit of
        ``glyphs`` (Hershey face, ``glyph_min``-``glyph_max`` px); the photo spans ``span`` gray
        levels, the digit's ink lies ``ink_contrast`` = c levels from its paper, and a smooth
        shading ``shading`` x c deep lies on top; sensor noise ``noise_sigma``.
    Question:
        "The photo of a card is badly washed out. Which digit is printed on the card? Answer
        with one of: 0, 1, ..., 7." Fixed choices ``glyphs`` in order.
    Why a tool is needed:
        The ink is far below the 28-level visibility threshold; one ``autocontrast`` stretches
        the range to 0..255 and multiplies the local ink contrast by about ``255 / (span +
        shading)``, which ``validate`` requires to clear the threshold with a 1.3x margin. Known
        limit (the view-only leak probe): autocontrast is a gray-level map, so the reset view
        holds what the stretched view shows, and a pixel classifier that sees the view (a CNN,
        or the probe's template matcher) can read the faint digit contrast-invariantly before
        the tool. The leak test keeps this family as a known exception, and ``audit-leaks``
        labels the miss structural because it measures it
        (:func:`~m3gym.audit.leaks.reference_unexplained_share`: 1 - R^2 under 0.01).
    Reference trajectory:
        One ``autocontrast`` of the photo (cutoff ``cutoff`` %).
    Checkpoints:
        ``s_contrast`` (a contrast op on an image holding the digit), ``v_tool`` (a contrast
        tool on a region holding it), ``v_true`` (some image shows it with visible contrast).
    Difficulty:
        ``difficulty_knobs`` (the default config is the classic suite's, not difficulty 0): at
        0 ink 6-8 levels, glyphs 36-48 px, shading 0.8-1.2 x c; at 1 ink 3.5-4.5 levels,
        glyphs 28-36 px, shading 1.5-2.2 x c.
    Config:
        ``side``, ``glyph_min``, ``glyph_max``, ``ink_contrast``, ``span``, ``shading``,
        ``noise_sigma``, ``cutoff``, ``glyphs``.
    """

    name: ClassVar[str] = "glyph_faint"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 1
    suite: ClassVar[str] = "classic"
    view_size: ClassVar[int] = CLASSIC_VIEW
    domains: ClassVar[tuple[str, ...]] = ("Science",)
    description: ClassVar[str] = "Restore a faded digit (autocontrast), classic-RL suite."

    side: int = 288
    glyph_min: float = 30.0
    glyph_max: float = 44.0
    ink_contrast: tuple[float, float] = (4.0, 6.0)
    span: tuple[float, float] = (10.0, 14.0)
    shading: tuple[float, float] = (1.0, 1.8)
    noise_sigma: tuple[float, float] = (0.3, 0.6)
    cutoff: float = 1.0
    glyphs: tuple[str, ...] = GLYPHS

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Fainter ink, smaller digits and deeper shading as ``d`` rises."""
        d = float(difficulty)
        return {
            "ink_contrast": (6.0 - 2.5 * d, 8.0 - 3.5 * d),
            "glyph_min": 36.0 - 8.0 * d, "glyph_max": 48.0 - 12.0 * d,
            "shading": (0.8 + 0.7 * d, 1.2 + 1.0 * d),
        }

    def validate(self) -> None:
        """Check sizes, that the ink starts invisible, and that autocontrast restores it."""
        check_common(self.side, self.glyphs)
        check_range("noise_sigma", *self.noise_sigma, 0.0, 10.0)
        if self.glyph_min * CLASSIC_VIEW / self.side < 1.5 * CLASSIC_MIN_VIEW_HEIGHT:
            raise ValueError("glyph_min would not be legible by size in the view")
        if not self.glyph_min <= self.glyph_max <= self.side * 0.3:
            raise ValueError("need glyph_min <= glyph_max <= 0.3 * side")
        min_contrast = Evidence.min_contrast
        if not 1 <= self.ink_contrast[0] <= self.ink_contrast[1] < min_contrast / 2:
            raise ValueError("ink_contrast must lie in 1 .. min_contrast/2")
        if not self.ink_contrast[1] < self.span[0] <= self.span[1] <= 40:
            raise ValueError("span must exceed ink_contrast and be at most 40 levels")
        if not 0.5 <= self.shading[0] <= self.shading[1] <= 4.0:
            raise ValueError("shading must lie in 0.5..4 (x ink contrast)")
        c = self.ink_contrast[0]
        if c * 255.0 / (self.span[1] + self.shading[1] * c) < 1.3 * min_contrast:
            raise ValueError("autocontrast could not restore the ink contrast with this margin")
        if not 0 <= self.cutoff < 10:
            raise ValueError("cutoff must lie in 0..10 %")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one glyph-faint task."""
        side = self.side
        img = glyph_surface(rng, side, R.pick(rng, ("wood", "fabric", "gradient", "noise")))
        cw, ch = int(side * rng.uniform(0.45, 0.6)), int(side * rng.uniform(0.5, 0.65))
        cx = int(rng.integers(8, side - cw - 8, endpoint=True))
        cy = int(rng.integers(8, side - ch - 8, endpoint=True))
        paper = R.jitter_color(rng, (236, 230, 212), 10)
        cv2.rectangle(img, (cx, cy), (cx + cw - 1, cy + ch - 1), paper, -1)
        card = (cx, cy, cx + cw, cy + ch)
        glyph_clutter(img, rng, int(rng.integers(2, 5, endpoint=True)),
                      avoid=[R.grow_box(card, 6, side, side)], size_range=(0.08, 0.2))
        span = float(rng.uniform(*self.span))
        c_target = float(rng.uniform(*self.ink_contrast))
        digit = R.pick(rng, self.glyphs)
        patch = glyph_patch(rng, digit, self.glyph_min, self.glyph_max)
        pw, ph = patch.size
        gx = int(rng.integers(cx + 8, cx + cw - pw - 8, endpoint=True))
        gy = int(rng.integers(cy + 8, cy + ch - ph - 8, endpoint=True))
        ev_box = R.grow_box((gx, gy, gx + pw, gy + ph), 3, side, side)
        clean_region = img[ev_box[1]:ev_box[3], ev_box[0]:ev_box[2]].copy()
        R.paste_text(clean_region, patch, gx - ev_box[0], gy - ev_box[1],
                     R.faded_color(paper, 200.0))
        placed = R.paste_text(img, patch, gx, gy, R.faded_color(paper, c_target * 255.0 / span))
        mask = R.embed_mask(placed.mask, (gx - ev_box[0], gy - ev_box[1]),
                            (ev_box[3] - ev_box[1], ev_box[2] - ev_box[0]))
        evidence = R.region_evidence("digit", clean_region, ev_box, mask, text=digit,
                                     glyph_height=placed.glyph_height, clean_is_region=True)
        low = float(rng.uniform(70, 200 - span))
        tint = rng.uniform(-6, 6, size=3)
        img = R.compress_dynamic_range(img, [low + t for t in tint], span)
        shade = float(rng.uniform(*self.shading)) * c_target
        img = cv2.add(img, cv2.cvtColor(shading_gray(rng, side, shade), cv2.COLOR_GRAY2RGB))
        img = glyph_noise(img, rng, *self.noise_sigma)
        x0, y0, x1, y1 = ev_box
        before = R.ink_surround_contrast(img[y0:y1, x0:x1], mask)
        call = RefCall("c1", "autocontrast", {"image_index": 0, "cutoff": self.cutoff})
        question = ("The photo of a card is badly washed out. Which digit is printed on the card? "
                    f"Answer with one of: {', '.join(self.glyphs)}.")
        tools = list(CONTRAST_TOOLS)
        checkpoints = (
            Checkpoint("s_contrast", "S", "contrast_op", {"evidence": "digit", "tools": tools},
                       "a contrast operation was applied to an image holding the digit"),
            Checkpoint("v_tool", "V", "v_tool", {"evidence": "digit", "tools": tools},
                       "a contrast tool was applied to a region containing the digit"),
            Checkpoint("v_true", "V", "v_true", {"evidence": "digit"},
                       "some image shows the digit with visible contrast"),
        )
        meta = {"dynamic_range": span, "ink_contrast": before, "cutoff": self.cutoff,
                "shading": shade, "card_box": list(card)}
        return classic_task(self, "Science", img, question, digit, self.glyphs, call, evidence,
                            checkpoints, meta)
