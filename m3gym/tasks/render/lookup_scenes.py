"""Scene drawing of the level-3 lookup families: faint tags and plates, logo hosts, badges.

Pure functions of a passed ``np.random.Generator``; they draw into an RGB ``uint8`` image in place
and return the pixel boxes of what they drew (the families turn those into evidence).
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.tasks import render as R

PLATE_COLORS: tuple[R.Color, ...] = ((236, 232, 220), (222, 228, 236), (240, 236, 200),
                                     (210, 222, 210), (200, 200, 204), (236, 214, 214))
"""Light tag and plate colours (the faint ink is a few levels darker)."""


@dataclass(frozen=True)
class FaintLabel:
    """A plate with (possibly faint) text drawn into a scene.

    Attributes:
        plate: the plate's pixel box.
        text: the placed text (tight box, ink mask, glyph height).
        crop_box: a box around the text lying inside the plate (what the reference crops).
    """

    plate: R.Box
    text: R.PlacedText
    crop_box: R.Box


def draw_faint_label(img: np.ndarray, rng: np.random.Generator, text: str, glyph: float,
                     contrast: float, at: tuple[int, int], plate_color: R.Color,
                     patch: R.TextPatch | None = None) -> FaintLabel:
    """Draw a plate with ``text`` whose ink is ``contrast`` levels darker than the plate.

    The plate is big enough that a crop with a margin of about one glyph around the text stays
    on the plate (so ``autocontrast`` on that crop stretches only plate and ink).
    """
    patch = patch or R.render_text(text, glyph, R.pick(rng, R.READABLE_FACES[:4]), 1)
    pw, ph = patch.size
    g = patch.glyph_height
    crop_pad = max(7, math.ceil(g * 0.9))
    pad = crop_pad + 5
    x, y = at
    cv2.rectangle(img, (x, y), (x + pw + 2 * pad - 1, y + ph + 2 * pad - 1), plate_color, -1)
    ink = R.faded_color(plate_color, contrast)
    placed = R.paste_text(img, patch, x + pad, y + pad, ink)
    plate = (x, y, x + pw + 2 * pad, y + ph + 2 * pad)
    tb = placed.box
    crop_box = (tb[0] - crop_pad, tb[1] - crop_pad, tb[2] + crop_pad, tb[3] + crop_pad)
    return FaintLabel(plate, placed, crop_box)


def label_size(patch: R.TextPatch) -> tuple[int, int]:
    """Return the ``(w, h)`` of the plate :func:`draw_faint_label` draws for ``patch``."""
    pad = max(7, math.ceil(patch.glyph_height * 0.9)) + 5
    return patch.size[0] + 2 * pad, patch.size[1] + 2 * pad

def scene_base(rng: np.random.Generator, width: int, height: int,
               kinds: tuple[str, ...]) -> np.ndarray:
    """Return a textured background of one of ``kinds``."""
    return R.background(rng, height, width, R.pick(rng, kinds))


def finish_scene(img: np.ndarray, rng: np.random.Generator, keep: list[R.Box],
                 clutter: tuple[int, int], labels: tuple[int, int]) -> None:
    """Add readable distractor labels and clutter away from ``keep`` (in place)."""
    h, w = img.shape[:2]
    placed = R.add_distractor_labels(img, rng, int(rng.integers(labels[0], labels[1] + 1)),
                                     avoid=[R.grow_box(b, 14, w, h) for b in keep],
                                     glyph_range=(16.0, 40.0))
    R.add_clutter(img, rng, int(rng.integers(clutter[0], clutter[1] + 1)),
                  avoid=[*(R.grow_box(b, 10, w, h) for b in keep), *(p.box for p in placed)])


def place(rng: np.random.Generator, size: tuple[int, int], bounds: R.Box,
          occupied: list[R.Box], fallback: R.Box) -> tuple[int, int]:
    """Return a free top-left for a ``size`` box in ``bounds`` (else anywhere in ``fallback``)."""
    spot = R.find_free_spot(rng, size, bounds, occupied, margin=16)
    if spot is None:
        spot = R.find_free_spot(rng, size, fallback, occupied, margin=16, tries=300)
    if spot is None:  # pragma: no cover - scenes are large compared to labels
        raise RuntimeError("no free spot in the scene")
    return spot


def draw_logo_host(img: np.ndarray, rng: np.random.Generator, scene: str, logo: np.ndarray,
                   side: int, tilt: float, mask_of: Callable[[np.ndarray], np.ndarray]
                   ) -> tuple[R.Box, R.Box, np.ndarray]:
    """Draw the host object (shop sign or jersey) with ``logo`` resized to ``side`` on it.

    The logo is turned ``tilt`` degrees counter-clockwise. Returns ``(host box, logo box, ink
    mask of the logo box)``; the ink mask is ``mask_of`` (a gray upright logo -> bool mask)
    turned with the logo.
    """
    h, w = img.shape[:2]
    small = cv2.resize(logo, (side, side), interpolation=cv2.INTER_AREA)
    if scene == "storefront":
        hw, hh = int(w * rng.uniform(0.45, 0.7)), int(h * rng.uniform(0.45, 0.65))
        hx, hy = int(rng.integers(20, w - hw - 20)), int(rng.integers(h // 5, h - hh - 10))
        wall = R.rand_color(rng, 60, 220)
        cv2.rectangle(img, (hx, hy), (hx + hw - 1, hy + hh - 1), wall, -1)
        # window and door
        win = R.jitter_color(rng, (120, 160, 190), 25)
        cv2.rectangle(img, (hx + hw // 12, hy + hh // 3), (hx + hw // 2, hy + hh - hh // 8),
                      win, -1)
        cv2.rectangle(img, (hx + hw * 3 // 5, hy + hh // 3), (hx + hw * 4 // 5, hy + hh - 1),
                      R.jitter_color(rng, (90, 60, 40), 20), -1)
        # sign band with the logo at a random place along it
        band = R.rand_color(rng, 30, 230)
        by0, by1 = hy + hh // 12, hy + hh // 12 + side + side // 2
        cv2.rectangle(img, (hx + 8, by0), (hx + hw - 9, by1), band, -1)
        lx = int(rng.integers(hx + 16, hx + hw - side - 16))
        ly = by0 + side // 4
    else:
        hw, hh = int(w * rng.uniform(0.35, 0.5)), int(h * rng.uniform(0.6, 0.85))
        hx, hy = int(rng.integers(20, w - hw - 20)), int(rng.integers(10, h - hh - 10))
        kit = R.rand_color(rng, 20, 235)
        sl = hw // 4
        body = np.array([[hx + sl, hy], [hx + hw - sl, hy], [hx + hw, hy + hh // 4],
                         [hx + hw - sl // 2, hy + hh // 3], [hx + hw - sl, hy + hh // 5],
                         [hx + hw - sl, hy + hh], [hx + sl, hy + hh], [hx + sl, hy + hh // 5],
                         [hx + sl // 2, hy + hh // 3], [hx, hy + hh // 4]], np.int32)
        cv2.fillPoly(img, [body], kit, cv2.LINE_AA)
        cv2.polylines(img, [body], True, tuple(int(c * 0.6) for c in kit), 2, cv2.LINE_AA)
        left = bool(rng.random() < 0.5)
        lx = hx + (sl + hw // 12 if left else hw - sl - hw // 12 - side)
        ly = hy + hh // 5 + int(rng.integers(0, max(1, hh // 8)))
    box, ink = paste_tilted(img, small, mask_of(R.to_gray(small)), (lx + side / 2, ly + side / 2),
                            tilt)
    return (hx, hy, hx + hw, hy + hh), box, ink


def paste_tilted(img: np.ndarray, patch: np.ndarray, ink: np.ndarray, centre: tuple[float, float],
                 tilt: float) -> tuple[R.Box, np.ndarray]:
    """Paste ``patch`` turned ``tilt`` degrees counter-clockwise about ``centre`` (in place).

    Returns the pixel box of the turned patch and its ink mask (``ink`` turned with it, inside
    the patch's footprint). With ``tilt`` 0 the patch is copied exactly.
    """
    ph, pw = patch.shape[:2]
    if tilt == 0.0:
        x0, y0 = int(round(centre[0] - pw / 2)), int(round(centre[1] - ph / 2))
        img[y0:y0 + ph, x0:x0 + pw] = patch
        return (x0, y0, x0 + pw, y0 + ph), ink.astype(bool)
    rad = math.radians(tilt)
    bw = int(math.ceil(pw * abs(math.cos(rad)) + ph * abs(math.sin(rad)))) + 2
    bh = int(math.ceil(pw * abs(math.sin(rad)) + ph * abs(math.cos(rad)))) + 2
    m = cv2.getRotationMatrix2D((pw / 2, ph / 2), tilt, 1.0)
    m[:, 2] += (bw / 2 - pw / 2, bh / 2 - ph / 2)
    turned = cv2.warpAffine(patch, m, (bw, bh), flags=cv2.INTER_LINEAR)
    alpha = cv2.warpAffine(np.full((ph, pw), 255, np.uint8), m, (bw, bh),
                           flags=cv2.INTER_LINEAR).astype(np.float32)[..., None] / 255.0
    turned_ink = cv2.warpAffine(ink.astype(np.uint8) * 255, m, (bw, bh),
                                flags=cv2.INTER_NEAREST) > 127
    h, w = img.shape[:2]
    x0 = int(np.clip(round(centre[0] - bw / 2), 0, w - bw))
    y0 = int(np.clip(round(centre[1] - bh / 2), 0, h - bh))
    region = img[y0:y0 + bh, x0:x0 + bw].astype(np.float32)
    img[y0:y0 + bh, x0:x0 + bw] = (turned * alpha + region * (1 - alpha) + 0.5).astype(np.uint8)
    return (x0, y0, x0 + bw, y0 + bh), turned_ink & (alpha[..., 0] > 0.99)


BADGE_TITLES: tuple[str, ...] = ("VISITOR", "GUEST", "CONTRACTOR", "STAFF", "DELEGATE", "PRESS")


def draw_badge(img: np.ndarray, rng: np.random.Generator, name: str, id_number: str,
               bounds: R.Box, occupied: list[R.Box]) -> R.Box:
    """Draw a readable lanyard badge (title, person name, ID) in ``bounds``; return its box."""
    face = R.pick(rng, R.READABLE_FACES[:4])
    title = R.render_text(R.pick(rng, BADGE_TITLES), float(rng.uniform(22, 30)), face, 2)
    who = R.render_text(name, float(rng.uniform(20, 28)), face, 2)
    num = R.render_text(f"ID {id_number}", float(rng.uniform(18, 24)), face, 2)
    bw = max(title.size[0], who.size[0], num.size[0]) + 40
    bh = title.size[1] + who.size[1] + num.size[1] + 100
    h, w = img.shape[:2]
    # the lanyard (60 px above the card) is part of the placed box: it must not cross a plate
    x, y = place(rng, (bw, bh + 60), bounds, occupied, (10, 10, w - 10, h - 10))
    y += 60
    card = R.jitter_color(rng, (245, 245, 240), 8)
    stripe = R.rand_color(rng, 30, 200)
    cv2.line(img, (x + bw // 2, max(0, y - 60)), (x + bw // 2, y), stripe, 8, cv2.LINE_AA)
    cv2.rectangle(img, (x, y), (x + bw - 1, y + bh - 1), card, -1)
    cv2.rectangle(img, (x, y), (x + bw - 1, y + 30 + title.size[1]), stripe, -1)
    R.paste_text(img, title, x + (bw - title.size[0]) // 2, y + 15, R.ink_for(stripe))
    R.paste_text(img, who, x + 20, y + 50 + title.size[1], (20, 20, 24))
    R.paste_text(img, num, x + 20, y + 75 + title.size[1] + who.size[1], (40, 40, 44))
    return (x, max(0, y - 60), x + bw, y + bh)



def draw_decoy_labels(img: np.ndarray, rng: np.random.Generator, texts: list[str],
                      glyph: tuple[float, float], contrast: tuple[float, float],
                      keep: list[R.Box], not_in: str) -> list[str]:
    """Draw look-alike faint labels with ``texts`` outside the ``not_in`` part of the image.

    Each label looks like the evidence (same glyph and contrast ranges) but lies in another
    part of the image (:func:`R.position_phrase` differs from ``not_in``), so the question's
    position names the target. Placed plates are added to ``keep``; returns the drawn texts.
    """
    h, w = img.shape[:2]
    drawn: list[str] = []
    for text in texts:
        g = float(rng.uniform(*glyph))
        patch = R.render_text(text, g, R.pick(rng, R.READABLE_FACES[:4]), 1)
        size = label_size(patch)
        for _ in range(30):
            spot = R.find_free_spot(rng, size, (20, 20, w - 20, h - 20), keep, margin=24,
                                    tries=20)
            if spot is None:
                break
            box = (spot[0], spot[1], spot[0] + size[0], spot[1] + size[1])
            if R.position_phrase(box, w, h) == not_in:
                continue
            col = R.jitter_color(rng, R.pick(rng, PLATE_COLORS), 8)
            label = draw_faint_label(img, rng, text, g, float(rng.uniform(*contrast)), spot, col,
                                     patch)
            keep.append(label.plate)
            drawn.append(text)
            break
    return drawn
