"""Classic suite, ``glyph_faint``: a digit the 96 px view rounds away (one autocontrast)."""

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
    glyph_surface,
)
from m3gym.tasks.families._text_common import (
    HIDDEN_INK_DEPTH,
    SURFACE_GAIN,
    bold_face,
    hidden_ink,
    hidden_ink_offsets,
    text_patch,
)
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tools.catalogue import CONTRAST_TOOLS


@register_family
@dataclass
class GlyphFaintFamily(FamilyConfig):
    """Read a digit printed below what the 96 px view resolves, on an overexposed card (classic).

    Scene:
        A ``side`` px square of texture with clutter and a paper card holding one digit of
        ``glyphs`` (a bold TrueType face, ``glyph_min``-``glyph_max`` px). The photo is
        overexposed: everything spans only ``levels`` = L gray levels (the card the lightest),
        without noise or shading. The digit is printed as fine dots
        (:func:`~m3gym.tasks.families._text_common.hidden_ink`): in each ``k x k`` block of the
        view's block grid (``k = side / 96``, 3 at the default size) two pixels lie
        :data:`~m3gym.tasks.families._text_common.HIDDEN_INK_DEPTH` levels below the card.
    Question:
        "The photo of a card is badly washed out. Which digit is printed on the card? Answer
        with one of: 0, 1, ..., 7." Fixed choices ``glyphs`` in order.
    Why a tool is needed:
        The 96 px view averages ``k x k`` blocks: a block's dots move its mean by under half a
        level, which rounds back to the card's level, so the digit is *not in the view at all*
        (a classifier of the view, a CNN policy or a strong reader, sees a blank card). One
        ``autocontrast`` of the full-resolution photo (cutoff ``cutoff`` %) stretches the
        L-level range to 0..255 *before* the view shrinks it: each dot becomes a step of at
        least ``2 x 255 / L`` levels and the view shows the digit as solid print (``validate``
        requires 1.3x the 28-level visibility threshold). ``equalize`` or a ``threshold`` just
        under the card's level work too. This trains calling a point op on the full image when
        the view looks blank.
    Reference trajectory:
        One ``autocontrast`` of the photo (cutoff ``cutoff`` %).
    Checkpoints:
        ``s_contrast`` (a contrast op on an image holding the digit), ``v_tool`` (a contrast
        tool on a region holding it), ``v_true`` (some image shows it with visible contrast at
        view size: the stretched photo does, the reset view does not).
    Difficulty:
        ``difficulty_knobs`` (the default config is the classic suite's, not difficulty 0): at
        0 glyphs 36-48 px and 2 levels, at 1 glyphs 30-36 px and 2-3 levels (a weaker stretch).
    Config:
        ``side``, ``glyph_min``, ``glyph_max``, ``levels``, ``cutoff``, ``glyphs``.
    """

    name: ClassVar[str] = "glyph_faint"
    level: ClassVar[int] = 1
    suite: ClassVar[str] = "classic"
    view_size: ClassVar[int] = CLASSIC_VIEW
    domains: ClassVar[tuple[str, ...]] = ("Science",)
    description: ClassVar[str] = "Restore a digit the view rounds away (autocontrast), classic."
    flat_scene_reason: ClassVar[str] = (
        "the digit is dots 2 gray levels deep on a noise-free, flat card in a photo spanning "
        "2-3 levels; a photograph backdrop (its own texture range) and the camera finish "
        "(sensor noise, JPEG) would widen the range the stretch divides by and wash the dots out")

    side: int = 288
    glyph_min: float = 32.0
    glyph_max: float = 44.0
    levels: tuple[int, int] = (2, 2)
    cutoff: float = 1.0
    glyphs: tuple[str, ...] = GLYPHS

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Smaller digits and a wider range (a weaker stretch) as ``d`` rises."""
        d = float(difficulty)
        return {
            "glyph_min": 36.0 - 6.0 * d, "glyph_max": 48.0 - 12.0 * d,
            "levels": (2, 2 + round(d)),
        }

    def block(self) -> int:
        """Return the view's block factor ``k`` (the side over the 96 px view, floored)."""
        return max(1, self.side // CLASSIC_VIEW)

    def stretched_contrast(self) -> float:
        """Return the least view contrast of the digit after the stretch (widest range)."""
        k = self.block()
        dots = len(hidden_ink_offsets(k))
        return dots * HIDDEN_INK_DEPTH * 255.0 / (self.levels[1] * k * k)

    def validate(self) -> None:
        """Check sizes, that the view rounds the digit away and autocontrast restores it."""
        check_common(self.side, self.glyphs)
        if self.block() < 2:
            raise ValueError("side must be at least twice the 96 px view")
        if self.glyph_min * CLASSIC_VIEW / self.side < 1.5 * CLASSIC_MIN_VIEW_HEIGHT:
            raise ValueError("glyph_min would not be legible by size in the view")
        if not self.glyph_min <= self.glyph_max <= self.side * 0.3:
            raise ValueError("need glyph_min <= glyph_max <= 0.3 * side")
        if not 2 <= self.levels[0] <= self.levels[1] <= 8:
            raise ValueError("levels must lie in 2..8")
        if self.stretched_contrast() < 1.3 * Evidence.min_contrast:
            raise ValueError("autocontrast could not restore the digit with this margin "
                             "(levels too wide)")
        if not 0 <= self.cutoff < 10:
            raise ValueError("cutoff must lie in 0..10 %")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one glyph-faint task."""
        side, k = self.side, self.block()
        img = glyph_surface(rng, side, R.pick(rng, ("wood", "fabric", "gradient", "noise")))
        # a darker table: below the card's level once compressed, so the card alone is the top
        img = cv2.convertScaleAbs(img, alpha=SURFACE_GAIN)
        cw, ch = int(side * rng.uniform(0.45, 0.6)), int(side * rng.uniform(0.5, 0.65))
        cx = int(rng.integers(8, side - cw - 8, endpoint=True))
        cy = int(rng.integers(8, side - ch - 8, endpoint=True))
        # light card: it lands on the top level of the compressed range in every channel
        paper = R.jitter_color(rng, (246, 244, 238), 6)
        cv2.rectangle(img, (cx, cy), (cx + cw - 1, cy + ch - 1), paper, -1)
        card = (cx, cy, cx + cw, cy + ch)
        glyph_clutter(img, rng, int(rng.integers(2, 5, endpoint=True)),
                      avoid=[R.grow_box(card, 6, side, side)], size_range=(0.08, 0.2))
        span = int(rng.integers(self.levels[0], self.levels[1], endpoint=True))
        digit = R.pick(rng, self.glyphs)
        height = round(float(rng.uniform(self.glyph_min, self.glyph_max)))
        patch = text_patch(digit, height, bold_face(R.pick(rng, R.READABLE_FACES)))
        pw, ph = patch.size
        gx = int(rng.integers(cx + 8, cx + cw - pw - 8, endpoint=True))
        gy = int(rng.integers(cy + 8, cy + ch - ph - 8, endpoint=True))
        ev_box = R.grow_box((gx, gy, gx + pw, gy + ph), 3, side, side)
        clean_region = img[ev_box[1]:ev_box[3], ev_box[0]:ev_box[2]].copy()
        R.paste_text(clean_region, patch, gx - ev_box[0], gy - ev_box[1],
                     R.faded_color(paper, 200.0))
        mask = R.embed_mask(patch.mask, (gx - ev_box[0], gy - ev_box[1]),
                            (ev_box[3] - ev_box[1], ev_box[2] - ev_box[0]))
        evidence = R.region_evidence("digit", clean_region, ev_box, mask, text=digit,
                                     glyph_height=patch.glyph_height, clean_is_region=True)
        low = float(rng.uniform(70, 200))
        tint = rng.uniform(-6, 6, size=3)
        img = R.compress_dynamic_range(img, [low + t for t in tint], float(span))
        hidden_ink(img, patch.mask, gx, gy, k)
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
        meta = {"dynamic_range": span, "ink_depth": HIDDEN_INK_DEPTH, "block_factor": k,
                "cutoff": self.cutoff, "card_box": list(card)}
        return classic_task(self, "Science", img, question, digit, self.glyphs, call, evidence,
                            checkpoints, meta)
