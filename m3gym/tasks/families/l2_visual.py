"""Level-2 family ``tiny_faint_text``: crop (zoom) → [rotate] → autocontrast on a faded label.

``price_sum`` and ``region_count`` moved to their own modules; this one goes when
``tiny_faint_text`` does.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import cv2
import numpy as np

from m3gym.scoring.checkpoints import evidence_checkpoints
from m3gym.tasks import render
from m3gym.tasks.families import _l2_common as c2
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.spec import AnswerSpec, RefCall, Task


def _freeze(img: np.ndarray) -> np.ndarray:
    return render.freeze(img)


# --------------------------------------------------------------------------------------------
# tiny_faint_text

_TEXT_SCENES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "Science": ("lab_bench", ("noise", "gradient", "fabric", "paper"), "specimen label"),
    "Finance": ("invoice_desk", ("wood", "paper", "gradient", "fabric"), "invoice tag"),
}


@register_family
@dataclass
class TinyFaintText(FamilyConfig):
    """Read a code from a tiny, faded label (a 2-hop crop → autocontrast chain).

    The label's glyphs are 9–14 px tall in a 1400–2000 px scene, so at the agent's view size
    (longest side 768) they are 3–8 px tall (below the 9 px legibility bar) and faint. Its ink is
    only
    ``contrast_range`` gray levels darker than its plate (< 28), so the zoomed crop is still too
    faint; an autocontrast *of the crop* (whose histogram is just plate + ink) stretches it to
    full contrast, while an autocontrast of the full image does nothing for the tiny glyphs.
    With probability ``rotate_prob`` the label is mounted a quarter or half turn off, adding a
    rotate between the crop and the autocontrast (3 hops).
    """

    name: ClassVar[str] = "tiny_faint_text"
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Science", "Finance")
    description: ClassVar[str] = "zoom into a tiny faded label, then autocontrast the crop"

    glyph_range: tuple[float, float] = (9.0, 14.0)
    contrast_range: tuple[float, float] = (8.0, 15.0)
    rotate_prob: float = 0.4
    decoys: tuple[int, int] = (1, 3)

    def validate(self) -> None:
        """Check glyph sizes (legible only when zoomed), faintness and probabilities."""
        c2.check_range("glyph_range", *self.glyph_range, 7.0, 19.0)
        c2.check_range("contrast_range", *self.contrast_range, 4.0, 20.0)
        c2.check_range("decoys", *self.decoys, 0, 5)
        if not 0.0 <= self.rotate_prob <= 1.0:
            raise ValueError("rotate_prob must lie in [0, 1]")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        domain = c2.pick(rng, self.domains)
        scene_name, kinds, noun = _TEXT_SCENES[domain]
        w, h = c2.scene_size(rng)
        img = render.background(rng, h, w, kind=c2.pick(rng, kinds))
        code = render.random_code(rng)
        quarter = int(rng.choice([1, 2, 3])) if rng.random() < self.rotate_prob else 0
        tab_names = list(c2.TAB_COLORS)
        order = rng.permutation(len(tab_names))
        tab = tab_names[int(order[0])]

        def make_label(text: str, color_name: str, faint: float | None,
                       occupied: list[tuple[int, int, int, int]],
                       q: int) -> c2.PlacedLabel | None:
            glyph = float(rng.uniform(*self.glyph_range))
            face, _ = render.random_font(rng)
            patch = c2.text_patch(text, glyph, face, 1, q)
            pad = int(max(9, round(glyph * 0.8)))
            tab_w = int(max(10, round(glyph)))
            pw, ph = patch.size
            size = (tab_w + pw + 2 * pad, ph + 2 * pad)
            margin = 40
            spot = c2.place(rng, size, (margin, margin, w - margin, h - margin), occupied,
                            decoration)
            if spot is None:
                return None
            plate_name = c2.pick(rng, tuple(c2.PLATE_COLORS))
            plate = render.jitter_color(rng, c2.PLATE_COLORS[plate_name], 8)
            ink = (render.faded_color(plate, faint) if faint is not None
                   else render.ink_for(plate))
            label = c2.draw_label(img, patch, spot, pad, plate, ink, extra_left=tab_w)
            x0, y0, _, y1 = label.plate_box
            cv2.rectangle(img, (x0, y0), (x0 + tab_w - 1, y1 - 1),
                          render.NAMED_COLORS[color_name], -1)
            occupied.append(label.plate_box)
            return c2.PlacedLabel(label.text, label.ink_box, label.mask, label.clean,
                                  label.plate_box, label.glyph_height, q)

        decoration = c2.decorate(img, rng, (6, 13), (3, 7))
        occupied: list[tuple[int, int, int, int]] = []
        faint = float(rng.uniform(*self.contrast_range))
        target = make_label(code, tab, faint, occupied, quarter)
        if target is None:  # pragma: no cover - an empty 1700 px scene always has room
            raise RuntimeError("no room for the label")
        for i in range(int(rng.integers(self.decoys[0], self.decoys[1] + 1))):
            decoy_faint = float(rng.uniform(*self.contrast_range)) if rng.random() < 0.6 else None
            make_label(render.random_code(rng), tab_names[int(order[1 + i])], decoy_faint,
                       occupied, int(rng.integers(4)) if rng.random() < 0.3 else 0)
        img = c2.degrade(img, rng)

        ev = target.evidence("label")
        angle = ev.angle
        crop_box = render.grow_box(target.ink_box, 2, w, h)
        c1 = c2.crop_call("c1", 0, crop_box, w, h, target.glyph_height, rotate_deg=-angle)
        steps: list[tuple[RefCall, ...]] = [(c1,)]
        last, last_index = "c1", 1
        if angle != 0.0:
            steps.append((RefCall("c2", "rotate", {"image_index": 1, "angle": -angle},
                                  ("c1",)),))
            last, last_index = "c2", 2
        cid = f"c{len(steps) + 1}"
        steps.append((RefCall(cid, "autocontrast", {"image_index": last_index, "cutoff": 1.0},
                              (last,)),))
        # per call an S checkpoint; a v_tool on the contrast repair; v_true on the label
        checkpoints = evidence_checkpoints("label", [c for step in steps for c in step])
        pos = render.position_phrase(target.plate_box, w, h)
        question = (f"A small, faded {noun} with a {tab} tab on its left edge is in the {pos} "
                    f"part of the image. What code is printed on it?")
        return Task(
            task_id="", family=self.name, level=2, domain=domain, images=(_freeze(img),),
            question=question,
            answer=AnswerSpec(code, render.code_variants(code)),
            reference=tuple(steps), evidence=(ev,), checkpoints=tuple(checkpoints),
            choices=render.code_choices(rng, code, 6),
            capabilities=("visual_grounding", "multi_hop"),
            metadata=c2.l2_metadata(self.name, domain, scene_name, (ev,), img, rotated=angle != 0.0,
                               ink_contrast=faint),
        )
