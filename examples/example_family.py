"""An example task family, complete and small: docs/contributing.md, "Write a new family".

A real family lives in ``m3gym/tasks/families/<name>.py`` (importing the package registers it);
this one registers when this module is imported. ``tests/test_example_family.py`` runs
``m3gym.testing.check_family`` on it, so the example cannot rot.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from m3gym.spec import AnswerSpec, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.checkpoint_builders import evidence_checkpoints
from m3gym.tasks.registry import FamilyConfig, register_family


@register_family
@dataclass
class SerialPlateFamily(FamilyConfig):
    """Read the serial number on a small plate in a large photo.

    Scene:
        A ``width`` x ``height`` surface (a texture, or a photograph with ``scenes="photo"``:
        drawn with ``R.surface``), clutter, readable distractor labels and one
        small plate listing six look-alike serial codes (the choices), one a row, in
        ``glyph_range`` px type; a red tab marks the row of the answer.
    Question:
        "What serial number is printed on the plate's row marked in red?", the six codes.
    Why a tool is needed:
        At the 768 px view (a quarter of the 3200 px photo) the glyphs are under 2 px tall: below
        ``Evidence.min_view_height``, and the look-alike rows blur into one another, so even a
        template matcher that knows the font and the box reads the view at chance.
    Reference trajectory:
        One ``crop`` around the marked row with a zoom that makes the glyphs legible.
    Checkpoints:
        S ``crop_covers`` the code; V ``v_tool`` (crop on the code) and ``v_true`` (legible).
    Difficulty:
        ``glyph_range`` (7.5, 8.5) px at 0 to (5, 6) at 1; ``clutter`` (2, 4) to (10, 16).
    Config:
        width, height: image size. glyph_range: code glyph height (px). clutter: shape count.
    """

    name: ClassVar[str] = "serial_plate"
    photo_scenes: ClassVar[bool] = True  # the surface comes from R.surface (photo scenes)
    level: ClassVar[int] = 1
    domains: ClassVar[tuple[str, ...]] = ("Science",)

    width: int = 3200
    height: int = 2400
    glyph_range: tuple[float, float] = (6.0, 8.0)
    clutter: tuple[int, int] = (4, 8)

    def validate(self) -> None:
        """Refuse sizes outside 400..4096 px, reversed ranges and glyphs legible at view size."""
        if not 400 <= min(self.width, self.height) <= max(self.width, self.height) <= 4096:
            raise ValueError("width and height must lie in 400..4096")
        if not 4 <= self.glyph_range[0] <= self.glyph_range[1]:
            raise ValueError("glyph_range must be (lo, hi) with 4 <= lo <= hi")
        if self.glyph_range[1] * R.view_scale(self.height, self.width) >= 9:
            raise ValueError("glyph_range is legible at view size: no tool would be needed")
        if not 0 <= self.clutter[0] <= self.clutter[1]:
            raise ValueError("clutter must be (lo, hi) with 0 <= lo <= hi")

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Smaller type and more clutter as ``difficulty`` goes from 0 to 1."""
        glyph = 7.5 - 2.5 * difficulty
        return {"glyph_range": (glyph, glyph + 1.0),
                "clutter": (round(2 + 8 * difficulty), round(4 + 12 * difficulty))}

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task from ``rng``."""
        w, h = self.width, self.height
        img = R.surface(rng, h, w)  # a photograph in its place with scenes='photo'
        code = R.random_code(rng)
        choices = R.code_choices(rng, code, 6)
        glyph = float(rng.uniform(*self.glyph_range))
        rows = [R.render_text(c, glyph) for c in choices]  # every option printed, one a row
        pitch, tab = round(glyph * 1.7), round(glyph * 2)
        pw, ph = max(r.size[0] for r in rows) + tab * 2, pitch * len(rows)
        x, y = int(rng.integers(40, w - pw - 40)), int(rng.integers(40, h - ph - 40))
        plate = R.grow_box((x, y, x + pw, y + ph), 6, w, h)
        img[plate[1]:plate[3], plate[0]:plate[2]] = (205, 205, 200)
        row = choices.index(code)
        ty = y + row * pitch + (pitch - rows[row].size[1]) // 2
        img[ty:ty + rows[row].size[1], x:x + tab] = (200, 40, 40)  # the red tab marks the row
        placed = [R.paste_text(img, r, x + tab * 2, y + i * pitch + (pitch - r.size[1]) // 2,
                               (30, 30, 30)) for i, r in enumerate(rows)][row]
        labels = R.add_distractor_labels(img, rng, 4, avoid=[R.grow_box(plate, 20, w, h)])
        R.add_clutter(img, rng, int(rng.integers(*self.clutter, endpoint=True)),
                      avoid=[R.grow_box(plate, 20, w, h), *(lb.box for lb in labels)])
        evidence = R.region_evidence("code", img, placed.box, placed.mask, text=code,
                                     glyph_height=placed.glyph_height)
        img = R.add_sensor_noise(img, rng, 1.5, inplace=True)
        crop = R.grow_box(placed.box, round(glyph), w, h)
        zoom = R.crop_zoom_for((crop[2] - crop[0], crop[3] - crop[1]), placed.glyph_height, 9.0)
        call = RefCall("c1", "crop", {"image_index": 0, "bbox_2d": R.box_to_bbox1000(crop, w, h),
                                      "zoom_scale": zoom})
        return Task(task_id="", family=self.name, level=1, domain="Science",
                    images=(R.freeze(img),),
                    question="What serial number is printed on the plate's row marked in red?",
                    answer=AnswerSpec(code), reference=((call,),), evidence=(evidence,),
                    checkpoints=evidence_checkpoints("code", [call]), choices=choices,
                    capabilities=("visual_grounding",))
