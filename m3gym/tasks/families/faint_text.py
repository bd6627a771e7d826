"""The ``faint_text`` family: print a view rounds away on an overexposed page (one autocontrast)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.spec import Checkpoint, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.families._scene_common import check_range
from m3gym.tasks.families._text_common import (
    HIDDEN_INK_DEPTH,
    MIN_CONTRAST,
    MIN_VIEW_HEIGHT,
    SURFACE_GAIN,
    bold_face,
    hidden_ink,
    hidden_ink_offsets,
    l1_task,
    text_patch,
    view_lookalike_codes,
)
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tools.catalogue import CONTRAST_TOOLS
from m3gym.view import block_factor, view_shape

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
    """Read a code printed below what the view resolves, on an overexposed photo of a document.

    Scene:
        A lab sheet, specimen record, catalogue card or museum label (``docs``) on a textured
        table with clutter, in one TrueType face (``faces``; values in its bold variant) in a
        ``width`` x ``height`` photo (at least twice the view's size). The photo is
        overexposed: everything spans only ``levels`` = L gray levels (the paper the lightest),
        with no noise and no shading. The title and field labels lie 1-L levels below the
        paper. The values (``glyph_min``-``glyph_max`` px tall) are printed as fine dots
        (:func:`~m3gym.tasks.families._text_common.hidden_ink`): in each block of the view's
        ``k x k`` block grid (``k = 2`` at the default size) one pixel lies
        :data:`~m3gym.tasks.families._text_common.HIDDEN_INK_DEPTH` levels below the paper.
    Question:
        "The photo shows a badly overexposed, faded lab sheet. What is the Batch? Answer with the
        value exactly as printed." Six choices: codes that differ only in look-alike characters
        drawn at view scale in the value's face
        (:func:`~m3gym.tasks.families._text_common.view_lookalike_codes`); the other fields hold
        other codes.
    Why a tool is needed:
        The view (longest side 768) averages ``k x k`` blocks: a block holding one dot 2 levels
        deep averages half a level below the paper and rounds back to it, so the values are
        *not in the view at all* (every pixel of the value's region equals the paper; no reader
        and no contrast-invariant matcher can find them). A contrast stretch of the
        full-resolution photo (``autocontrast``, cutoff ``cutoff`` %, over the L-level range)
        turns each dot into a step of at least ``2 x 255 / L`` levels *before* the view
        shrinks it, so the stretched photo's view shows the values as solid print of at least
        ``127 / L`` levels (``validate`` requires 1.3x the visibility threshold). ``equalize``
        or a ``threshold`` just under the paper level work too; a contrast op applied to the
        reset view cannot (the view holds nothing to stretch). This trains calling a point op
        on the full-resolution image when the view looks blank.
    Reference trajectory:
        One ``autocontrast`` of the whole photo (cutoff ``cutoff`` %).
    Checkpoints:
        ``s_contrast`` (a contrast op on an image holding the field), ``v_tool`` (a contrast
        tool on a region holding the field), ``v_true`` (some image shows the value with
        visible contrast at view size: the stretched photo does, the reset view does not).
    Difficulty:
        ``difficulty_knobs``: at 0 glyphs 48-64 px, 2 levels, clutter 2-5; at 1 glyphs
        36-48 px, 2-3 levels (a weaker stretch), clutter 5-9.
    Config:
        ``width``, ``height``, ``glyph_min``, ``glyph_max``, ``levels``, ``cutoff``,
        ``clutter``, ``docs``, ``choices``, ``faces``.
    """

    name: ClassVar[str] = "faint_text"
    level: ClassVar[int] = 1
    domains: ClassVar[tuple[str, ...]] = ("Science", "Culture")
    description: ClassVar[str] = "Restore print the view rounds away (autocontrast at full size)."
    flat_scene_reason: ClassVar[str] = (
        "the values are dots 2 gray levels deep on noise-free, flat paper in a photo spanning "
        "2-3 levels; a photograph backdrop (its own texture range) and the camera finish "
        "(sensor noise, JPEG) would widen the range the stretch divides by and wash the dots out")

    width: int = 2048
    height: int = 1536
    glyph_min: float = 40.0
    glyph_max: float = 56.0
    levels: tuple[int, int] = (2, 3)
    cutoff: float = 1.0
    clutter: tuple[int, int] = (3, 7)
    docs: tuple[str, ...] = tuple(FAINT_DOCS)
    choices: int = 6
    faces: tuple[str, ...] = R.FONT_FACES

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Smaller glyphs, a wider range (weaker stretch) and more clutter as ``d`` rises."""
        d = float(difficulty)
        return {
            "glyph_min": 48.0 - 12.0 * d, "glyph_max": 64.0 - 16.0 * d,
            "levels": (2, 2 + round(d)),
            "clutter": (2 + round(3 * d), 5 + round(4 * d)),
        }

    def block(self) -> int:
        """Return the view's block factor ``k`` for this image size."""
        return block_factor(self.height, self.width,
                            *view_shape(self.height, self.width, R.VIEW_SIZE))

    def stretched_contrast(self) -> float:
        """Return the least view contrast of the values after the stretch (widest range)."""
        k = self.block()
        dots = len(hidden_ink_offsets(k))
        return dots * HIDDEN_INK_DEPTH * 255.0 / (self.levels[1] * k * k)

    def validate(self) -> None:
        """Check sizes, that the view rounds the values away and the stretch restores them."""
        if min(self.width, self.height) < 400 or max(self.width, self.height) > 2048:
            raise ValueError("image sides must lie in 400..2048 px")
        if self.block() < 2:
            raise ValueError("the image must be at least twice the view's size (block factor 2)")
        if not 8 <= self.glyph_min <= self.glyph_max <= 96:
            raise ValueError("need 8 <= glyph_min <= glyph_max <= 96")
        check_range("clutter", *self.clutter, 0, 30)
        if not self.faces or any(f not in R.FONT_FACES for f in self.faces):
            raise ValueError(f"faces must be among {R.FONT_FACES}")
        if self.glyph_min * R.view_scale(self.height, self.width) < 1.2 * MIN_VIEW_HEIGHT:
            raise ValueError("glyph_min must be legible by size at view resolution")
        if not 2 <= self.levels[0] <= self.levels[1] <= 8:
            raise ValueError("levels must lie in 2..8")
        if self.stretched_contrast() < 1.3 * MIN_CONTRAST:
            raise ValueError("autocontrast could not restore the values with this margin "
                             "(levels too wide)")
        if not 0 <= self.cutoff < 10:
            raise ValueError("cutoff must lie in 0..10 %")
        if not self.docs or any(d not in FAINT_DOCS for d in self.docs):
            raise ValueError(f"docs must be among {sorted(FAINT_DOCS)}")
        if not 2 <= self.choices <= 12:
            raise ValueError("choices must lie in 2..12")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one faint-text task."""
        W, H = self.width, self.height
        k = self.block()
        doc = R.pick(rng, self.docs)
        domain, title, labels = FAINT_DOCS[doc]
        img = R.surface(rng, H, W, R.pick(rng, ("wood", "fabric", "gradient", "noise")))
        # a darker table: below the paper's level once compressed, so the paper alone is the top
        img = cv2.convertScaleAbs(img, alpha=SURFACE_GAIN)
        dw, dh = int(W * rng.uniform(0.55, 0.75)), int(H * rng.uniform(0.7, 0.9))
        dx, dy = int(rng.integers(24, W - dw - 24)), int(rng.integers(24, H - dh - 24))
        # light paper: it lands on the top level of the compressed range in every channel
        paper = R.jitter_color(rng, (246, 244, 238), 6)
        cv2.rectangle(img, (dx, dy), (dx + dw - 1, dy + dh - 1), paper, -1)
        doc_box = (dx, dy, dx + dw, dy + dh)
        R.add_clutter(img, rng, int(rng.integers(*self.clutter, endpoint=True)),
                      avoid=[R.grow_box(doc_box, 16, W, H)])

        span = int(rng.integers(self.levels[0], self.levels[1], endpoint=True))
        strong = R.faded_color(paper, 200.0)
        face = R.pick_font(rng, self.faces)
        y = dy + 36
        head = text_patch(title, float(rng.uniform(48, 64)), bold_face(face))
        if head.size[0] < dw - 48:
            R.paste_text(img, head, dx + 28, y, R.faded_color(paper, rng.uniform(120, 200)))
        y += head.size[1] + 48
        chosen = [labels[int(i)] for i in rng.permutation(len(labels))]
        target_label = chosen[0]
        glyph = float(rng.uniform(self.glyph_min, self.glyph_max))
        # look-alikes at view scale, measured on a half-size render (the same view, 4x cheaper)
        code, choices = view_lookalike_codes(rng, bold_face(face), round(glyph / 2),
                                             2.0 * R.view_scale(H, W), self.choices)
        rows = [(target_label, code)]
        while len(rows) < len(chosen):
            other = R.random_code(rng)
            if other not in choices and other not in dict(rows).values():
                rows.append((chosen[len(rows)], other))
        rows = [rows[int(i)] for i in rng.permutation(len(rows))]
        values: list[tuple[R.TextPatch, int, int]] = []
        ev_box: R.Box | None = None
        target: R.TextPatch | None = None
        clean_region: np.ndarray | None = None
        for label, value in rows:
            lab = text_patch(f"{label}:", glyph, face)
            val = text_patch(value, glyph, bold_face(face))
            line_h = max(lab.size[1], val.size[1])
            if y + line_h > dy + dh - 24:
                break
            R.paste_text(img, lab, dx + 32, y + line_h - lab.size[1],
                         R.faded_color(paper, float(rng.uniform(60, 160))))
            vx = min(dx + 32 + lab.size[0] + 28, dx + dw - 24 - val.size[0])
            vy = y + line_h - val.size[1]
            values.append((val, vx, vy))
            if label == target_label:
                ev_box = R.grow_box((vx, vy, vx + val.size[0], vy + val.size[1]), 4, W, H)
                clean_region = img[ev_box[1]:ev_box[3], ev_box[0]:ev_box[2]].copy()
                R.paste_text(clean_region, val, vx - ev_box[0], vy - ev_box[1], strong)
                target = val
            y += int(line_h + glyph * 1.0)
        if target is None or clean_region is None or ev_box is None:  # pragma: no cover
            raise RuntimeError("target field did not fit on the page")

        low = float(rng.uniform(70, 200))
        tint = rng.uniform(-6, 6, size=3)
        img = R.compress_dynamic_range(img, [low + t for t in tint], float(span))
        for val, vx, vy in values:
            hidden_ink(img, val.mask, vx, vy, k)

        vx, vy = ev_box[0], ev_box[1]
        tx = next(x for v, x, _ in values if v is target)
        ty = next(yy for v, _, yy in values if v is target)
        mask = R.embed_mask(target.mask, (tx - vx, ty - vy),
                            (ev_box[3] - ev_box[1], ev_box[2] - ev_box[0]))
        evidence = R.region_evidence("field", clean_region, ev_box, mask, text=code,
                                     glyph_height=target.glyph_height, clean_is_region=True)
        call = RefCall("c1", "autocontrast", {"image_index": 0, "cutoff": self.cutoff})
        question = (
            f"The photo shows a badly overexposed, faded {doc}. What is the {target_label}? "
            "Answer with the value exactly as printed."
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
            "ink_depth": HIDDEN_INK_DEPTH, "block_factor": k, "cutoff": self.cutoff,
            "page_box": list(doc_box),
        }
        return l1_task(self, domain, img, question, code, choices, call, evidence, checkpoints,
                       meta)
