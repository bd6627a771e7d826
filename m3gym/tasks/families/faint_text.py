"""The ``faint_text`` family: faded print in a washed-out photo of a document (one autocontrast)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.spec import Checkpoint, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.families._scene_common import check_range
from m3gym.tasks.families._text_common import (
    MIN_CONTRAST,
    MIN_VIEW_HEIGHT,
    bold_face,
    l1_task,
    shading_field,
    text_patch,
    view_lookalike_codes,
)
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tools.catalogue import CONTRAST_TOOLS

FAINT_DOCS: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # doc -> (domain, title, field labels)
    "lab sheet": ("Science", "LABORATORY SAMPLE SHEET",
                  ("Sample ID", "Batch", "Reagent lot", "Instrument", "Culture plate")),
    "specimen record": ("Science", "SPECIMEN RECORD",
                        ("Specimen code", "Tray", "Field station", "Collector ID")),
    "catalogue card": ("Culture", "ARCHIVE CATALOGUE", ("Accession no", "Shelf mark", "Box",
                                                        "Donor ref")),
    "museum label": ("Culture", "MUSEUM COLLECTION", ("Object no", "Gallery", "Loan ref",
                                                      "Inventory")),
}


@register_family
@dataclass
class FaintTextFamily(FamilyConfig):
    """Read a faded code in a washed-out, unevenly lit, low-dynamic-range photo of a document.

    Scene:
        A lab sheet, specimen record, catalogue card or museum label (``docs``) on a textured
        table with clutter, in one TrueType face (``faces``; values in its bold variant),
        ``glyph_min``-``glyph_max`` px tall in a ``width`` x ``height`` photo. The photo spans
        only ``span`` gray levels and the named field's ink lies just ``ink_contrast`` = c
        levels from its paper; soft bands of light and shade (:func:`shading_field`)
        ``shading`` x c levels deep lie on top, so the paper on one part of the page is darker
        than the ink on another (no global threshold separates them); sensor noise
        ``noise_sigma``.
    Question:
        "The photo shows a faded lab sheet. What is the Batch?" Six choices: codes that differ
        only in look-alike characters drawn at view scale in the value's face
        (:func:`~m3gym.tasks.families._text_common.view_lookalike_codes`); the other fields hold
        other codes.
    Why a tool is needed:
        The ink contrast is far below :attr:`Evidence.min_contrast` (a viewer, or Tesseract's
        Otsu threshold, does not see it). One ``autocontrast`` (cutoff ``cutoff`` %) stretches
        the ``span + shading`` levels to the full range, multiplying the local ink contrast by
        about ``255 / (span + shading)``; ``validate`` requires 1.3x the visibility threshold
        at the worst corner of the ranges. Known limit (the view-only leak probe):
        autocontrast is a monotone map of gray levels, so the reset view holds what the
        stretched view shows; a contrast-invariant matcher (normalized correlation, what the
        probe uses) reads the code before the tool. Choice design cannot close that without
        making the stretched view illegible too; the leak test keeps this family as a known
        exception, and ``audit-leaks`` labels the miss structural because it measures it
        (:func:`~m3gym.audit.leaks.reference_unexplained_share`: 1 - R^2 of about 0.002).
    Reference trajectory:
        One ``autocontrast`` of the whole photo (cutoff ``cutoff`` %).
    Checkpoints:
        ``s_contrast`` (a contrast op on an image holding the field), ``v_tool`` (a contrast
        tool on a region holding the field), ``v_true`` (some image shows the value with
        visible contrast).
    Difficulty:
        ``difficulty_knobs``: at 0 ink 7-10 levels, glyphs 20-28 px, shading 2-3 x c,
        clutter 2-5; at 1 ink 5-6.5 levels, glyphs 15-22 px, shading 2.5-3.5 x c, clutter 5-9.
    Config:
        ``width``, ``height``, ``glyph_min``, ``glyph_max``, ``ink_contrast``, ``span``,
        ``noise_sigma``, ``cutoff``, ``clutter``, ``docs``, ``choices``, ``shading``, ``faces``.
    """

    name: ClassVar[str] = "faint_text"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 1
    domains: ClassVar[tuple[str, ...]] = ("Science", "Culture")
    description: ClassVar[str] = "Restore faded low-contrast print (autocontrast)."

    width: int = 1024
    height: int = 768
    glyph_min: float = 16.0
    glyph_max: float = 24.0
    ink_contrast: tuple[float, float] = (5.0, 8.0)
    span: tuple[float, float] = (12.0, 17.0)
    noise_sigma: tuple[float, float] = (0.3, 0.6)
    cutoff: float = 1.0
    clutter: tuple[int, int] = (3, 7)
    docs: tuple[str, ...] = tuple(FAINT_DOCS)
    choices: int = 6
    shading: tuple[float, float] = (2.5, 3.5)
    faces: tuple[str, ...] = R.FONT_FACES

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Fainter ink, deeper shading, smaller glyphs and more clutter as ``d`` rises."""
        d = float(difficulty)
        return {
            "ink_contrast": (7.0 - 2.0 * d, 10.0 - 3.5 * d),
            "glyph_min": 20.0 - 5.0 * d, "glyph_max": 28.0 - 6.0 * d,
            "shading": (2.0 + 0.5 * d, 3.0 + 0.5 * d),
            "clutter": (2 + round(3 * d), 5 + round(4 * d)),
        }

    def validate(self) -> None:
        """Check sizes, that the ink is invisible at first and restorable by the op."""
        if min(self.width, self.height) < 400 or max(self.width, self.height) > 2048:
            raise ValueError("image sides must lie in 400..2048 px")
        if not 8 <= self.glyph_min <= self.glyph_max <= 48:
            raise ValueError("need 8 <= glyph_min <= glyph_max <= 48")
        check_range("noise_sigma", *self.noise_sigma, 0.0, 3.0)
        check_range("clutter", *self.clutter, 0, 30)
        if not self.faces or any(f not in R.FONT_FACES for f in self.faces):
            raise ValueError(f"faces must be among {R.FONT_FACES}")
        if self.glyph_min * R.view_scale(self.height, self.width) < 1.2 * MIN_VIEW_HEIGHT:
            raise ValueError("glyph_min must be legible by size at view resolution")
        if not 1 <= self.ink_contrast[0] <= self.ink_contrast[1] < MIN_CONTRAST / 2:
            raise ValueError("ink_contrast must lie in 1 .. min_contrast/2")
        if not self.ink_contrast[1] < self.span[0] <= self.span[1] <= 40:
            raise ValueError("span must exceed ink_contrast and be at most 40 levels")
        if not 2.0 <= self.shading[0] <= self.shading[1] <= 6.0:
            raise ValueError("shading must lie in 2..6 (x ink contrast): deeper than the ink")
        # the 1 % cutoff trims the noise tails; the stretched range is about span + shading
        c = self.ink_contrast[0]
        if c * 255.0 / (self.span[1] + self.shading[1] * c) < 1.3 * MIN_CONTRAST:
            raise ValueError("autocontrast could not restore the ink contrast with this margin")
        if not 0 <= self.cutoff < 10:
            raise ValueError("cutoff must lie in 0..10 %")
        if not self.docs or any(d not in FAINT_DOCS for d in self.docs):
            raise ValueError(f"docs must be among {sorted(FAINT_DOCS)}")
        if not 2 <= self.choices <= 12:
            raise ValueError("choices must lie in 2..12")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one faint-text task."""
        W, H = self.width, self.height
        doc = R.pick(rng, self.docs)
        domain, title, labels = FAINT_DOCS[doc]
        img = R.surface(rng, H, W, R.pick(rng, ("wood", "fabric", "gradient", "noise")))
        dw, dh = int(W * rng.uniform(0.55, 0.75)), int(H * rng.uniform(0.7, 0.9))
        dx, dy = int(rng.integers(12, W - dw - 12)), int(rng.integers(12, H - dh - 12))
        paper = R.jitter_color(rng, (236, 230, 212), 10)
        cv2.rectangle(img, (dx, dy), (dx + dw - 1, dy + dh - 1), paper, -1)
        doc_box = (dx, dy, dx + dw, dy + dh)
        R.add_clutter(img, rng, int(rng.integers(*self.clutter, endpoint=True)),
                      avoid=[R.grow_box(doc_box, 8, W, H)])

        span = float(rng.uniform(*self.span))
        c_target = float(rng.uniform(*self.ink_contrast))
        strong = R.faded_color(paper, 200.0)
        face = R.pick_font(rng, self.faces)
        y = dy + 18
        head = text_patch(title, float(rng.uniform(24, 32)), bold_face(face))
        if head.size[0] < dw - 24:
            R.paste_text(img, head, dx + 14, y, R.faded_color(paper, rng.uniform(120, 200)))
        y += head.size[1] + 24
        chosen = [labels[int(i)] for i in rng.permutation(len(labels))]
        target_label = chosen[0]
        glyph = float(rng.uniform(self.glyph_min, self.glyph_max))
        code, choices = view_lookalike_codes(rng, bold_face(face), glyph, R.view_scale(H, W),
                                             self.choices)
        rows = [(target_label, code)]
        while len(rows) < len(chosen):
            other = R.random_code(rng)
            if other not in choices and other not in dict(rows).values():
                rows.append((chosen[len(rows)], other))
        rows = [rows[int(i)] for i in rng.permutation(len(rows))]
        target: R.PlacedText | None = None
        clean_region: np.ndarray | None = None
        for label, value in rows:
            lab = text_patch(f"{label}:", glyph, face)
            val = text_patch(value, glyph, bold_face(face))
            line_h = max(lab.size[1], val.size[1])
            if y + line_h > dy + dh - 12:
                break
            faded = R.faded_color(paper, float(rng.uniform(60, 160)))
            R.paste_text(img, lab, dx + 16, y + line_h - lab.size[1], faded)
            vx = min(dx + 16 + lab.size[0] + 14, dx + dw - 12 - val.size[0])
            vy = y + line_h - val.size[1]
            if label == target_label:
                ev = R.grow_box((vx, vy, vx + val.size[0], vy + val.size[1]), 3, W, H)
                clean_region = img[ev[1]:ev[3], ev[0]:ev[2]].copy()
                R.paste_text(clean_region, val, vx - ev[0], vy - ev[1], strong)
                # full-range contrast that compresses to c_target levels
                target = R.paste_text(img, val, vx, vy,
                                      R.faded_color(paper, c_target * 255.0 / span))
            else:
                R.paste_text(img, val, vx, vy, faded)
            y += int(line_h + glyph * 1.0)
        if target is None or clean_region is None:  # pragma: no cover - the page fits 4 rows
            raise RuntimeError("target field did not fit on the page")

        ev_box = R.grow_box(target.box, 3, W, H)
        mask = R.embed_mask(target.mask, (target.box[0] - ev_box[0], target.box[1] - ev_box[1]),
                            (ev_box[3] - ev_box[1], ev_box[2] - ev_box[0]))
        evidence = R.region_evidence("field", clean_region, ev_box, mask, text=code,
                                     glyph_height=target.glyph_height, clean_is_region=True)
        low = float(rng.uniform(70, 200 - span))
        tint = rng.uniform(-6, 6, size=3)
        img = R.compress_dynamic_range(img, [low + t for t in tint], span)
        shade = float(rng.uniform(*self.shading)) * c_target
        img = cv2.add(img, cv2.cvtColor(shading_field(rng, H, W, shade), cv2.COLOR_GRAY2RGB))
        img = R.add_sensor_noise(img, rng, float(rng.uniform(*self.noise_sigma)),
                                   inplace=True)

        x0, y0, x1, y1 = ev_box
        before = R.ink_surround_contrast(img[y0:y1, x0:x1], mask)
        call = RefCall("c1", "autocontrast", {"image_index": 0, "cutoff": self.cutoff})
        question = (
            f"The photo shows a faded {doc}. What is the {target_label}? Answer with the value "
            "exactly as printed."
        )
        tools = list(CONTRAST_TOOLS)
        checkpoints = (
            Checkpoint("s_contrast", "S", "contrast_op", {"evidence": "field", "tools": tools},
                       "a contrast operation was applied to an image holding the field"),
            Checkpoint("v_tool", "V", "v_tool", {"evidence": "field", "tools": tools},
                       "a contrast tool was applied to a region containing the field"),
            Checkpoint("v_true", "V", "v_true", {"evidence": "field"},
                       "some image shows the field value with visible contrast"),
        )
        meta = {
            "scene": doc, "target_field": target_label, "dynamic_range": span,
            "ink_contrast": before, "cutoff": self.cutoff, "shading": shade,
            "page_box": list(doc_box),
        }
        return l1_task(self, domain, img, question, code, choices, call, evidence, checkpoints,
                       meta)
