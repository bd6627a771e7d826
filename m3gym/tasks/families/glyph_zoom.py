"""Classic suite, ``glyph_zoom``: a tiny digit tag in a small cluttered scene (one crop)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from m3gym.spec import Checkpoint, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.families._glyph_common import (
    BACKGROUNDS,
    CLASSIC_MIN_VIEW_HEIGHT,
    CLASSIC_VIEW,
    GLYPHS,
    TAG_FRAME,
    check_common,
    classic_task,
    draw_tag,
    glyph_clutter,
    glyph_evidence,
    glyph_noise,
    glyph_patch,
    glyph_surface,
    grid_cell,
    tag_size,
)
from m3gym.tasks.families._scene_common import check_range
from m3gym.tasks.registry import FamilyConfig, register_family


@register_family
@dataclass
class GlyphZoomFamily(FamilyConfig):
    """Read the digit on the red-framed tag in a small cluttered scene (classic suite).

    Scene:
        A ``side`` px square of texture with clutter and ``decoys`` + 1 small tags, one per
        cell of a 3x3 grid; the target tag has a red frame (``side / 128`` px, at least 2, so
        it stays visible in the view), decoys none. Each carries one digit
        of ``glyphs`` (Hershey face), ``glyph_min``-``glyph_max`` px tall; sensor noise
        ``noise_sigma``.
    Question:
        "Which digit is printed on the small tag with the red frame in the top-left part of
        the image? Answer with one of: 0, 1, ..., 7." The choices are ``glyphs`` in a fixed
        order (a choice index means one digit in every episode).
    Why a tool is needed:
        The scene is 384 px, seen through the 96-px view (a quarter of its size), so the
        12-13 px digit is 3-3.25 px tall there, half the 6 px legibility bar; a ``crop`` of the
        tag's grid cell (9-10 px) or of a quadrant holding it (6-6.5 px) shows it legibly. The
        size is set by the view-only leak probe (a template matcher that knows the face, the
        size and the tag's place): it read 0.33 of the 10-13 px digits of the former 288-px
        scene (3.3-4.3 px in the view) and 0.15 at this size (chance 0.125).
    Reference trajectory:
        One ``crop`` of the tag's 3x3 grid cell at zoom 1.
    Checkpoints:
        ``s_crop`` (a crop contains and magnifies the digit), ``v_tool`` (crop applied to a
        region holding it), ``v_true`` (some image shows it legibly).
    Difficulty:
        ``difficulty_knobs`` (the default config is the classic suite's, not difficulty 0): at
        0 glyphs 14-16 px, 0-1 decoys, clutter 2-4, noise 0.5-1.5; at 1 glyphs 12-13 px, 3-4
        decoys, clutter 8-12, noise 2-3.5.
    Config:
        ``side``, ``glyph_min``, ``glyph_max``, ``decoys``, ``clutter``, ``noise_sigma``,
        ``glyphs``.
    """

    name: ClassVar[str] = "glyph_zoom"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 1
    suite: ClassVar[str] = "classic"
    view_size: ClassVar[int] = CLASSIC_VIEW
    domains: ClassVar[tuple[str, ...]] = ("Life",)
    description: ClassVar[str] = "Zoom into a tiny digit tag (crop), classic-RL suite."

    side: int = 384
    glyph_min: float = 12.0
    glyph_max: float = 13.0
    decoys: tuple[int, int] = (1, 2)
    clutter: tuple[int, int] = (4, 8)
    noise_sigma: tuple[float, float] = (1.0, 2.5)
    glyphs: tuple[str, ...] = GLYPHS

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Smaller digits, more decoy tags, clutter and noise as ``d`` rises."""
        d = float(difficulty)
        return {
            "glyph_min": 14.0 - 2.0 * d, "glyph_max": 16.0 - 3.0 * d,
            "decoys": (round(3 * d), 1 + round(3 * d)),
            "clutter": (2 + round(6 * d), 4 + round(8 * d)),
            "noise_sigma": (0.5 + 1.5 * d, 1.5 + 2.0 * d),
        }

    def validate(self) -> None:
        """Check sizes: illegible in the full view, legible in a quadrant crop."""
        check_common(self.side, self.glyphs)
        if self.glyph_min > self.glyph_max:
            raise ValueError("need glyph_min <= glyph_max")
        check_range("clutter", *self.clutter, 0, 30)
        check_range("noise_sigma", *self.noise_sigma, 0.0, 10.0)
        scale = CLASSIC_VIEW / self.side
        if self.glyph_max * scale >= CLASSIC_MIN_VIEW_HEIGHT:
            raise ValueError("glyph_max is legible in the full view: no crop would be needed")
        if self.glyph_min * scale * 2 < CLASSIC_MIN_VIEW_HEIGHT:
            raise ValueError("glyph_min would not be legible in a quadrant crop")
        if self.glyph_max * 2.5 > self.side / 3 - 8:
            raise ValueError("glyph_max too large for a tag inside one 3x3 grid cell")
        if not 0 <= self.decoys[0] <= self.decoys[1] <= min(4, len(self.glyphs) - 1):
            raise ValueError("decoys must satisfy 0 <= lo <= hi <= min(4, len(glyphs) - 1)")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one glyph-zoom task."""
        side = self.side
        img = glyph_surface(rng, side, R.pick(rng, BACKGROUNDS))
        n_decoys = int(rng.integers(self.decoys[0], self.decoys[1], endpoint=True))
        cells = [int(c) for c in rng.permutation(9)[: n_decoys + 1]]
        digits = [self.glyphs[int(i)] for i in rng.permutation(len(self.glyphs))[: n_decoys + 1]]
        tags: list[R.Box] = []
        target: tuple[R.Box, R.PlacedText] | None = None
        for k, (cell, digit) in enumerate(zip(cells, digits)):
            patch = glyph_patch(rng, digit, self.glyph_min, self.glyph_max)
            tw, th = tag_size(patch)
            x0, y0, x1, y1 = grid_cell(cell, side)
            x = int(rng.integers(x0 + 4, x1 - tw - 4, endpoint=True))
            y = int(rng.integers(y0 + 4, y1 - th - 4, endpoint=True))
            if k == 0:
                plate = R.jitter_color(rng, (245, 245, 240), 8)
                box, placed = draw_tag(img, patch, (x, y), plate, TAG_FRAME,
                                       max(2, round(side / 128)))
                target = (box, placed)
            else:
                plate = R.rand_color(rng, 60, 230)
                box, _ = draw_tag(img, patch, (x, y), plate, None)
            tags.append(box)
        assert target is not None
        tag_box, placed = target
        glyph_clutter(img, rng, int(rng.integers(*self.clutter, endpoint=True)),
                      avoid=[R.grow_box(b, 4, side, side) for b in tags],
                      size_range=(0.08, 0.22))
        evidence = glyph_evidence(img, placed, 2)
        img = glyph_noise(img, rng, *self.noise_sigma)
        cell_box = grid_cell(cells[0], side)
        call = RefCall("c1", "crop", {"image_index": 0,
                                      "bbox_2d": R.box_to_bbox1000(cell_box, side, side),
                                      "zoom_scale": 1.0})
        where = R.position_phrase(tag_box, side, side)
        question = (f"Which digit is printed on the small tag with the red frame in the {where} "
                    f"part of the image? Answer with one of: {', '.join(self.glyphs)}.")
        checkpoints = (
            Checkpoint("s_crop", "S", "crop_covers", {"evidence": "digit"},
                       "a crop contains the whole digit"),
            Checkpoint("v_tool", "V", "v_tool", {"evidence": "digit", "tools": ["crop"]},
                       "crop was applied to a region containing the digit"),
            Checkpoint("v_true", "V", "v_true", {"evidence": "digit"},
                       "some image shows the digit legibly"),
        )
        meta = {"cell": cells[0], "tag_box": list(tag_box), "decoy_digits": digits[1:],
                "glyph_height_view": placed.glyph_height * CLASSIC_VIEW / side}
        return classic_task(self, "Life", img, question, digits[0], self.glyphs, call, evidence,
                            checkpoints, meta)
