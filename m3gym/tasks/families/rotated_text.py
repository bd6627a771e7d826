"""The ``rotated_text`` family: a document photographed rotated or mirrored (one rotate/flip)."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.spec import Checkpoint, Task
from m3gym.tasks import render as R
from m3gym.tasks.families._scene_common import check_range
from m3gym.tasks.families._text_common import (
    EVIDENCE_ORIENTATION,
    MIN_VIEW_HEIGHT,
    TRANSFORMS,
    apply_transform,
    bold_face,
    l1_task,
    text_patch,
    transform_box,
    upright_call,
    view_lookalike_codes,
)
from m3gym.tasks.registry import FamilyConfig, register_family

ROTATED_DOCS: dict[str, tuple[str, str, tuple[str, ...], tuple[int, int]]] = {
    # doc -> (domain, title, field labels, (width, height) of the upright document)
    "receipt": ("Society", "RECEIPT", ("Receipt No", "Terminal", "Cashier ID", "Loyalty card",
                                       "Auth code", "Store ID"), (440, 700)),
    "form": ("Society", "APPLICATION FORM", ("Applicant ID", "Case number", "Reference",
                                            "Permit code", "Office code", "Batch"), (620, 760)),
    "sign": ("Diagram", "SITE PLAN", ("Zone code", "Asset tag", "Panel ID", "Circuit",
                                      "Valve ID", "Sensor"), (780, 500)),
}


def _field_value(rng: np.random.Generator, label: str) -> str:
    """Return a plausible non-code value for a document field (a date, an amount or a name)."""
    kind = int(rng.integers(3))
    if kind == 0:
        return R.fake_date(rng, "%d.%m.%Y")
    if kind == 1:
        return f"{int(rng.integers(2, 900))}.{int(rng.integers(0, 100)):02d}"
    return R.fake_person(rng, R.pick(rng, R.FAKER_LOCALES), ascii_only=True)


@register_family
@dataclass
class RotatedTextFamily(FamilyConfig):
    """Read a field of a document photographed rotated by 90/180/270 degrees or mirrored.

    Scene:
        A receipt, form or site plan (``docs``) on a textured table with clutter, in one
        TrueType face (``faces``), fields ``glyph_min``-``glyph_max`` px tall in an image of
        longest side ``longest``: ``code_fields`` fields hold codes, two more hold faker dates,
        amounts or names. The photo goes through a camera chain (``camera``: lighting, shadow,
        blur off the document, noise, JPEG), then the whole image is turned or mirrored by one
        of ``transforms``.
    Question:
        "What is the Receipt No on the receipt in the image?" Six choices: codes that differ
        only in look-alike characters (drawn at view scale in the document's face,
        :func:`~m3gym.tasks.families._text_common.view_lookalike_codes`).
    Why a tool is needed:
        Sideways, upside-down or mirrored text is not reliably read, and ``v_true`` requires
        upright evidence; one ``rotate`` (counter-clockwise positive, ``expand``) or ``flip``
        makes it upright, and the glyphs are legible by size once upright. Known limit (issue
        10's view-only probe): a rotation by a multiple of 90 degrees and a flip only permute
        pixels, so the reset view holds every pixel the upright view shows; a matcher that
        knows the orientation (the probe does) reads the code before the tool. Choice design
        cannot close that without making the upright view illegible too; the leak test keeps
        this family as a known exception, and ``audit-leaks`` labels the miss structural
        because it measures it (:func:`~m3gym.audit.leaks.reference_unexplained_share`: 0).
    Reference trajectory:
        One ``rotate`` by the inverse angle (``expand`` true) or one ``flip`` in the mirrored
        direction.
    Checkpoints:
        ``s_upright`` (a rotate/flip made the document upright), ``v_tool`` (applied to an image
        holding the field), ``v_true`` (some image shows the value upright and legibly).
    Difficulty:
        ``difficulty_knobs``: at 0 glyphs 20-26 px, turns only (no mirrors), 2-3 code fields,
        camera 0.1-0.3, clutter 2-5; at 1 glyphs 15-18 px, every transform, 4-5 code fields,
        camera 0.5-0.9, clutter 8-14.
    Config:
        ``longest``, ``glyph_min``, ``glyph_max``, ``transforms``, ``docs``, ``code_fields``,
        ``clutter``, ``camera``, ``choices``, ``faces``.
    """

    name: ClassVar[str] = "rotated_text"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 1
    domains: ClassVar[tuple[str, ...]] = ("Society", "Diagram")
    description: ClassVar[str] = "Make a rotated or mirrored document upright (rotate / flip)."

    longest: int = 1024
    glyph_min: float = 16.0
    glyph_max: float = 22.0
    transforms: tuple[str, ...] = TRANSFORMS
    docs: tuple[str, ...] = ("receipt", "form", "sign")
    code_fields: tuple[int, int] = (3, 4)
    clutter: tuple[int, int] = (4, 9)
    camera: tuple[float, float] = (0.2, 0.6)
    choices: int = 6
    faces: tuple[str, ...] = R.FONT_FACES

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Smaller glyphs, mirrors, more code fields, clutter and camera as ``d`` rises."""
        d = float(difficulty)
        return {
            "glyph_min": 20.0 - 5.0 * d, "glyph_max": 26.0 - 8.0 * d,
            "transforms": TRANSFORMS if d >= 0.5 else ("rot90", "rot180", "rot270"),
            "code_fields": (2 + round(2 * d), 3 + round(2 * d)),
            "camera": (0.1 + 0.4 * d, 0.3 + 0.6 * d),
            "clutter": (2 + round(6 * d), 5 + round(9 * d)),
        }

    def validate(self) -> None:
        """Check sizes, transforms, documents, and that upright glyphs are legible at view size."""
        if not 800 <= self.longest <= 2048:
            raise ValueError("longest must lie in 800..2048 px")
        if not 8 <= self.glyph_min <= self.glyph_max <= 40:
            raise ValueError("need 8 <= glyph_min <= glyph_max <= 40")
        if self.glyph_min * min(1.0, R.VIEW_SIZE / self.longest) < 1.2 * MIN_VIEW_HEIGHT:
            raise ValueError("glyph_min would not be legible at view size once upright")
        if not self.transforms or any(t not in TRANSFORMS for t in self.transforms):
            raise ValueError(f"transforms must be among {TRANSFORMS}")
        if not self.docs or any(d not in ROTATED_DOCS for d in self.docs):
            raise ValueError(f"docs must be among {sorted(ROTATED_DOCS)}")
        if not 1 <= self.code_fields[0] <= self.code_fields[1] <= 5:
            raise ValueError("code_fields must satisfy 1 <= lo <= hi <= 5")
        if not 2 <= self.choices <= 12:
            raise ValueError("choices must lie in 2..12")
        check_range("clutter", *self.clutter, 0, 40)
        check_range("camera", *self.camera, 0.0, 1.0)
        if not self.faces or any(f not in R.FONT_FACES for f in self.faces):
            raise ValueError(f"faces must be among {R.FONT_FACES}")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one rotated-text task."""
        doc = R.pick(rng, self.docs)
        domain, title, labels, (dw, dh) = ROTATED_DOCS[doc]
        landscape = dw > dh
        W, H = (self.longest, self.longest * 3 // 4) if landscape else \
            (self.longest * 3 // 4, self.longest)
        img = R.surface(rng, H, W, R.pick(rng, ("wood", "fabric", "noise", "asphalt",
                                                  "gradient")))
        dx = int(rng.integers(16, max(17, W - dw - 16)))
        dy = int(rng.integers(16, max(17, H - dh - 16)))
        paper = R.jitter_color(rng, (240, 238, 228), 10)
        doc_box = (dx, dy, dx + dw, dy + dh)
        cv2.rectangle(img, (dx + 6, dy + 6), (dx + dw + 5, dy + dh + 5), (30, 30, 30), -1)
        cv2.rectangle(img, (dx, dy), (dx + dw - 1, dy + dh - 1), paper, -1)
        R.add_clutter(img, rng, int(rng.integers(*self.clutter, endpoint=True)),
                      avoid=[R.grow_box(doc_box, 10, W, H)])

        ink = R.jitter_color(rng, (25, 25, 35), 15)
        face = R.pick_font(rng, self.faces)
        y = dy + 20
        head = text_patch(title, float(rng.uniform(26, 36)), bold_face(face))
        R.paste_text(img, head, dx + (dw - head.size[0]) // 2, y, ink)
        y += head.size[1] + 18
        cv2.line(img, (dx + 16, y), (dx + dw - 16, y), ink, 2)
        y += 18
        glyph = float(rng.uniform(self.glyph_min, self.glyph_max))
        code, choices = view_lookalike_codes(rng, face, glyph, R.view_scale(H, W), self.choices)
        n_codes = int(rng.integers(self.code_fields[0], self.code_fields[1], endpoint=True))
        chosen = [labels[int(i)] for i in rng.permutation(len(labels))[:n_codes + 2]]
        code_labels, other_labels = chosen[:n_codes], chosen[n_codes:]
        target_label = code_labels[0]
        rows = [(target_label, code)]
        while len(rows) < n_codes:
            other = R.random_code(rng)
            if other not in choices and other not in dict(rows).values():
                rows.append((code_labels[len(rows)], other))
        rows += [(lb, _field_value(rng, lb)) for lb in other_labels]
        rows = [rows[int(i)] for i in rng.permutation(len(rows))]
        target: R.PlacedText | None = None
        region_before: np.ndarray | None = None
        for label, value in rows:
            lab = text_patch(f"{label}:", glyph, face)
            val = text_patch(value, glyph, bold_face(face) if doc == "sign" else face)
            line_h = max(lab.size[1], val.size[1])
            if y + line_h > dy + dh - 16:
                break
            R.paste_text(img, lab, dx + 20, y + line_h - lab.size[1], ink)
            vx = max(dx + 20 + lab.size[0] + 16, dx + dw // 2)
            vx = min(vx, dx + dw - 16 - val.size[0])
            vy = y + line_h - val.size[1]
            if label == target_label:
                region_before = img[vy:vy + val.size[1], vx:vx + val.size[0]].copy()
                target = R.paste_text(img, val, vx, vy, ink)
            else:
                R.paste_text(img, val, vx, vy, ink)
            y += int(line_h + glyph * 1.1)
            cv2.line(img, (dx + 16, y - int(glyph * 0.5)), (dx + dw - 16, y - int(glyph * 0.5)),
                     R.jitter_color(rng, (190, 190, 190), 20), 1)
        if target is None or region_before is None:  # pragma: no cover - docs fit >= 4 rows
            raise RuntimeError("target field did not fit on the document")

        ev_up = R.grow_box(target.box, 2, W, H)
        clean_up = img[ev_up[1]:ev_up[3], ev_up[0]:ev_up[2]].copy()
        mask_up = R.embed_mask(target.mask, (target.box[0] - ev_up[0], target.box[1] - ev_up[1]),
                               (ev_up[3] - ev_up[1], ev_up[2] - ev_up[0]))
        transform = R.pick(rng, self.transforms)
        img = R.camera_pipeline(img, rng, float(rng.uniform(*self.camera)), keep=[doc_box])
        img = apply_transform(img, transform)
        box0 = transform_box(ev_up, transform, W, H)
        # clean/mask show the region as it appears in image 0 (rotated/mirrored with it)
        clean0 = apply_transform(np.ascontiguousarray(clean_up), transform)
        mask0 = apply_transform(mask_up.astype(np.uint8), transform).astype(bool)
        angle, mirrored = EVIDENCE_ORIENTATION[transform]
        evidence = replace(
            R.region_evidence("field", clean0, box0, mask0, text=code,
                              glyph_height=target.glyph_height, clean_is_region=True),
            angle=angle, mirrored=mirrored)
        question = (
            f"What is the {target_label} on the {doc} in the image? Answer with the value "
            "exactly as printed."
        )
        checkpoints = (
            Checkpoint("s_upright", "S", "rotate_upright", {"evidence": "field"},
                       "a rotate/flip made the document upright"),
            Checkpoint("v_tool", "V", "v_tool", {"evidence": "field", "tools": ["rotate", "flip"]},
                       "a rotate/flip was applied to an image holding the whole field"),
            Checkpoint("v_true", "V", "v_true", {"evidence": "field"},
                       "some image shows the field value upright and legibly"),
        )
        meta = {
            "scene": doc, "transform": transform, "target_field": target_label,
            "upright_box": list(ev_up), "upright_size": [W, H],
        }
        return l1_task(self, domain, img, question, code, choices, upright_call(transform),
                       evidence, checkpoints, meta)

