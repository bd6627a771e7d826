"""The ``rotated_text`` family: a small turned or mirrored document, read after a zoomed crop."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.spec import Checkpoint, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.families._scene_common import check_range
from m3gym.tasks.families._text_common import (
    MIN_VIEW_HEIGHT,
    TRANSFORMS,
    apply_transform,
    bold_face,
    crop_for,
    l1_task,
    text_patch,
    transform_box,
    view_lookalike_codes,
)
from m3gym.tasks.registry import FamilyConfig, register_family

ROTATED_DOCS: dict[str, tuple[str, str, tuple[str, ...], tuple[int, int]]] = {
    # doc -> (domain, title, field labels, (width, height) of the upright document at
    # DOC_GLYPH px glyphs; the document is scaled with its glyphs)
    "receipt": ("Society", "RECEIPT", ("Receipt No", "Terminal", "Cashier ID", "Loyalty card",
                                       "Auth code", "Store ID", "Till", "Voucher"), (440, 700)),
    "form": ("Society", "APPLICATION FORM", ("Applicant ID", "Case number", "Reference",
                                            "Permit code", "Office code", "Batch", "File",
                                            "Desk"), (620, 760)),
    "sign": ("Diagram", "SITE PLAN", ("Zone code", "Asset tag", "Panel ID", "Circuit",
                                      "Valve ID", "Sensor", "Pump ID", "Meter"), (780, 500)),
}
DOC_GLYPH: float = 19.0
"""Glyph height (px) at which a document has the size :data:`ROTATED_DOCS` lists."""


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
    """Read a field of a small document lying turned by 90/180/270 degrees or mirrored.

    Scene:
        A receipt, form or site plan (``docs``) lying on a textured table with clutter, in one
        TrueType face (``faces``), fields ``glyph_min``-``glyph_max`` px tall (the document is
        scaled with its glyphs: a few hundred pixels in a 16:9 image of longest side ``longest``):
        ``code_fields`` fields hold codes (the target field's code and, on the other code
        fields, the other choices), one or two more hold faker dates, amounts or names. The
        photo goes through a camera chain (``camera``: lighting, shadow, blur off the document,
        noise, JPEG), then the whole image is turned or mirrored by one of ``transforms``.
    Question:
        "What is the Receipt No on the receipt in the image?" Six choices: codes that differ
        only in look-alike characters (drawn at view scale in the document's face,
        :func:`~m3gym.tasks.families._text_common.view_lookalike_codes`); the document's other
        code fields print the other choices.
    Why a tool is needed:
        At the agent's view (longest side 768, a 0.3 shrink of the 2560 px photo) the glyphs
        are 2.1-2.4 px tall, far below :attr:`Evidence.min_view_height`: the look-alike codes
        and the field labels blur into grey rows, so the view does not tell which option stands
        next to the named field. One zoomed ``crop`` of the document shows every row legibly.
        Measured (``m3gym audit-tools``, 6 held-out tasks, flat / photo): the strong reader
        (PP-OCRv4 + Tesseract, all 8 orientations) reads 0.14 / 0.15 from the view (chance
        0.167) and 1.00 from the crop; the crop's share of detail the view lacks is 0.72. At
        3.75-4.1 px in the view (2048 px photo, 10-11 px glyphs) the reader read 1.00 without
        a tool. The photo is 2560 px (above the usual 2048) because the view must shrink the
        glyphs to about 2 px while the photo keeps them at 7-8 px, the smallest the baseline
        agent's Tesseract reads from the crop (0.75 flat / 0.63 photo on 16 tasks; 0.5 with
        5.5-6.5 px glyphs in a 2048 px photo).
    What it trains:
        Finding a small document and reading text in an arbitrary orientation (sideways,
        upside down or mirrored) after zooming: the zoomed crop shows the field as the document
        lies, and ``v_true`` counts it legible in any orientation. A rotation or flip adds no
        information (it only permutes pixels), so the reference has none and no checkpoint pays
        for one; a policy that still turns the crop upright spends a call (the overthink
        penalty may charge it). That is what sets it apart from ``tiny_text`` (upright stickers
        among decoys).
    Reference trajectory:
        One ``crop`` of the document (grown by a margin; the target row alone when the document
        is too large for a legible crop) with the smallest zoom that shows the glyphs at 1.5x the
        legible height.
    Checkpoints:
        ``s_crop`` (a crop contains and magnifies the field), ``v_tool`` (crop applied to a
        region holding the field), ``v_true`` (some image shows the field legibly, in any
        orientation).
    Difficulty:
        ``difficulty_knobs``: at 0 glyphs 8-9 px, turns only (no mirrors), 3-4 code fields,
        camera 0.1-0.3, clutter 2-5; at 1 glyphs 6.5-7 px, every transform, 5-6 code fields,
        camera 0.4-0.7, clutter 8-14.
    Config:
        ``longest``, ``glyph_min``, ``glyph_max``, ``transforms``, ``docs``, ``code_fields``,
        ``clutter``, ``camera``, ``choices``, ``faces``.
    """

    name: ClassVar[str] = "rotated_text"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 1
    domains: ClassVar[tuple[str, ...]] = ("Society", "Diagram")
    description: ClassVar[str] = ("Zoom into a small turned or mirrored document and read it "
                                  "as it lies (crop).")

    longest: int = 2560
    glyph_min: float = 7.0
    glyph_max: float = 8.0
    transforms: tuple[str, ...] = TRANSFORMS
    docs: tuple[str, ...] = ("receipt", "form", "sign")
    code_fields: tuple[int, int] = (4, 6)
    clutter: tuple[int, int] = (4, 9)
    camera: tuple[float, float] = (0.2, 0.5)
    choices: int = 6
    faces: tuple[str, ...] = R.FONT_FACES

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Smaller glyphs, mirrors, more code fields, clutter and camera as ``d`` rises."""
        d = float(difficulty)
        return {
            "glyph_min": 8.0 - 1.5 * d, "glyph_max": 9.0 - 2.0 * d,
            "transforms": TRANSFORMS if d >= 0.5 else ("rot90", "rot180", "rot270"),
            "code_fields": (3 + round(2 * d), 4 + round(2 * d)),
            "camera": (0.1 + 0.3 * d, 0.3 + 0.4 * d),
            "clutter": (2 + round(6 * d), 5 + round(9 * d)),
        }

    def validate(self) -> None:
        """Check sizes, transforms, documents: illegible in the view, legible in a crop."""
        if not 1024 <= self.longest <= 2560:
            raise ValueError("longest must lie in 1024..2560 px")
        if not 5 <= self.glyph_min <= self.glyph_max <= 24:
            raise ValueError("need 5 <= glyph_min <= glyph_max <= 24")
        if self.glyph_max * R.VIEW_SIZE / self.longest > 0.6 * MIN_VIEW_HEIGHT:
            raise ValueError("glyph_max would be near legible in the view: no crop needed")
        if self.glyph_min * 5.0 < 1.5 * MIN_VIEW_HEIGHT:
            raise ValueError("glyph_min would not be legible even in a crop zoomed 5x")
        if not self.transforms or any(t not in TRANSFORMS for t in self.transforms):
            raise ValueError(f"transforms must be among {TRANSFORMS}")
        if not self.docs or any(d not in ROTATED_DOCS for d in self.docs):
            raise ValueError(f"docs must be among {sorted(ROTATED_DOCS)}")
        if not 1 <= self.code_fields[0] <= self.code_fields[1] <= min(6, self.choices):
            raise ValueError("code_fields must satisfy 1 <= lo <= hi <= min(6, choices)")
        if not 2 <= self.choices <= 12:
            raise ValueError("choices must lie in 2..12")
        check_range("clutter", *self.clutter, 0, 40)
        check_range("camera", *self.camera, 0.0, 1.0)
        if not self.faces or any(f not in R.FONT_FACES for f in self.faces):
            raise ValueError(f"faces must be among {R.FONT_FACES}")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one rotated-text task."""
        doc = R.pick(rng, self.docs)
        domain, title, labels, (dw0, dh0) = ROTATED_DOCS[doc]
        glyph = float(rng.uniform(self.glyph_min, self.glyph_max))
        k = glyph / DOC_GLYPH
        dw, dh = int(dw0 * k), int(dh0 * k)
        landscape = dw > dh
        W, H = (self.longest, self.longest * 9 // 16) if landscape else \
            (self.longest * 9 // 16, self.longest)
        img = R.surface(rng, H, W, R.pick(rng, ("wood", "fabric", "noise", "asphalt",
                                                  "gradient")))
        dx = int(rng.integers(40, max(41, W - dw - 40)))
        dy = int(rng.integers(40, max(41, H - dh - 40)))
        paper = R.jitter_color(rng, (240, 238, 228), 10)
        doc_box = (dx, dy, dx + dw, dy + dh)
        sh = max(2, round(6 * k))
        cv2.rectangle(img, (dx + sh, dy + sh), (dx + dw - 1 + sh, dy + dh - 1 + sh),
                      (30, 30, 30), -1)
        cv2.rectangle(img, (dx, dy), (dx + dw - 1, dy + dh - 1), paper, -1)
        R.add_clutter(img, rng, int(rng.integers(*self.clutter, endpoint=True)),
                      avoid=[R.grow_box(doc_box, 10, W, H)])

        ink = R.jitter_color(rng, (25, 25, 35), 15)
        face = R.pick_font(rng, self.faces)
        pad = max(8, round(16 * k))
        y = dy + pad
        head = text_patch(title, float(rng.uniform(26, 36)) * k, bold_face(face))
        R.paste_text(img, head, dx + (dw - head.size[0]) // 2, y, ink)
        y += head.size[1] + pad
        cv2.line(img, (dx + pad, y), (dx + dw - pad, y), ink, max(1, round(2 * k)))
        y += pad
        code, choices = view_lookalike_codes(rng, face, glyph, R.view_scale(H, W), self.choices)
        n_codes = int(rng.integers(self.code_fields[0], self.code_fields[1], endpoint=True))
        n_other = int(rng.integers(1, 3))
        chosen = [labels[int(i)] for i in rng.permutation(len(labels))[:n_codes + n_other]]
        code_labels, other_labels = chosen[:n_codes], chosen[n_codes:]
        target_label = code_labels[0]
        others = [c for c in choices if c != code]
        rows = [(target_label, code)] + [
            (lb, others[int(i)]) for lb, i in zip(code_labels[1:],
                                                  rng.permutation(len(others)))]
        rows += [(lb, _field_value(rng, lb)) for lb in other_labels]
        rows = [rows[int(i)] for i in rng.permutation(len(rows))]
        target: R.PlacedText | None = None
        row_box: R.Box | None = None
        for label, value in rows:
            lab = text_patch(f"{label}:", glyph, face)
            val = text_patch(value, glyph, bold_face(face) if doc == "sign" else face)
            line_h = max(lab.size[1], val.size[1])
            if y + line_h > dy + dh - pad:
                break
            R.paste_text(img, lab, dx + pad + 4, y + line_h - lab.size[1], ink)
            vx = max(dx + pad + 4 + lab.size[0] + pad, dx + dw // 2)
            vx = min(vx, dx + dw - pad - val.size[0])
            vy = y + line_h - val.size[1]
            placed = R.paste_text(img, val, vx, vy, ink)
            if label == target_label:
                target = placed
                row_box = (dx + pad, y, vx + val.size[0], y + line_h)
            y += int(line_h + glyph * 1.1)
            cv2.line(img, (dx + pad, y - int(glyph * 0.5)), (dx + dw - pad, y - int(glyph * 0.5)),
                     R.jitter_color(rng, (190, 190, 190), 20), 1)
        if target is None or row_box is None:  # pragma: no cover - docs fit >= 7 rows
            raise RuntimeError("target field did not fit on the document")

        ev_up = R.grow_box(target.box, 2, W, H)
        clean_up = img[ev_up[1]:ev_up[3], ev_up[0]:ev_up[2]].copy()
        mask_up = R.embed_mask(target.mask, (target.box[0] - ev_up[0], target.box[1] - ev_up[1]),
                               (ev_up[3] - ev_up[1], ev_up[2] - ev_up[0]))
        transform = R.pick(rng, self.transforms)
        img = R.camera_pipeline(img, rng, float(rng.uniform(*self.camera)), keep=[doc_box])
        img = apply_transform(img, transform)
        H0, W0 = img.shape[:2]
        box0 = transform_box(ev_up, transform, W, H)
        # clean/mask show the region as it appears in image 0 (rotated/mirrored with it); the
        # evidence is read as it lies, so its orientation is left at upright (v_true accepts a
        # crop that shows it turned)
        clean0 = apply_transform(np.ascontiguousarray(clean_up), transform)
        mask0 = apply_transform(mask_up.astype(np.uint8), transform).astype(bool)
        evidence = R.region_evidence("field", clean0, box0, mask0, text=code,
                                     glyph_height=target.glyph_height, clean_is_region=True)
        crop_box = transform_box(doc_box, transform, W, H)
        grown = R.grow_box(crop_box, pad, W0, H0)
        cx0, cy0, cx1, cy1 = R.bbox1000_to_box(R.box_to_bbox1000(grown, W0, H0), W0, H0)
        if R.crop_zoom_for((cx1 - cx0, cy1 - cy0), target.glyph_height, MIN_VIEW_HEIGHT) is None:
            crop_box = transform_box(row_box, transform, W, H)
        bbox, zoom = crop_for(crop_box, pad, W0, H0, target.glyph_height)
        call = RefCall("c1", "crop", {"image_index": 0, "bbox_2d": bbox, "zoom_scale": zoom})
        question = (
            f"What is the {target_label} on the {doc} in the image? Answer with the value "
            "exactly as printed."
        )
        checkpoints = (
            Checkpoint("s_crop", "S", "crop_covers", {"evidence": "field"},
                       "a crop contains and magnifies the whole field"),
            Checkpoint("v_tool", "V", "v_tool", {"evidence": "field", "tools": ["crop"]},
                       "crop was applied to a region holding the whole field"),
            Checkpoint("v_true", "V", "v_true", {"evidence": "field"},
                       "some image shows the field value legibly (in any orientation)"),
        )
        meta = {
            "scene": doc, "transform": transform, "target_field": target_label,
            "upright_box": list(ev_up), "upright_size": [W, H], "crop_box": list(crop_box),
            "glyph_height_view": target.glyph_height * R.view_scale(H0, W0),
        }
        return l1_task(self, domain, img, question, code, choices, call, evidence, checkpoints,
                       meta)
