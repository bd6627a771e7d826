"""The ``tiny_text`` family: a tiny code on a sticker in a large cluttered scene (one crop)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.spec import Checkpoint, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.families._scene_common import check_range
from m3gym.tasks.families._text_common import (
    BOLD_FACES,
    FIELD_NAMES,
    MIN_VIEW_HEIGHT,
    crop_for,
    fake_brand,
    l1_task,
    text_patch,
    view_lookalike_codes,
)
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.render import text_scenes as TS

ROW_GAP: float = 0.6
"""Gap between a sticker's rows, in glyph heights. At 0.2 the rows nearly touch and a window
around one code (its box plus a quarter of its height, the strong reader's) holds slices of
the codes above and below it, which a reader merges into the reading (0.78 of zoomed codes
read); at 0.6 the zoomed row stands alone (1.0 on 12 held-out tasks), while at view size the
rows, 2-3 px tall and 1-2 px apart, still blur into one block."""

def draw_sticker(
    img: np.ndarray, rng: np.random.Generator, rows: list[tuple[R.TextPatch, R.TextPatch]],
    glyph: float, color: R.Color, xy: tuple[int, int], tilt: float = 0.0,
) -> tuple[R.Box, list[tuple[R.Box, np.ndarray]]]:
    """Draw a sticker (plate, tiny barcode, field names and codes) with its top-left at ``xy``.

    Drawn flat (:func:`~m3gym.tasks.render.text_scenes.draw_field_plate`), then pasted seen at
    ``tilt`` (:func:`m3gym.tasks.render.perspective_quad` strength; 0: flat). Returns the
    sticker's box and, per row, the code's pixel box and ink mask.
    """
    ink = R.ink_for(color)
    flat, lay = TS.draw_field_plate(rows, glyph, color, ink, strip_w=int(glyph * 1.6),
                                    row_gap=ROW_GAP)
    w, h = lay.size
    TS.draw_barcode(flat.rgb, rng, (lay.pad, lay.pad, lay.pad + lay.strip_w, h - lay.pad), ink)
    quad = R.perspective_quad(rng, w, h, tilt) + np.array(xy, np.float64)
    return TS.paste_plate(img, flat, quad)


def sticker_size(rows: list[tuple[R.TextPatch, R.TextPatch]], glyph: float) -> tuple[int, int]:
    """Return the room a sticker of ``rows`` needs, with a margin for its perspective."""
    w, h = TS.plate_layout(rows, glyph, int(glyph * 1.6), row_gap=ROW_GAP).size
    return int(w * 1.25) + 4, int(h * 1.25) + 4


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
                brand = text_patch(fake_brand(rng), float(rng.uniform(14, 26)),
                                   R.pick_font(rng))
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
                price = text_patch(f"${int(rng.integers(1, 40))}.{int(rng.integers(10, 99))}",
                                   float(rng.uniform(14, 22)), R.pick_font(rng, BOLD_FACES))
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
            locale = R.pick(rng, R.FAKER_LOCALES)
            lines = ("SHIP TO", R.fake_person(rng, locale, ascii_only=True),
                     R.fake_address(rng, locale, ascii_only=True).split(",")[0], "PRIORITY")
            for line in lines:
                t = text_patch(line, float(rng.uniform(14, 24)),
                               R.pick_font(rng, BOLD_FACES if line.isupper() else R.FONT_FACES))
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
            brand = text_patch(fake_brand(rng), float(rng.uniform(18, 30)),
                               R.pick_font(rng, BOLD_FACES))
            if brand.size[0] < pw // 2 - 20:
                keep.append(R.paste_text(img, brand, x + 14, y + 14, R.ink_for(col)).box)
            hosts.append((x + 6, y + 6, x + pw - 6, y + ph - 30))
    return hosts, keep



TINY_SCENES: dict[str, tuple[str, str, tuple[str, ...]]] = {
    # scene -> (domain, what the sticker is attached to, background kinds)
    "shelf": ("Finance", "on a product on the store shelf", ("brick", "gradient", "paper")),
    "parcel": ("Life", "on a parcel", ("wood", "asphalt", "noise", "fabric")),
    "device": ("Life", "on an electronic device", ("wood", "fabric", "gradient", "paper")),
}


@register_family
@dataclass
class TinyTextFamily(FamilyConfig):
    """Read one field's code on a tiny coloured sticker in a large, cluttered scene.

    Scene:
        A shelf, parcels or devices (``scenes``) photographed at ``width`` x ``height`` with
        readable brand labels, clutter, and ``decoys`` + 1 stickers of different colours. Each
        sticker carries a tiny barcode and ``fields`` rows ``NAME  CODE`` (REF, LOT, SN, ...)
        stacked one line every 1.6 glyph heights (:data:`ROW_GAP`) in one TrueType face (``faces``),
        ``glyph_min``-``glyph_max`` px tall, pasted in perspective (``tilt``); the photo goes
        through a sampled camera chain (``camera``: lighting, shadow, blur off the stickers,
        noise, JPEG).
    Question:
        "What LOT code is printed in small type on the red sticker on a parcel in the top-left
        part of the image?" Six choices: codes that differ only in characters that look alike
        at view resolution (:func:`~m3gym.tasks.families._text_common.view_lookalike_codes`);
        the target sticker's other rows print the other choices (all five by default).
    Why a tool is needed:
        At the agent's view (longest side 768) the default glyphs (7-9.5 px in a 3200 px photo)
        are 1.7-2.3 px tall, far below :attr:`Evidence.min_view_height`; the sticker's rows of
        look-alike codes blur into one block and the field names are unreadable, so the view
        does not tell which option is printed next to the named field. One zoomed ``crop`` of
        the sticker shows every row legibly, each row standing apart (:data:`ROW_GAP`). A strong
        reader told where the code is (PP-OCRv4 + Tesseract, upscaled, contrast-stretched,
        turned) scores about chance on the view and reads the zoomed code (0.19 and 0.96 on 12
        held-out tasks). Measured by the view-only leak probe (a template matcher that knows the
        face, size and place): 0.345 with the code alone on the sticker, 0.21-0.23 with four or
        five rows in a 2400 px photo (a matcher tells the printed options from the others),
        0.15 with every option printed in a 3200 px photo (chance 0.167).
    Reference trajectory:
        One ``crop`` of the target sticker (grown by a margin) with the smallest zoom that shows
        the code at 1.5x the legible height.
    Checkpoints:
        ``s_crop`` (a crop contains and magnifies the code), ``v_tool`` (crop applied to a
        region holding the code), ``v_true`` (some image shows the code legibly).
    Difficulty:
        ``difficulty_knobs``: at 0 glyphs 10-13 px, 4-6 rows, tilt up to 0.3, camera 0.1-0.3,
        1 decoy sticker; at 1 glyphs 7-9 px, 6 rows, tilt up to 0.6, camera 0.5-0.9, 4 decoys.
    Config:
        ``width``, ``height``, ``glyph_min``, ``glyph_max``, ``decoys``, ``distractor_labels``,
        ``clutter``, ``camera``, ``scenes``, ``choices``, ``fields``, ``faces``, ``tilt``.
    """

    name: ClassVar[str] = "tiny_text"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 1
    domains: ClassVar[tuple[str, ...]] = ("Finance", "Life")
    description: ClassVar[str] = "Zoom into a tiny sticker code in a cluttered scene (crop)."

    width: int = 3200
    height: int = 2400
    glyph_min: float = 7.0
    glyph_max: float = 9.5
    decoys: int = 2
    distractor_labels: tuple[int, int] = (4, 7)
    clutter: tuple[int, int] = (6, 12)
    camera: tuple[float, float] = (0.3, 0.7)
    scenes: tuple[str, ...] = ("shelf", "parcel", "device")
    choices: int = 6
    fields: tuple[int, int] = (6, 6)
    faces: tuple[str, ...] = R.FONT_FACES
    tilt: tuple[float, float] = (0.1, 0.5)

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Smaller glyphs, more stacked rows, more tilt and camera, more decoys as ``d`` rises."""
        d = float(difficulty)
        return {
            "glyph_min": 10.0 - 3.0 * d, "glyph_max": 13.0 - 4.0 * d,
            "fields": (4 + round(2 * d), 6),
            "tilt": (0.3 * d, 0.3 + 0.3 * d),
            "camera": (0.1 + 0.4 * d, 0.3 + 0.6 * d),
            "decoys": 1 + round(3 * d),
        }

    def validate(self) -> None:
        """Check sizes, the illegibility of the glyphs at view size, and the option names."""
        if min(self.width, self.height) < 400 or max(self.width, self.height) > 4096:
            raise ValueError("image sides must lie in 400..4096 px")
        if not 6 <= self.glyph_min <= self.glyph_max:
            raise ValueError("need 6 <= glyph_min <= glyph_max")
        if self.glyph_max * R.view_scale(self.height, self.width) >= MIN_VIEW_HEIGHT:
            raise ValueError("glyph_max is legible at view size: the task would not need a crop")
        if not 0 <= self.decoys <= len(R.NAMED_COLORS) - 1:
            raise ValueError("decoys must be 0..len(NAMED_COLORS)-1")
        if not self.scenes or any(s not in TINY_SCENES for s in self.scenes):
            raise ValueError(f"scenes must be among {sorted(TINY_SCENES)}")
        if not 2 <= self.choices <= 12:
            raise ValueError("choices must lie in 2..12")
        check_range("fields", *self.fields, 1, min(len(FIELD_NAMES), self.choices))
        check_range("distractor_labels", *self.distractor_labels, 0, 20)
        check_range("clutter", *self.clutter, 0, 40)
        check_range("camera", *self.camera, 0.0, 1.0)
        check_range("tilt", *self.tilt, 0.0, 0.6)
        if not self.faces or any(f not in R.FONT_FACES for f in self.faces):
            raise ValueError(f"faces must be among {R.FONT_FACES}")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one tiny-text task."""
        w, h = self.width, self.height
        scene = R.pick(rng, self.scenes)
        domain, attached, bg_kinds = TINY_SCENES[scene]
        img = R.surface(rng, h, w, R.pick(rng, bg_kinds))
        hosts, keep = _draw_hosts(img, rng, scene)
        if not hosts:
            hosts = [(40, 40, w - 40, h - 40)]

        colors = list(R.NAMED_COLORS)
        order = rng.permutation(len(colors))[: self.decoys + 1]
        sticker_colors = [colors[int(i)] for i in order]
        face = R.pick_font(rng, self.faces)
        glyph = float(rng.uniform(self.glyph_min, self.glyph_max))
        code, choices = view_lookalike_codes(rng, face, glyph, R.view_scale(h, w), self.choices)
        # the target sticker prints other options too, under other field names: at view size the
        # stacked codes are one blur, and only the field name (legible once zoomed) tells them apart
        n_rows = int(rng.integers(self.fields[0], self.fields[1], endpoint=True))
        others = [c for c in choices if c != code]
        printed = [code, *(others[int(i)] for i in rng.permutation(len(others))[:n_rows - 1])]
        printed = [printed[int(i)] for i in rng.permutation(len(printed))]
        names = [FIELD_NAMES[int(i)] for i in rng.permutation(len(FIELD_NAMES))[:n_rows]]
        target_field = names[printed.index(code)]
        decoy_codes: list[str] = []
        stickers: list[R.Box] = []
        target: tuple[R.Box, R.PlacedText] | None = None
        for k, cname in enumerate(sticker_colors):
            if k:
                face = R.pick_font(rng, self.faces)
                glyph = float(rng.uniform(self.glyph_min, self.glyph_max))
                texts = [R.random_code(rng) for _ in range(n_rows)]
                texts = [t for t in texts if t not in choices] or [R.random_code(rng)]
            else:
                texts = printed
            rows = [(text_patch(n, glyph, face), text_patch(t, glyph, face))
                    for n, t in zip(names if k == 0 else FIELD_NAMES, texts)]
            size = sticker_size(rows, glyph)
            host = hosts[int(rng.integers(len(hosts)))]
            spot = R.find_free_spot(rng, size, host, [*stickers, *keep], margin=24)
            if spot is None:
                spot = R.find_free_spot(rng, size, (20, 20, w - 20, h - 20), [*stickers, *keep],
                                        margin=24, tries=200)
            if spot is None:
                if k == 0:  # pragma: no cover - a 1600 px scene always has room
                    raise RuntimeError("no room for the target sticker")
                continue
            tilt = float(rng.uniform(*self.tilt))
            box, placed_rows = draw_sticker(img, rng, rows, glyph, R.NAMED_COLORS[cname], spot,
                                            tilt)
            stickers.append(box)
            if k == 0:
                row = printed.index(code)
                vbox, vmask = placed_rows[row]
                seen = glyph * (vbox[3] - vbox[1]) / rows[row][1].size[1]
                target = (box, vbox, vmask, seen)
            else:
                decoy_codes += [t for t in texts if t not in choices]
        assert target is not None
        sticker_box, code_box, code_mask, glyph_seen = target

        labels = R.add_distractor_labels(
            img, rng, int(rng.integers(*self.distractor_labels, endpoint=True)),
            avoid=[R.grow_box(b, 12, w, h) for b in stickers], glyph_range=(16.0, 44.0))
        R.add_clutter(img, rng, int(rng.integers(*self.clutter, endpoint=True)),
                      avoid=[*hosts, *keep, *stickers, *(lb.box for lb in labels)])

        ev_box = R.grow_box(code_box, 2, w, h)
        mask = R.embed_mask(code_mask, (code_box[0] - ev_box[0], code_box[1] - ev_box[1]),
                            (ev_box[3] - ev_box[1], ev_box[2] - ev_box[0]))
        evidence = R.region_evidence("code", img, ev_box, mask, text=code,
                                     glyph_height=glyph_seen)
        img = R.camera_pipeline(img, rng, float(rng.uniform(*self.camera)), keep=stickers)

        sh = sticker_box[3] - sticker_box[1]
        bbox, zoom = crop_for(sticker_box, max(12, int(sh * 0.8)), w, h, glyph_seen)
        call = RefCall("c1", "crop", {"image_index": 0, "bbox_2d": bbox, "zoom_scale": zoom})
        color_name = sticker_colors[0]
        where = R.position_phrase(sticker_box, w, h)
        question = (
            f"What {target_field} code is printed in small type on the {color_name} sticker "
            f"{attached} in the {where} part of the image? Answer with the code exactly as "
            "printed."
        )
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
            "decoy_codes": decoy_codes, "glyph_height_view": glyph_seen * vs,
            "target_field": target_field,
            "sticker_box": list(sticker_box),
        }
        return l1_task(self, domain, img, question, code, choices, call, evidence, checkpoints,
                       meta)

