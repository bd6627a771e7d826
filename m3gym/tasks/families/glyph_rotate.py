"""Classic suite, ``glyph_rotate``: a small turned or mirrored digit card, read after a crop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.spec import Checkpoint, RefCall, Task
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
    grid_cell,
)
from m3gym.tasks.families._scene_common import check_range
from m3gym.tasks.families._text_common import TRANSFORMS, apply_transform, transform_box
from m3gym.tasks.registry import FamilyConfig, register_family


@register_family
@dataclass
class GlyphRotateFamily(FamilyConfig):
    """Read the digit on a small card lying turned or mirrored (classic suite).

    Scene:
        A ``side`` px square of texture with clutter and one small paper card, inside one cell
        of a 3x3 grid, holding a digit of ``glyphs`` (``glyph_min``-``glyph_max`` px) with a bar
        under it that marks the card's bottom; sensor noise ``noise_sigma``; then the whole
        image is turned or mirrored by one of ``transforms`` (the grid's cells map onto cells).
    Question:
        "The small card in the image lies turned or mirrored. Which digit is printed on it?
        Answer with one of: 0, 1, ..., 7." Fixed choices ``glyphs`` in order.
    Why a tool is needed:
        The scene is 384 px, seen through the 96-px view (a quarter of its size), so the
        10.5-11.5 px digit is 2.6-2.9 px tall there, under half the 6 px legibility bar; a
        ``crop`` of the card shows it legibly (the reference's tight crop at 21-23 px; the
        card's 3x3 grid cell, the discrete wrapper's region, at 7.9-8.6 px). Measured
        (``m3gym audit-tools``, best reader, all 8 orientations): no tool 0.17 flat / 0.00
        photo on the 6 held-out tasks (0.21 on 24; chance 0.125; a "0" or "1" is the shape
        still told apart at this size), with the crop 0.83 (0.88 on 24), share 0.67. Before
        this design the digit was 40-56 px (13-19 px in the view) and the reference one
        rotate/flip: a rotation or flip only permutes pixels, so it added no information
        (share 0.005) and a no-tool reader (1.00, and the no-tool PPO floor, 0.93) read the
        turned digit from the view.
    What it trains:
        Finding a small card, zooming it, and reading a digit in an arbitrary orientation
        (a quarter or half turn, or mirrored): the crop shows the digit as the card lies and
        ``v_true`` counts it legible in any orientation. A rotation or flip adds no
        information, so the reference has none and no checkpoint pays for one (the overthink
        penalty may charge it). That is what sets it apart from ``glyph_zoom`` (an upright tag
        among decoys).
    Reference trajectory:
        One ``crop`` of the card grown by half its size (inside its 3x3 grid cell), zoomed so
        the crop is about the 96 px view (zoom 1-3). The discrete wrapper's expert takes the
        grid cell holding it (its largest overlap), which passes the same checkpoints.
    Checkpoints:
        ``s_crop`` (a crop contains and magnifies the digit), ``v_tool`` (crop applied to a
        region holding it), ``v_true`` (some image shows it legibly, in any orientation).
    Difficulty:
        ``difficulty_knobs`` (the default config is the classic suite's, not difficulty 0): at
        0 glyphs 13-15 px, turns only, clutter 1-3, noise 0.5-1.5; at 1 glyphs 10-11 px, every
        transform (mirrors too), clutter 6-10, noise 2-3.5.
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
    description: ClassVar[str] = ("Zoom into a small turned or mirrored digit card and read it "
                                  "as it lies (crop), classic-RL suite.")

    side: int = 384
    glyph_min: float = 10.5
    glyph_max: float = 11.5
    transforms: tuple[str, ...] = TRANSFORMS
    clutter: tuple[int, int] = (3, 6)
    noise_sigma: tuple[float, float] = (1.0, 2.5)
    glyphs: tuple[str, ...] = GLYPHS

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Smaller digits, mirrors, more clutter and noise as ``d`` rises."""
        d = float(difficulty)
        return {
            "glyph_min": 13.0 - 3.0 * d, "glyph_max": 15.0 - 4.0 * d,
            "transforms": TRANSFORMS if d >= 0.5 else ("rot90", "rot180", "rot270"),
            "clutter": (1 + round(5 * d), 3 + round(7 * d)),
            "noise_sigma": (0.5 + 1.5 * d, 1.5 + 2.0 * d),
        }

    def validate(self) -> None:
        """Check sizes (illegible in the full view, legible in a grid-cell crop) and transforms."""
        check_common(self.side, self.glyphs)
        check_range("clutter", *self.clutter, 0, 30)
        check_range("noise_sigma", *self.noise_sigma, 0.0, 10.0)
        if self.side % 3:
            raise ValueError("side must be a multiple of 3 (the turned grid cells stay cells)")
        if self.glyph_min > self.glyph_max:
            raise ValueError("need glyph_min <= glyph_max")
        scale = CLASSIC_VIEW / self.side
        if self.glyph_max * scale >= CLASSIC_MIN_VIEW_HEIGHT:
            raise ValueError("glyph_max is legible in the full view: no crop would be needed")
        if self.glyph_min * scale * 3 < CLASSIC_MIN_VIEW_HEIGHT:
            raise ValueError("glyph_min would not be legible in a grid-cell crop")
        if self.glyph_max * 2.6 > self.side / 3 - 8:
            raise ValueError("glyph_max too large for a card inside one 3x3 grid cell")
        if not self.transforms or any(t not in TRANSFORMS for t in self.transforms):
            raise ValueError(f"transforms must be among {TRANSFORMS}")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one glyph-rotate task."""
        side = self.side
        img = glyph_surface(rng, side, R.pick(rng, BACKGROUNDS))
        digit = R.pick(rng, self.glyphs)
        patch = glyph_patch(rng, digit, self.glyph_min, self.glyph_max)
        pw, ph = patch.size
        bar_gap, bar_h = max(2, int(ph * 0.2)), max(2, ph // 8)
        mx = max(3, int(pw * 0.45))
        cw, ch = pw + 2 * mx, ph + bar_gap + bar_h + 8
        cell = int(rng.integers(9))
        x0, y0, x1, y1 = grid_cell(cell, side)
        cx = int(rng.integers(x0 + 4, x1 - cw - 4, endpoint=True))
        cy = int(rng.integers(y0 + 4, y1 - ch - 4, endpoint=True))
        paper = R.jitter_color(rng, (238, 232, 215), 10)
        card = (cx, cy, cx + cw, cy + ch)
        cv2.rectangle(img, (cx, cy), (cx + cw - 1, cy + ch - 1), paper, -1)
        ink = R.jitter_color(rng, (30, 30, 40), 15)
        gx, gy = cx + mx, cy + 3
        placed = R.paste_text(img, patch, gx, gy, ink)
        bar_y = gy + ph + bar_gap
        cv2.rectangle(img, (gx - 2, bar_y), (gx + pw + 1, bar_y + bar_h - 1), ink, -1)
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
        # clean/mask show the region as it appears in image 0 (turned with it); the digit is
        # read as it lies, so its orientation is left at upright (v_true accepts the crop)
        clean0 = apply_transform(np.ascontiguousarray(clean_up), transform)
        mask0 = apply_transform(mask_up.astype(np.uint8), transform).astype(bool)
        evidence = R.region_evidence("digit", clean0, box0, mask0, text=digit,
                                     glyph_height=placed.glyph_height, clean_is_region=True)
        card0 = transform_box(card, transform, side, side)
        third = side // 3
        cell0 = int(((card0[1] + card0[3]) // 2) // third * 3 + ((card0[0] + card0[2]) // 2)
                    // third)
        cell_box = grid_cell(cell0, side)
        if not (cell_box[0] <= card0[0] and cell_box[1] <= card0[1] and card0[2] <= cell_box[2]
                and card0[3] <= cell_box[3]):  # pragma: no cover - cells map onto cells
            raise RuntimeError("the turned card left its grid cell")
        m = max(card0[2] - card0[0], card0[3] - card0[1]) // 2
        tight = (max(cell_box[0], card0[0] - m), max(cell_box[1], card0[1] - m),
                 min(cell_box[2], card0[2] + m), min(cell_box[3], card0[3] + m))
        span = max(tight[2] - tight[0], tight[3] - tight[1])
        zoom = float(np.clip(np.floor(CLASSIC_VIEW / span * 2) / 2, 1.0, 3.0))
        call = RefCall("c1", "crop", {"image_index": 0,
                                      "bbox_2d": R.box_to_bbox1000(tight, side, side),
                                      "zoom_scale": zoom})
        question = ("The small card in the image lies turned or mirrored. Which digit is "
                    f"printed on it? Answer with one of: {', '.join(self.glyphs)}.")
        checkpoints = (
            Checkpoint("s_crop", "S", "crop_covers", {"evidence": "digit"},
                       "a crop contains the whole digit"),
            Checkpoint("v_tool", "V", "v_tool", {"evidence": "digit", "tools": ["crop"]},
                       "crop was applied to a region containing the digit"),
            Checkpoint("v_true", "V", "v_true", {"evidence": "digit"},
                       "some image shows the digit legibly (in any orientation)"),
        )
        meta = {"transform": transform, "upright_box": list(ev_up), "card_box": list(card0),
                "cell": cell0, "glyph_height_view": placed.glyph_height * CLASSIC_VIEW / side}
        return classic_task(self, "Society", img, question, digit, self.glyphs, call, evidence,
                            checkpoints, meta)
