"""Classic-RL suite: level-1 glyph tasks at low resolution with one fixed set of answers.

The three families mirror the three ``M3Bench-L1`` operations (``crop``, ``rotate``/``flip``,
``autocontrast``) on small images (``side`` = 288 px, seen through a 96-px view), and every task
asks for one digit of :data:`GLYPHS` with the choices always listed in the same order. A choice
index therefore means the same digit in every episode, so a pixel policy can learn a classifier,
and every tool call costs microseconds: this is the suite for stable-baselines3-style training
(``M3Bench-Classic``, ``M3Bench-Classic-Discrete``). Checkpoints, rewards and the M3 score work
exactly as in the benchmark levels, scored at the families' :attr:`view_size` of 96 px.

* ``glyph_zoom`` — a digit on a small red-framed tag in a cluttered scene, 3–4 px tall in the
  view: one ``crop`` around the tag (a 3x3 grid cell or a quadrant) makes it legible.
* ``glyph_rotate`` — a card with a large digit photographed rotated by 90/180/270 degrees or
  mirrored: one ``rotate`` or ``flip`` makes it upright.
* ``glyph_faint`` — a digit printed a few gray levels from its paper in a washed-out photo: one
  ``autocontrast`` restores it.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.tasks import render as R
from m3gym.tasks.families.l1_text import (
    EVIDENCE_ORIENTATION,
    TRANSFORMS,
    apply_transform,
    shading_field,
    transform_box,
    upright_call,
)
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.spec import AnswerSpec, Checkpoint, Evidence, RefCall, Task
from m3gym.tools.catalogue import CONTRAST_TOOLS

GLYPHS: tuple[str, ...] = tuple("01234567")
"""The answer set of every classic task, in the fixed order of the choices (no 9: it is a 6 turned
upside down)."""

CLASSIC_VIEW: int = 96
"""View size (longest side) the classic families are designed and scored for."""

CLASSIC_MIN_VIEW_HEIGHT: float = 6.0
"""A digit from a closed set of eight is legible at 6 px (text codes need 9)."""

TAG_FRAME: R.Color = (220, 30, 30)
"""Frame colour of the target tag in ``glyph_zoom`` (decoy tags have none)."""

BACKGROUNDS: tuple[str, ...] = ("wood", "fabric", "noise", "gradient", "asphalt", "brick")
"""Background textures the classic scenes draw from."""


def glyph_patch(rng: np.random.Generator, digit: str, height: float) -> R.TextPatch:
    """Return ``digit`` rendered ``height`` px tall in a random readable face, stroke 1 or 2."""
    thickness = 2 if height >= 20 else 1
    return R.render_text(digit, height, R.pick(rng, R.READABLE_FACES), thickness)


def check_common(side: int, glyphs: tuple[str, ...]) -> None:
    """Raise ``ValueError`` for an image side or answer set the classic families cannot use."""
    if not 192 <= side <= 768:
        raise ValueError("side must lie in 192..768 px")
    if len(glyphs) < 2 or len(set(glyphs)) != len(glyphs) or any(
            len(g) != 1 or not g.isdigit() for g in glyphs):
        raise ValueError("glyphs must be >= 2 distinct single digits")


def classic_task(
    family: FamilyConfig, domain: str, image: np.ndarray, question: str, digit: str,
    glyphs: tuple[str, ...], call: RefCall, evidence: Evidence,
    checkpoints: tuple[Checkpoint, ...], metadata: dict[str, Any],
) -> Task:
    """Assemble a classic task: fixed choices (``glyphs`` in order), exact digit answer."""
    image = R.freeze(image)
    h, w = image.shape[:2]
    meta = {
        "level": 1, "family": family.name, "domain": domain, "suite": "classic",
        "evidence_area_fraction": evidence.area / float(h * w), "view_size": CLASSIC_VIEW,
        "image_size": [w, h], **metadata,
    }
    return Task(
        task_id=f"{family.name}/0", family=family.name, level=1, domain=domain, images=(image,),
        question=question, answer=AnswerSpec(value=digit), reference=((call,),),
        evidence=(replace(evidence, min_view_height=CLASSIC_MIN_VIEW_HEIGHT),),
        checkpoints=checkpoints, choices=tuple(glyphs), capabilities=("visual_grounding",),
        metadata=meta,
    )


def glyph_evidence(img: np.ndarray, placed: R.PlacedText, margin: int) -> Evidence:
    """Return the evidence of a pasted digit: its box grown by ``margin`` and its ink mask."""
    h, w = img.shape[:2]
    box = R.grow_box(placed.box, margin, w, h)
    mask = R.embed_mask(placed.mask, (placed.box[0] - box[0], placed.box[1] - box[1]),
                        (box[3] - box[1], box[2] - box[0]))
    return R.region_evidence("digit", img, box, mask, text=placed.text,
                             glyph_height=placed.glyph_height)


# --------------------------------------------------------------------------------------------
# glyph_zoom


def grid_cell(cell: int, side: int) -> R.Box:
    """Return the pixel box of 3x3 grid cell ``cell`` (row by row) of a ``side`` square."""
    r, c = divmod(cell, 3)
    edges = [round(side * k / 3) for k in range(4)]
    return (edges[c], edges[r], edges[c + 1], edges[r + 1])


def draw_tag(img: np.ndarray, patch: R.TextPatch, xy: tuple[int, int], plate: R.Color,
             frame: R.Color | None) -> tuple[R.Box, R.PlacedText]:
    """Draw a tag (plate, optional 2-px frame, the digit) at ``xy``; return its box and text."""
    pw, ph = patch.size
    pad = 3
    x, y = xy
    w, h = pw + 2 * pad + 2, ph + 2 * pad + 2
    cv2.rectangle(img, (x, y), (x + w - 1, y + h - 1), plate, -1)
    if frame is not None:
        cv2.rectangle(img, (x, y), (x + w - 1, y + h - 1), frame, 2)
    placed = R.paste_text(img, patch, x + pad + 1, y + pad + 1, R.ink_for(plate))
    return (x, y, x + w, y + h), placed


def tag_size(patch: R.TextPatch) -> tuple[int, int]:
    """Return the ``(w, h)`` of the tag :func:`draw_tag` draws around ``patch``."""
    pw, ph = patch.size
    return pw + 8, ph + 8


@register_family
@dataclass
class GlyphZoomFamily(FamilyConfig):
    """Read the digit on the red-framed tag in a small cluttered scene (classic suite).

    WHY a tool: the digit is ``glyph_min``–``glyph_max`` px tall in a ``side`` px square, a third
    of that in the 96-px view, below the 6-px legibility threshold; a ``crop`` of the tag's
    3x3 grid cell (or a quadrant holding it) shows it at 1x or 0.67x, legible. Decoy tags
    without the red frame carry other digits.
    """

    name: ClassVar[str] = "glyph_zoom"
    level: ClassVar[int] = 1
    suite: ClassVar[str] = "classic"
    view_size: ClassVar[int] = CLASSIC_VIEW
    domains: ClassVar[tuple[str, ...]] = ("Life",)
    description: ClassVar[str] = "Zoom into a tiny digit tag (crop), classic-RL suite."

    side: int = 288
    glyph_min: float = 10.0
    glyph_max: float = 13.0
    decoys: tuple[int, int] = (1, 2)
    clutter: tuple[int, int] = (4, 8)
    noise_sigma: tuple[float, float] = (1.0, 2.5)
    glyphs: tuple[str, ...] = GLYPHS

    def validate(self) -> None:
        """Check sizes: illegible in the full view, legible in a quadrant crop."""
        check_common(self.side, self.glyphs)
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
        img = R.background(rng, side, side, R.pick(rng, BACKGROUNDS))
        n_decoys = int(rng.integers(self.decoys[0], self.decoys[1], endpoint=True))
        cells = [int(c) for c in rng.permutation(9)[: n_decoys + 1]]
        digits = [self.glyphs[int(i)] for i in rng.permutation(len(self.glyphs))[: n_decoys + 1]]
        tags: list[R.Box] = []
        target: tuple[R.Box, R.PlacedText] | None = None
        for k, (cell, digit) in enumerate(zip(cells, digits)):
            patch = glyph_patch(rng, digit, float(rng.uniform(self.glyph_min, self.glyph_max)))
            tw, th = tag_size(patch)
            x0, y0, x1, y1 = grid_cell(cell, side)
            x = int(rng.integers(x0 + 4, x1 - tw - 4, endpoint=True))
            y = int(rng.integers(y0 + 4, y1 - th - 4, endpoint=True))
            if k == 0:
                plate = R.jitter_color(rng, (245, 245, 240), 8)
                box, placed = draw_tag(img, patch, (x, y), plate, TAG_FRAME)
                target = (box, placed)
            else:
                plate = R.rand_color(rng, 60, 230)
                box, _ = draw_tag(img, patch, (x, y), plate, None)
            tags.append(box)
        assert target is not None
        tag_box, placed = target
        R.add_clutter(img, rng, int(rng.integers(*self.clutter, endpoint=True)),
                      avoid=[R.grow_box(b, 4, side, side) for b in tags],
                      size_range=(0.08, 0.22))
        evidence = glyph_evidence(img, placed, 2)
        img = R.add_sensor_noise(img, rng, float(rng.uniform(*self.noise_sigma)), inplace=True)
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


# --------------------------------------------------------------------------------------------
# glyph_rotate


@register_family
@dataclass
class GlyphRotateFamily(FamilyConfig):
    """Read the digit on a card photographed rotated or mirrored (classic suite).

    WHY a tool: the evidence counts as read only upright (``v_true`` requires the upright
    orientation); one ``rotate`` or ``flip`` makes the card upright. The digit
    (``glyph_min``–``glyph_max`` px, a third of that in the view) is legible by size, and a bar
    under it marks the card's bottom so every orientation is distinct.
    """

    name: ClassVar[str] = "glyph_rotate"
    level: ClassVar[int] = 1
    suite: ClassVar[str] = "classic"
    view_size: ClassVar[int] = CLASSIC_VIEW
    domains: ClassVar[tuple[str, ...]] = ("Society",)
    description: ClassVar[str] = "Turn a rotated or mirrored digit card upright (rotate / flip)."

    side: int = 288
    glyph_min: float = 40.0
    glyph_max: float = 56.0
    transforms: tuple[str, ...] = TRANSFORMS
    clutter: tuple[int, int] = (3, 6)
    noise_sigma: tuple[float, float] = (1.0, 2.5)
    glyphs: tuple[str, ...] = GLYPHS

    def validate(self) -> None:
        """Check sizes and transforms."""
        check_common(self.side, self.glyphs)
        if self.glyph_min * CLASSIC_VIEW / self.side < 1.5 * CLASSIC_MIN_VIEW_HEIGHT:
            raise ValueError("glyph_min would not be legible in the view once upright")
        if not self.glyph_min <= self.glyph_max <= self.side * 0.3:
            raise ValueError("need glyph_min <= glyph_max <= 0.3 * side")
        if not self.transforms or any(t not in TRANSFORMS for t in self.transforms):
            raise ValueError(f"transforms must be among {TRANSFORMS}")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one glyph-rotate task."""
        side = self.side
        img = R.background(rng, side, side, R.pick(rng, BACKGROUNDS))
        digit = R.pick(rng, self.glyphs)
        patch = glyph_patch(rng, digit, float(rng.uniform(self.glyph_min, self.glyph_max)))
        pw, ph = patch.size
        cw, ch = pw + 2 * int(pw * 0.6) + 16, ph + int(ph * 0.9) + 16
        cx = int(rng.integers(8, side - cw - 8, endpoint=True))
        cy = int(rng.integers(8, side - ch - 8, endpoint=True))
        paper = R.jitter_color(rng, (238, 232, 215), 10)
        card = (cx, cy, cx + cw, cy + ch)
        cv2.rectangle(img, (cx, cy), (cx + cw - 1, cy + ch - 1), paper, -1)
        ink = R.jitter_color(rng, (30, 30, 40), 15)
        gx, gy = cx + (cw - pw) // 2, cy + 8 + int(ph * 0.15)
        placed = R.paste_text(img, patch, gx, gy, ink)
        bar_y = gy + ph + max(4, int(ph * 0.2))
        cv2.rectangle(img, (gx - 4, bar_y), (gx + pw + 3, bar_y + max(3, ph // 8)), ink, -1)
        R.add_clutter(img, rng, int(rng.integers(*self.clutter, endpoint=True)),
                      avoid=[R.grow_box(card, 6, side, side)], size_range=(0.08, 0.2))
        ev_up = R.grow_box(placed.box, 2, side, side)
        clean_up = img[ev_up[1]:ev_up[3], ev_up[0]:ev_up[2]].copy()
        mask_up = R.embed_mask(placed.mask, (placed.box[0] - ev_up[0], placed.box[1] - ev_up[1]),
                               (ev_up[3] - ev_up[1], ev_up[2] - ev_up[0]))
        transform = R.pick(rng, self.transforms)
        img = R.add_sensor_noise(img, rng, float(rng.uniform(*self.noise_sigma)), inplace=True)
        img = apply_transform(img, transform)
        box0 = transform_box(ev_up, transform, side, side)
        clean0 = apply_transform(np.ascontiguousarray(clean_up), transform)
        mask0 = apply_transform(mask_up.astype(np.uint8), transform).astype(bool)
        angle, mirrored = EVIDENCE_ORIENTATION[transform]
        evidence = replace(
            R.region_evidence("digit", clean0, box0, mask0, text=digit,
                              glyph_height=placed.glyph_height, clean_is_region=True),
            angle=angle, mirrored=mirrored)
        question = ("The card in the image was photographed rotated or mirrored. Which digit is "
                    f"printed on it? Answer with one of: {', '.join(self.glyphs)}.")
        checkpoints = (
            Checkpoint("s_upright", "S", "rotate_upright", {"evidence": "digit"},
                       "a rotate/flip made the card upright"),
            Checkpoint("v_tool", "V", "v_tool", {"evidence": "digit", "tools": ["rotate", "flip"]},
                       "a rotate/flip was applied to an image holding the digit"),
            Checkpoint("v_true", "V", "v_true", {"evidence": "digit"},
                       "some image shows the digit upright and legibly"),
        )
        meta = {"transform": transform, "upright_box": list(ev_up), "card_box": list(card)}
        return classic_task(self, "Society", img, question, digit, self.glyphs,
                            upright_call(transform), evidence, checkpoints, meta)


# --------------------------------------------------------------------------------------------
# glyph_faint


@register_family
@dataclass
class GlyphFaintFamily(FamilyConfig):
    """Read a digit printed a few gray levels from its paper in a washed-out photo (classic).

    WHY a tool: the photo spans ``span`` gray levels, the digit's ink lies ``ink_contrast``
    levels from its paper (far below the 28-level visibility threshold) and a smooth shading
    ``shading`` x that deep lies on top; one ``autocontrast`` stretches the range to 0..255 and
    multiplies the local ink contrast by about ``255 / (span + shading)``, which ``validate``
    requires to clear the threshold with a 1.3x margin.
    """

    name: ClassVar[str] = "glyph_faint"
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

    def validate(self) -> None:
        """Check sizes, that the ink starts invisible, and that autocontrast restores it."""
        check_common(self.side, self.glyphs)
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
        img = R.background(rng, side, side, R.pick(rng, ("wood", "fabric", "gradient", "noise")))
        cw, ch = int(side * rng.uniform(0.45, 0.6)), int(side * rng.uniform(0.5, 0.65))
        cx = int(rng.integers(8, side - cw - 8, endpoint=True))
        cy = int(rng.integers(8, side - ch - 8, endpoint=True))
        paper = R.jitter_color(rng, (236, 230, 212), 10)
        cv2.rectangle(img, (cx, cy), (cx + cw - 1, cy + ch - 1), paper, -1)
        card = (cx, cy, cx + cw, cy + ch)
        R.add_clutter(img, rng, int(rng.integers(2, 5, endpoint=True)),
                      avoid=[R.grow_box(card, 6, side, side)], size_range=(0.08, 0.2))
        span = float(rng.uniform(*self.span))
        c_target = float(rng.uniform(*self.ink_contrast))
        digit = R.pick(rng, self.glyphs)
        patch = glyph_patch(rng, digit, float(rng.uniform(self.glyph_min, self.glyph_max)))
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
        img = cv2.add(img, cv2.cvtColor(shading_field(rng, side, side, shade),
                                        cv2.COLOR_GRAY2RGB))
        img = R.add_sensor_noise(img, rng, float(rng.uniform(*self.noise_sigma)), inplace=True)
        x0, y0, x1, y1 = ev_box
        before = R.ink_contrast(img[y0:y1, x0:x1], mask)
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
