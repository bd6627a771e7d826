"""The ``tiny_text`` family: a tiny code on a sticker in a large cluttered scene (one crop)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import cv2
import numpy as np

from m3gym.tasks import render as R
from m3gym.tasks.families._text_common import (
    BRANDS,
    MIN_VIEW_HEIGHT,
    NAMES,
    STREETS,
    crop_for,
    l1_task,
)
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.spec import Checkpoint, RefCall, Task


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
        bbox, zoom = crop_for(sticker_box, max(12, int(sh * 0.8)), w, h, placed.glyph_height)
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
        return l1_task(self, domain, img, question, code, choices, call, evidence, checkpoints,
                       meta)

