"""Level-1 text families: one visual operation makes a printed code legible.

* ``tiny_text`` — a small code on a sticker in a large cluttered scene: needs one ``crop`` (zoom).
* ``rotated_text`` — a document rotated by 90/180/270 degrees or mirrored: needs one ``rotate`` or
  ``flip``.
* ``faint_text`` — faded print in a low-dynamic-range photo: needs one ``autocontrast``.

Every task asks for a code (see :func:`m3gym.tasks.render.random_code`) and offers six choices
that differ from the answer in one or two characters, so the answer cannot be guessed from the
layout of the choices, and readable distractor labels in the scene never hold the answer.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.tasks import render as R
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.spec import AnswerSpec, Checkpoint, Evidence, RefCall, Task
from m3gym.tools.catalogue import CONTRAST_TOOLS

MIN_VIEW_HEIGHT: float = Evidence.min_view_height
MIN_CONTRAST: float = Evidence.min_contrast

"""Tools that count as a contrast operation for ``faint_text``'s checkpoints."""


def _answer_spec(code: str) -> AnswerSpec:
    """Return the exact-match answer for a code with its separator-free/spaced variants."""
    return AnswerSpec(value=code, variants=R.code_variants(code))


def _task(
    family: FamilyConfig, domain: str, image: np.ndarray, question: str, code: str,
    choices: tuple[str, ...], call: RefCall, evidence: Evidence,
    checkpoints: tuple[Checkpoint, ...], metadata: dict[str, Any],
) -> Task:
    """Assemble a level-1 task (the task id is set by :func:`~m3gym.tasks.registry.make_task`)."""
    image = R.freeze(image)
    h, w = image.shape[:2]
    meta = {
        "level": 1, "family": family.name, "domain": domain,
        "evidence_area_fraction": evidence.area / float(h * w), "view_size": R.VIEW_SIZE,
        "image_size": [w, h], **metadata,
    }
    return Task(
        task_id=f"{family.name}/0", family=family.name, level=1, domain=domain, images=(image,),
        question=question, answer=_answer_spec(code), reference=((call,),), evidence=(evidence,),
        checkpoints=checkpoints, choices=choices, capabilities=("visual_grounding",),
        metadata=meta,
    )


# --------------------------------------------------------------------------------------------
# tiny_text


def _sticker(
    img: np.ndarray, rng: np.random.Generator, code: str, glyph: float, color: R.Color,
    xy: tuple[int, int], patch: R.TextPatch,
) -> tuple[R.Box, R.PlacedText]:
    """Draw a sticker (plate, tiny barcode, code) with its top-left at ``xy``; return box, text."""
    pw, ph = patch.size
    pad = max(3, int(glyph * 0.5))
    bar_w = int(glyph * 1.6)
    x, y = xy
    w, h = pw + 3 * pad + bar_w, ph + 2 * pad
    cv2.rectangle(img, (x, y), (x + w - 1, y + h - 1), color, -1)
    edge = tuple(int(c * 0.7) for c in color)
    cv2.rectangle(img, (x, y), (x + w - 1, y + h - 1), edge, 1)
    ink = R.ink_for(color)
    bx = x + pad
    widths = rng.integers(1, 3, size=max(2, bar_w // 2))
    for i, bw in enumerate(widths):
        if bx + int(bw) > x + pad + bar_w:
            break
        if i % 2 == 0:
            cv2.rectangle(img, (bx, y + pad), (bx + int(bw) - 1, y + h - pad - 1), ink, -1)
        bx += int(bw)
    placed = R.paste_text(img, patch, x + 2 * pad + bar_w, y + pad, ink)
    return (x, y, x + w, y + h), placed


def _sticker_size(patch: R.TextPatch, glyph: float) -> tuple[int, int]:
    """Return the ``(w, h)`` of the sticker :func:`_sticker` draws around ``patch``."""
    pw, ph = patch.size
    pad = max(3, int(glyph * 0.5))
    return pw + 3 * pad + int(glyph * 1.6), ph + 2 * pad


def _draw_hosts(
    img: np.ndarray, rng: np.random.Generator, scene: str,
) -> tuple[list[R.Box], list[R.Box]]:
    """Draw the scene's large objects; return (host boxes for stickers, boxes to keep clear)."""
    h, w = img.shape[:2]
    hosts: list[R.Box] = []
    keep: list[R.Box] = []
    if scene == "shelf":
        rows = int(rng.integers(2, 4))
        for r in range(rows):
            board_y = int(h * (r + 1) / (rows + 0.4))
            board_h = int(h * 0.035)
            x = int(rng.integers(10, 60))
            while x < w - 80:
                pw = int(w * rng.uniform(0.07, 0.15))
                ph = int(h / (rows + 0.4) * rng.uniform(0.45, 0.8))
                if x + pw > w - 10:
                    break
                col = R.rand_color(rng, 30, 240)
                y0 = board_y - ph
                cv2.rectangle(img, (x, y0), (x + pw - 1, board_y - 1), col, -1)
                cv2.rectangle(img, (x, y0), (x + pw - 1, board_y - 1),
                              tuple(int(c * 0.6) for c in col), 2)
                brand = R.render_text(R.pick(rng, BRANDS), float(rng.uniform(14, 26)),
                                      R.pick(rng, R.ALL_FACES), int(rng.integers(1, 3)))
                top = y0 + 4
                if brand.size[0] < pw - 8:
                    keep.append(R.paste_text(img, brand, x + (pw - brand.size[0]) // 2, y0 + 8,
                                             R.ink_for(col)).box)
                    top = keep[-1][3] + 4
                hosts.append((x + 4, top, x + pw - 4, board_y - 4))
                x += pw + int(rng.integers(4, 30))
            wood = R.jitter_color(rng, (150, 110, 70), 25)
            cv2.rectangle(img, (0, board_y), (w - 1, board_y + board_h), wood, -1)
            for px in rng.integers(20, w - 120, size=int(rng.integers(2, 5))):
                price = R.render_text(f"${int(rng.integers(1, 40))}.{int(rng.integers(10, 99))}",
                                      float(rng.uniform(14, 22)), cv2.FONT_HERSHEY_DUPLEX, 2)
                pad = 4
                if price.size[1] + 2 * pad < board_h + 30 and int(px) + price.size[0] < w - 8:
                    y = board_y + 2
                    cv2.rectangle(img, (int(px) - pad, y), (int(px) + price.size[0] + pad,
                                  y + price.size[1] + 2 * pad), (250, 250, 245), -1)
                    keep.append(R.paste_text(img, price, int(px), y + pad, (200, 20, 20)).box)
    elif scene == "parcel":
        for _ in range(int(rng.integers(1, 3))):
            pw, ph = int(w * rng.uniform(0.3, 0.5)), int(h * rng.uniform(0.35, 0.6))
            spot = R.find_free_spot(rng, (pw, ph), (20, 20, w - 20, h - 20), hosts, margin=30)
            if spot is None:
                continue
            x, y = spot
            col = R.jitter_color(rng, (185, 140, 90), 10)
            cv2.rectangle(img, (x, y), (x + pw - 1, y + ph - 1), col, -1)
            cv2.rectangle(img, (x, y), (x + pw - 1, y + ph - 1), tuple(int(c * .6) for c in col), 3)
            tape = R.jitter_color(rng, (215, 190, 140), 15)
            cv2.rectangle(img, (x + pw // 2 - pw // 14, y), (x + pw // 2 + pw // 14, y + ph - 1),
                          tape, -1)
            lw, lh = int(pw * 0.42), int(ph * 0.42)
            lx, ly = x + int(rng.integers(10, max(11, pw - lw - 10))), y + ph - lh - 12
            cv2.rectangle(img, (lx, ly), (lx + lw, ly + lh), (248, 248, 244), -1)
            keep.append((lx, ly, lx + lw, ly + lh))
            ty = ly + 8
            for line in ("SHIP TO", R.pick(rng, NAMES), R.pick(rng, STREETS), "PRIORITY"):
                t = R.render_text(line, float(rng.uniform(14, 24)), R.pick(rng, R.READABLE_FACES),
                                  2 if line.isupper() else 1)
                if ty + t.size[1] < ly + lh - 4 and t.size[0] < lw - 12:
                    R.paste_text(img, t, lx + 8, ty, (15, 15, 15))
                ty += t.size[1] + 8
            hosts.append((x + 6, y + 6, x + pw - 6, y + ph - 6))
    else:  # device
        for _ in range(int(rng.integers(1, 4))):
            pw, ph = int(w * rng.uniform(0.22, 0.42)), int(h * rng.uniform(0.16, 0.32))
            spot = R.find_free_spot(rng, (pw, ph), (20, 20, w - 20, h - 20), hosts, margin=30)
            if spot is None:
                continue
            x, y = spot
            col = R.jitter_color(rng, R.pick(rng, [(60, 62, 68), (220, 222, 225), (30, 30, 34)]),
                                 12)
            cv2.rectangle(img, (x, y), (x + pw - 1, y + ph - 1), col, -1)
            cv2.rectangle(img, (x, y), (x + pw - 1, y + ph - 1), tuple(int(c * .7) for c in col), 3)
            for i in range(int(rng.integers(2, 6))):
                cv2.circle(img, (x + 20 + i * 18, y + ph - 18), 5,
                           R.pick(rng, [(40, 220, 60), (230, 60, 40), (250, 200, 40)]), -1,
                           cv2.LINE_AA)
            for vx in range(x + pw // 2, x + pw - 16, 10):
                cv2.line(img, (vx, y + 14), (vx, y + ph // 3), tuple(int(c * .5) for c in col), 3)
            brand = R.render_text(R.pick(rng, BRANDS), float(rng.uniform(18, 30)),
                                  R.pick(rng, R.READABLE_FACES), 2)
            if brand.size[0] < pw // 2 - 20:
                keep.append(R.paste_text(img, brand, x + 14, y + 14, R.ink_for(col)).box)
            hosts.append((x + 6, y + 6, x + pw - 6, y + ph - 30))
    return hosts, keep


BRANDS: tuple[str, ...] = (
    "NORDA", "Velmo", "KRISP", "Alturo", "PIXEL+", "Oaklea", "Brio", "ZENTA", "Mareo", "Fjell",
    "QUADRA", "Lumo", "Torvik", "Sunnie", "HEXA", "Corva",
)
NAMES: tuple[str, ...] = (
    "A. Marlow", "J. Okafor", "T. Lindqvist", "M. Haddad", "R. Castell", "E. Novak", "K. Mbeki",
)
STREETS: tuple[str, ...] = (
    "12 Elm Row", "48 Quay St", "7 Harbour Rd", "230 Mill Ln", "5 Crescent Ave", "91 Rue Vert",
)
TINY_SCENES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # scene -> (domain, what the sticker is attached to, background kinds)
    "shelf": ("Finance", "on a product on the store shelf", ("brick", "gradient", "paper")),
    "parcel": ("Life", "on a parcel", ("wood", "asphalt", "noise", "fabric")),
    "device": ("Life", "on an electronic device", ("wood", "fabric", "gradient", "paper")),
}


@register_family
@dataclass
class TinyTextFamily(FamilyConfig):
    """Read a tiny code on a coloured sticker in a large, cluttered scene.

    The agent must find the sticker the question names (by colour, what it is stuck on and where
    it is) and read its code. WHY a tool: the code's glyphs are ``glyph_min``–``glyph_max`` px tall
    in a ``width`` x ``height`` image, so at the agent's view (longest side 768 px) they shrink
    below :attr:`Evidence.min_view_height`; one ``crop`` with zoom around the sticker makes them
    legible. Larger readable labels and decoy stickers of other colours are distractors.
    """

    name: ClassVar[str] = "tiny_text"
    level: ClassVar[int] = 1
    domains: ClassVar[tuple[str, ...]] = ("Finance", "Life")
    description: ClassVar[str] = "Zoom into a tiny sticker code in a cluttered scene (crop)."

    width: int = 1600
    height: int = 1200
    glyph_min: float = 8.0
    glyph_max: float = 11.0
    decoys: int = 2
    distractor_labels: tuple[int, int] = (4, 7)
    clutter: tuple[int, int] = (6, 12)
    noise_sigma: tuple[float, float] = (1.0, 3.0)
    scenes: tuple[str, ...] = ("shelf", "parcel", "device")
    choices: int = 6

    def validate(self) -> None:
        """Check sizes, the illegibility of the glyphs at view size, and the scene names."""
        if min(self.width, self.height) < 400 or max(self.width, self.height) > 4096:
            raise ValueError("image sides must lie in 400..4096 px")
        if not 4 <= self.glyph_min <= self.glyph_max:
            raise ValueError("need 4 <= glyph_min <= glyph_max")
        if self.glyph_max * R.view_scale(self.height, self.width) >= MIN_VIEW_HEIGHT:
            raise ValueError("glyph_max is legible at view size: the task would not need a crop")
        if not 0 <= self.decoys <= len(R.NAMED_COLORS) - 1:
            raise ValueError("decoys must be 0..len(NAMED_COLORS)-1")
        if not self.scenes or any(s not in TINY_SCENES for s in self.scenes):
            raise ValueError(f"scenes must be among {sorted(TINY_SCENES)}")
        if self.choices < 2:
            raise ValueError("choices must be >= 2")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one tiny-text task."""
        w, h = self.width, self.height
        scene = R.pick(rng, self.scenes)
        domain, attached, bg_kinds = TINY_SCENES[scene]
        img = R.background(rng, h, w, R.pick(rng, bg_kinds))
        hosts, keep = _draw_hosts(img, rng, scene)
        if not hosts:
            hosts = [(40, 40, w - 40, h - 40)]

        colors = list(R.NAMED_COLORS)
        order = rng.permutation(len(colors))[: self.decoys + 1]
        sticker_colors = [colors[int(i)] for i in order]
        code = R.random_code(rng)
        decoy_codes = [R.random_code(rng) for _ in range(self.decoys)]
        stickers: list[R.Box] = []
        target: tuple[R.Box, R.PlacedText] | None = None
        for k, (cname, text) in enumerate(zip(sticker_colors, [code, *decoy_codes])):
            glyph = float(rng.uniform(self.glyph_min, self.glyph_max))
            patch = R.render_text(text, glyph, R.pick(rng, R.READABLE_FACES), 1)
            size = _sticker_size(patch, patch.glyph_height)
            host = hosts[int(rng.integers(len(hosts)))]
            spot = R.find_free_spot(rng, size, host, [*stickers, *keep], margin=24)
            if spot is None:
                spot = R.find_free_spot(rng, size, (20, 20, w - 20, h - 20), [*stickers, *keep],
                                        margin=24, tries=200)
            if spot is None:
                if k == 0:  # pragma: no cover - a 1600 px scene always has room
                    raise RuntimeError("no room for the target sticker")
                continue
            box, placed = _sticker(img, rng, text, patch.glyph_height,
                                   R.NAMED_COLORS[cname], spot, patch)
            stickers.append(box)
            if k == 0:
                target = (box, placed)
        assert target is not None
        sticker_box, placed = target

        labels = R.add_distractor_labels(
            img, rng, int(rng.integers(*self.distractor_labels, endpoint=True)),
            avoid=[R.grow_box(b, 12, w, h) for b in stickers], glyph_range=(16.0, 44.0))
        R.add_clutter(img, rng, int(rng.integers(*self.clutter, endpoint=True)),
                      avoid=[*hosts, *keep, *stickers, *(lb.box for lb in labels)])

        ev_box = R.grow_box(placed.box, 2, w, h)
        mask = R.embed_mask(placed.mask, (placed.box[0] - ev_box[0], placed.box[1] - ev_box[1]),
                            (ev_box[3] - ev_box[1], ev_box[2] - ev_box[0]))
        evidence = R.region_evidence("code", img, ev_box, mask, text=code,
                                     glyph_height=placed.glyph_height)
        img = R.add_sensor_noise(img, rng, float(rng.uniform(*self.noise_sigma)),
                                   inplace=True)

        sh = sticker_box[3] - sticker_box[1]
        bbox, zoom = _crop_for(sticker_box, max(12, int(sh * 0.8)), w, h, placed.glyph_height)
        call = RefCall("c1", "crop", {"image_index": 0, "bbox_2d": bbox, "zoom_scale": zoom})
        color_name = sticker_colors[0]
        where = R.position_phrase(sticker_box, w, h)
        question = (
            f"What code is printed in small type on the {color_name} sticker {attached} in the "
            f"{where} part of the image? Answer with the code exactly as printed."
        )
        choices = R.code_choices(rng, code, self.choices, exclude=decoy_codes)
        checkpoints = (
            Checkpoint("s_crop", "S", "crop_covers", {"evidence": "code"},
                       "a crop contains the whole sticker code"),
            Checkpoint("v_tool", "V", "v_tool", {"evidence": "code", "tools": ["crop"]},
                       "crop was applied to a region containing the code"),
            Checkpoint("v_true", "V", "v_true", {"evidence": "code"},
                       "some image shows the code legibly"),
        )
        vs = R.view_scale(h, w)
        meta = {
            "scene": scene, "target_color": color_name, "position": where,
            "decoy_codes": decoy_codes, "glyph_height_view": placed.glyph_height * vs,
            "sticker_box": list(sticker_box),
        }
        return _task(self, domain, img, question, code, choices, call, evidence, checkpoints,
                     meta)


def _crop_for(
    box: R.Box, margin: int, width: int, height: int, glyph: float,
) -> tuple[list[int], float]:
    """Return a 0–1000 ``bbox_2d`` covering ``box`` (plus ``margin``) and a legible zoom.

    The margin shrinks until some zoom in 1..5 shows ``glyph`` at >= 1.5x the legible height.
    """
    while True:
        grown = R.grow_box(box, margin, width, height)
        bbox = R.box_to_bbox1000(grown, width, height)
        x0, y0, x1, y1 = R.bbox1000_to_box(bbox, width, height)
        zoom = R.crop_zoom_for((x1 - x0, y1 - y0), glyph, MIN_VIEW_HEIGHT)
        if zoom is not None or margin == 0:
            if zoom is None:  # pragma: no cover - stickers are far smaller than 768/1.5 glyphs
                raise RuntimeError("sticker too large for a legible crop")
            return bbox, zoom
        margin //= 2


# --------------------------------------------------------------------------------------------
# rotated_text


ROTATED_DOCS: dict[str, tuple[str, str, tuple[str, ...], tuple[int, int]]] = {
    # doc -> (domain, title, field labels, (width, height) of the upright document)
    "receipt": ("Society", "RECEIPT", ("Receipt No", "Terminal", "Cashier ID", "Loyalty card",
                                       "Auth code", "Store ID"), (440, 700)),
    "form": ("Society", "APPLICATION FORM", ("Applicant ID", "Case number", "Reference",
                                            "Permit code", "Office code", "Batch"), (620, 760)),
    "sign": ("Diagram", "SITE PLAN", ("Zone code", "Asset tag", "Panel ID", "Circuit",
                                      "Valve ID", "Sensor"), (780, 500)),
}
TRANSFORMS: tuple[str, ...] = ("rot90", "rot180", "rot270", "flip_h", "flip_v")
"""How ``rotated_text`` distorts the scene: rotations counter-clockwise, or mirror flips."""
EVIDENCE_ORIENTATION: dict[str, tuple[float, bool]] = {
    # transform -> (Evidence.angle, Evidence.mirrored): mirror first, then rotate CCW
    "rot90": (90.0, False), "rot180": (180.0, False), "rot270": (-90.0, False),
    "flip_h": (0.0, True), "flip_v": (180.0, True),
}


def upright_call(transform: str) -> RefCall:
    """Return the one call that makes an image distorted by ``transform`` upright again."""
    if transform.startswith("rot"):
        angle = {"rot90": -90, "rot180": 180, "rot270": 90}[transform]
        return RefCall("c1", "rotate", {"image_index": 0, "angle": angle, "expand": True})
    direction = {"flip_h": "horizontal", "flip_v": "vertical"}[transform]
    return RefCall("c1", "flip", {"image_index": 0, "direction": direction})


def apply_transform(img: np.ndarray, transform: str) -> np.ndarray:
    """Return ``img`` rotated counter-clockwise (``rotN``) or mirrored (``flip_h``/``flip_v``)."""
    ops = {
        "rot90": lambda a: cv2.rotate(a, cv2.ROTATE_90_COUNTERCLOCKWISE),
        "rot180": lambda a: cv2.rotate(a, cv2.ROTATE_180),
        "rot270": lambda a: cv2.rotate(a, cv2.ROTATE_90_CLOCKWISE),
        "flip_h": lambda a: cv2.flip(a, 1),
        "flip_v": lambda a: cv2.flip(a, 0),
    }
    return ops[transform](img)


def transform_box(box: R.Box, transform: str, width: int, height: int) -> R.Box:
    """Return where ``box`` of a ``width`` x ``height`` image lands after ``transform``."""
    x0, y0, x1, y1 = box
    if transform == "rot90":
        return (y0, width - x1, y1, width - x0)
    if transform == "rot180":
        return (width - x1, height - y1, width - x0, height - y0)
    if transform == "rot270":
        return (height - y1, x0, height - y0, x1)
    if transform == "flip_h":
        return (width - x1, y0, width - x0, y1)
    if transform == "flip_v":
        return (x0, height - y1, x1, height - y0)
    raise ValueError(f"unknown transform {transform!r}")


def _field_value(rng: np.random.Generator, label: str) -> str:
    """Return a plausible non-code value for a document field (dates, amounts, names)."""
    kind = int(rng.integers(3))
    if kind == 0:
        day, month = int(rng.integers(1, 29)), int(rng.integers(1, 13))
        return f"{day:02d}.{month:02d}.20{int(rng.integers(10, 30))}"
    if kind == 1:
        return f"{int(rng.integers(2, 900))}.{int(rng.integers(0, 100)):02d}"
    return R.pick(rng, NAMES)


@register_family
@dataclass
class RotatedTextFamily(FamilyConfig):
    """Read a field of a document photographed rotated by 90/180/270 degrees or mirrored.

    The question names a field (e.g. "Receipt No") whose value is a code; other fields hold
    other codes of the same shape. WHY a tool: text that is sideways, upside down or mirrored is
    not reliably readable (and the pixel-level legibility check requires upright evidence); one
    ``rotate`` (counter-clockwise positive, ``expand`` true) or ``flip`` makes it upright, and
    the glyphs (``glyph_min``–``glyph_max`` px in an image of longest side ``longest``) are
    large enough once upright.
    """

    name: ClassVar[str] = "rotated_text"
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
    noise_sigma: tuple[float, float] = (1.0, 3.0)
    choices: int = 6

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
        if self.choices < 2:
            raise ValueError("choices must be >= 2")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one rotated-text task."""
        doc = R.pick(rng, self.docs)
        domain, title, labels, (dw, dh) = ROTATED_DOCS[doc]
        landscape = dw > dh
        W, H = (self.longest, self.longest * 3 // 4) if landscape else \
            (self.longest * 3 // 4, self.longest)
        img = R.background(rng, H, W, R.pick(rng, ("wood", "fabric", "noise", "asphalt",
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
        face, _ = R.random_font(rng)
        y = dy + 20
        head = R.render_text(title, float(rng.uniform(26, 36)), face, 2)
        R.paste_text(img, head, dx + (dw - head.size[0]) // 2, y, ink)
        y += head.size[1] + 18
        cv2.line(img, (dx + 16, y), (dx + dw - 16, y), ink, 2)
        y += 18
        n_codes = int(rng.integers(self.code_fields[0], self.code_fields[1], endpoint=True))
        chosen = [labels[int(i)] for i in rng.permutation(len(labels))[:n_codes + 2]]
        code_labels, other_labels = chosen[:n_codes], chosen[n_codes:]
        target_label = code_labels[0]
        rows = [(lb, R.random_code(rng)) for lb in code_labels]
        rows += [(lb, _field_value(rng, lb)) for lb in other_labels]
        rows = [rows[int(i)] for i in rng.permutation(len(rows))]
        glyph = float(rng.uniform(self.glyph_min, self.glyph_max))
        target: R.PlacedText | None = None
        region_before: np.ndarray | None = None
        for label, value in rows:
            lab = R.render_text(f"{label}:", glyph, face, 1)
            val = R.render_text(value, glyph, face, 2 if doc == "sign" else 1)
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
        code = dict(rows)[target_label]
        others = [v for lb, v in rows if lb != target_label]

        ev_up = R.grow_box(target.box, 2, W, H)
        clean_up = img[ev_up[1]:ev_up[3], ev_up[0]:ev_up[2]].copy()
        mask_up = R.embed_mask(target.mask, (target.box[0] - ev_up[0], target.box[1] - ev_up[1]),
                               (ev_up[3] - ev_up[1], ev_up[2] - ev_up[0]))
        transform = R.pick(rng, self.transforms)
        img = R.add_sensor_noise(img, rng, float(rng.uniform(*self.noise_sigma)),
                                   inplace=True)
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
        choices = R.code_choices(rng, code, self.choices, exclude=others)
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
        return _task(self, domain, img, question, code, choices, upright_call(transform), evidence,
                     checkpoints, meta)


# --------------------------------------------------------------------------------------------
# faint_text


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


def shading_field(rng: np.random.Generator, height: int, width: int,
                   depth: float) -> np.ndarray:
    """Return an ``uint8`` lighting offset of ``depth`` levels peak to peak (0..depth).

    Soft bands of light and shade (a curled page under a lamp): a sinusoid with a period of
    0.25-0.4 page sides in a random direction plus a weaker linear ramp in another. Computed on
    an 1/8-size grid and resized (linear), so it is smooth at every glyph scale.
    """
    gh, gw = max(2, height // 8), max(2, width // 8)
    ys = np.linspace(-0.5, 0.5, gh, dtype=np.float32)[:, None]
    xs = np.linspace(-0.5, 0.5, gw, dtype=np.float32)[None, :]
    ramp_dir, band_dir, phase = rng.uniform(0.0, 2.0 * np.pi, size=3)
    period = float(rng.uniform(0.25, 0.4))
    ramp = np.cos(ramp_dir) * xs + np.sin(ramp_dir) * ys
    across = np.cos(band_dir) * xs + np.sin(band_dir) * ys
    field = 0.4 * ramp + np.sin(across * np.float32(2.0 * np.pi / period) + np.float32(phase))
    lo, hi = float(field.min()), float(field.max())
    field = cv2.convertScaleAbs(field, alpha=depth / max(hi - lo, 1e-6),
                                beta=-lo * depth / max(hi - lo, 1e-6))
    return cv2.resize(field, (width, height), interpolation=cv2.INTER_LINEAR)


@register_family
@dataclass
class FaintTextFamily(FamilyConfig):
    """Read a faded code in a washed-out, unevenly lit, low-dynamic-range photo of a document.

    The photo spans only ``span`` gray levels and the named field's ink lies just
    ``ink_contrast`` = c levels from its paper (below :attr:`Evidence.min_contrast`). On top lie
    soft bands of light and shade (:func:`shading_field`) ``shading`` x c levels deep, so the
    paper on one part of the page is darker than the ink on another: no single global
    threshold (Tesseract's Otsu, a viewer's eye at this contrast) separates ink from paper, and
    OCR of the photo as shown reads the code in well under 10 % of seeds. WHY a tool: one
    ``autocontrast`` (cutoff ``cutoff`` %) stretches the ``span + shading`` levels to the full
    range, multiplying the LOCAL ink contrast (ink vs the paper right around it, what
    ``v_true`` measures) by about ``255 / (span + shading)``: ``validate`` requires at least
    1.3x the visibility threshold at the worst corner of the ranges; the tests measure it
    through PIL's own autocontrast. The shading stays in the stretched photo but is smooth at
    glyph scale, so the code is plainly visible in it.
    """

    name: ClassVar[str] = "faint_text"
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

    def validate(self) -> None:
        """Check sizes, that the ink is invisible at first and restorable by the op."""
        if min(self.width, self.height) < 400 or max(self.width, self.height) > 2048:
            raise ValueError("image sides must lie in 400..2048 px")
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
        if self.choices < 2:
            raise ValueError("choices must be >= 2")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one faint-text task."""
        W, H = self.width, self.height
        doc = R.pick(rng, self.docs)
        domain, title, labels = FAINT_DOCS[doc]
        img = R.background(rng, H, W, R.pick(rng, ("wood", "fabric", "gradient", "noise")))
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
        face, _ = R.random_font(rng)
        y = dy + 18
        head = R.render_text(title, float(rng.uniform(24, 32)), face, 2)
        if head.size[0] < dw - 24:
            R.paste_text(img, head, dx + 14, y, R.faded_color(paper, rng.uniform(120, 200)))
        y += head.size[1] + 24
        chosen = [labels[int(i)] for i in rng.permutation(len(labels))]
        target_label = chosen[0]
        rows = [(lb, R.random_code(rng)) for lb in chosen]
        rows = [rows[int(i)] for i in rng.permutation(len(rows))]
        glyph = float(rng.uniform(self.glyph_min, self.glyph_max))
        target: R.PlacedText | None = None
        clean_region: np.ndarray | None = None
        for label, value in rows:
            lab = R.render_text(f"{label}:", glyph, face, 1)
            val = R.render_text(value, glyph, face, 2)
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
        code = dict(rows)[target_label]

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
        before = R.ink_contrast(img[y0:y1, x0:x1], mask)
        call = RefCall("c1", "autocontrast", {"image_index": 0, "cutoff": self.cutoff})
        question = (
            f"The photo shows a faded {doc}. What is the {target_label}? Answer with the value "
            "exactly as printed."
        )
        choices = R.code_choices(rng, code, self.choices,
                                 exclude=[v for lb, v in rows if lb != target_label])
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
        return _task(self, domain, img, question, code, choices, call, evidence, checkpoints,
                     meta)
