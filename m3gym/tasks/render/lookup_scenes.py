"""Scene drawing of the level-3 lookup families: product boxes, shop fronts, jerseys, facades.

Objects are drawn with depth and shading (extruded boxes with lit tops and shaded sides, soft
drop shadows, back-to-front order), their printed surfaces as flat patches placed through a
homography (:func:`~m3gym.tasks.render.camera.perspective_quad` /
:func:`~m3gym.tasks.render.camera.warp_patch`), all text in TrueType faces; decorative text
(product names, prices, addresses, companies, dates) comes from Faker
(:mod:`~m3gym.tasks.render.content`). The facts a task asks about never come from here: entity
names, codes, logos and the badge holder come from the offline world (:mod:`m3gym.web`).

The evidence of a task (a faint code tag, a building's name plate, a logo) is drawn by
:func:`draw_faint_label` / :func:`paste_tilted`, which return its exact ink mask and glyph height
in image coordinates. Pure functions of a passed ``np.random.Generator``; they draw into an RGB
``uint8`` image in place and return the pixel boxes of what they drew.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.tasks import render as R

PLATE_COLORS: tuple[R.Color, ...] = ((236, 232, 220), (222, 228, 236), (240, 236, 200),
                                     (210, 222, 210), (200, 200, 204), (236, 214, 214))
"""Light tag and plate colours (the faint ink is a few levels darker)."""

EVIDENCE_FACES: tuple[str, ...] = ("sans", "mono", "condensed", "serif")
"""TrueType faces of evidence text (regular weights: the strokes stay thin at 7-10 px)."""

DISPLAY_FACES: tuple[str, ...] = ("sans-bold", "condensed-bold", "serif-bold", "mono-bold")
"""Faces of large printed words (brand names, category words, stamps)."""

BADGE_TITLES: tuple[str, ...] = ("VISITOR", "GUEST", "CONTRACTOR", "STAFF", "DELEGATE", "PRESS")

EVIDENCE_TILT: float = 0.06
"""Perspective strength of evidence plates (a few degrees: the plate stays nearly rectangular)."""


# --------------------------------------------------------------------------------------------
# small drawing primitives


def shade(color: Sequence[float], factor: float) -> R.Color:
    """Return ``color`` scaled by ``factor`` (clipped to 0..255)."""
    return tuple(int(np.clip(c * factor, 0, 255)) for c in color)  # type: ignore[return-value]


def vertical_gradient(h: int, w: int, top: Sequence[float], bottom: Sequence[float]
                      ) -> np.ndarray:
    """Return an ``(h, w, 3)`` ``uint8`` patch fading from ``top`` to ``bottom``."""
    t = np.linspace(0.0, 1.0, max(h, 1), dtype=np.float32)[:, None, None]
    a, b = np.asarray(top, np.float32), np.asarray(bottom, np.float32)
    col = (a * (1 - t) + b * t + 0.5).astype(np.uint8)  # one column, then repeated
    return np.ascontiguousarray(np.broadcast_to(col, (h, w, 3)))


def fill_gradient(img: np.ndarray, box: R.Box, top: Sequence[float], bottom: Sequence[float]
                  ) -> None:
    """Fill ``box`` of ``img`` with a vertical gradient (in place)."""
    hh, ww = img.shape[:2]
    x0, y0, x1, y1 = R.grow_box(box, 0, ww, hh)
    if x1 > x0 and y1 > y0:
        img[y0:y1, x0:x1] = vertical_gradient(y1 - y0, x1 - x0, top, bottom)


def text_patch(text: str, glyph: float, font: str) -> R.TextPatch:
    """Return the TrueType patch of ``text`` (a font missing a glyph falls back to sans)."""
    return R.truetype_text(text, glyph, font if R.font_covers(text, font) else "sans")


def paste_center(img: np.ndarray, patch: R.TextPatch, cx: float, y: int, color: R.Color
                 ) -> R.PlacedText:
    """Paste ``patch`` horizontally centred on ``cx`` with its top at ``y``."""
    return R.paste_text(img, patch, int(round(cx - patch.size[0] / 2)), y, color)


def barcode(rng: np.random.Generator, w: int, h: int) -> np.ndarray:
    """Return an ``(h, w, 3)`` barcode-like patch (random bar widths, quiet margins)."""
    out = np.full((h, w, 3), 250, np.uint8)
    x = max(2, w // 12)
    while x < w - max(2, w // 12):
        bw = int(rng.integers(1, 4))
        if rng.random() < 0.55:
            out[: h - max(2, h // 6), x:x + bw] = 20
        x += bw
    return out


def stroke_rect(img: np.ndarray, box: R.Box, color: R.Color, thickness: int = 1) -> None:
    """Draw a rectangle outline (anti-aliased) on ``box``."""
    x0, y0, x1, y1 = box
    cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), color, thickness, cv2.LINE_AA)


def place_patch(img: np.ndarray, rng: np.random.Generator, rgb: np.ndarray,
                alpha: np.ndarray | None, at: tuple[int, int], tilt: float,
                shadow: float = 0.5, avoid: Sequence[R.Box] = ()
                ) -> tuple[R.Box, np.ndarray] | None:
    """Place a flat printed patch at ``at`` seen at an angle (strength ``tilt``), with shadow.

    Returns the pixel box and the quad (image coordinates) of the patch, or ``None`` (nothing
    drawn) when the placed quad, grown by a margin for its shadow, would touch an ``avoid`` box.
    """
    h, w = rgb.shape[:2]
    quad = R.perspective_quad(rng, w, h, tilt) + np.asarray(at, np.float64)
    if avoid:
        qb = R.quad_box(quad, img.shape[1], img.shape[0])
        if any(R.boxes_overlap(qb, a, 0.06 * max(w, h) + 4) for a in avoid):
            return None
    if shadow > 0:
        img[:] = R.soft_shadow(img, rng, quad, shadow)
    box, _ = R.warp_patch(img, rgb, alpha, quad)
    return box, quad


def quad_inner_box(quad: np.ndarray, inset: float) -> R.Box:
    """Return an axis-aligned box inside a (nearly rectangular) quad, inset by ``inset`` px."""
    tl, tr, br, bl = quad
    x0 = math.ceil(max(tl[0], bl[0]) + inset)
    x1 = math.floor(min(tr[0], br[0]) - inset)
    y0 = math.ceil(max(tl[1], tr[1]) + inset)
    y1 = math.floor(min(bl[1], br[1]) - inset)
    return x0, y0, x1, y1


def camera_shot(img: np.ndarray, rng: np.random.Generator, strength: float,
                protect: Sequence[R.Box]) -> np.ndarray:
    """Return ``img`` through :func:`R.camera_pipeline`, sparing the ``protect`` boxes.

    The protected boxes are exempt from its blur, noise and JPEG.

    The evidence is a few levels of faint ink on glyphs 6-10 px tall; compression and noise at
    that scale would destroy what the task asks the agent to recover. Each protected box is
    copied back from ``img`` with the mean gain the lighting gave it, so it stays lit like its
    surroundings.
    """
    out = R.camera_pipeline(img, rng, strength, keep=list(protect))
    if out is img:
        return img
    out = np.array(out, copy=True)
    h, w = img.shape[:2]
    for box in protect:
        x0, y0, x1, y1 = R.grow_box(box, 0, w, h)
        src = img[y0:y1, x0:x1].astype(np.float32)
        gain = float(out[y0:y1, x0:x1].mean()) / max(float(src.mean()), 1.0)
        out[y0:y1, x0:x1] = np.clip(src * gain + 0.5, 0, 255).astype(np.uint8)
    return out


# --------------------------------------------------------------------------------------------
# the evidence: a faint label


@dataclass(frozen=True)
class FaintLabel:
    """A plate with (possibly faint) text drawn into a scene.

    Attributes:
        plate: the plate's pixel box.
        text: the placed text (tight box, ink mask, glyph height) in image coordinates.
        crop_box: a box around the text lying inside the plate (what the reference crops).
    """

    plate: R.Box
    text: R.PlacedText
    crop_box: R.Box


def evidence_patch(rng: np.random.Generator, text: str, glyph: float) -> R.TextPatch:
    """Return the TrueType patch of evidence ``text`` in one of :data:`EVIDENCE_FACES`."""
    return text_patch(text, glyph, R.pick_font(rng, EVIDENCE_FACES))


def label_pads(patch: R.TextPatch) -> tuple[int, int]:
    """Return ``(crop pad, plate pad)`` of a label.

    The crop keeps about one glyph around the text and stays a few pixels inside the plate.
    """
    crop_pad = max(7, math.ceil(patch.glyph_height * 0.9))
    return crop_pad, crop_pad + 8


def label_size(patch: R.TextPatch) -> tuple[int, int]:
    """Return the ``(w, h)`` of the plate :func:`draw_faint_label` draws for ``patch``."""
    pad = label_pads(patch)[1]
    return patch.size[0] + 2 * pad, patch.size[1] + 2 * pad


def draw_faint_label(img: np.ndarray, rng: np.random.Generator, text: str, glyph: float,
                     contrast: float, at: tuple[int, int], plate_color: R.Color,
                     patch: R.TextPatch | None = None, tilt: float = EVIDENCE_TILT
                     ) -> FaintLabel:
    """Draw a plate with ``text`` whose ink is ``contrast`` levels darker than the plate.

    The plate (a printed card with a thin darker rim and a soft shadow) is placed at ``at``
    through a mild perspective (strength ``tilt``). The returned ink mask and glyph height are
    those of the warped text; the crop box lies inside the plate's rim with about one glyph
    around the text (so ``autocontrast`` on that crop stretches only plate and ink).
    """
    patch = patch or evidence_patch(rng, text, glyph)
    crop_pad, pad = label_pads(patch)
    pw, ph = patch.size[0] + 2 * pad, patch.size[1] + 2 * pad
    card = np.empty((ph, pw, 3), np.uint8)
    card[:] = plate_color
    cv2.rectangle(card, (0, 0), (pw - 1, ph - 1), shade(plate_color, 0.82), 1)
    ink = R.faded_color(plate_color, contrast)
    R.paste_text(card, patch, pad, pad, ink)
    text_alpha = np.zeros((ph, pw), np.uint8)
    text_alpha[pad:pad + patch.size[1], pad:pad + patch.size[0]] = patch.alpha
    placed_card = place_patch(img, rng, card, None, at, tilt, shadow=0.35)
    assert placed_card is not None  # nothing to avoid
    plate, quad = placed_card
    cover = R.warp_alpha(text_alpha, quad, plate) >= 128
    ys, xs = np.nonzero(cover)
    tb = (plate[0] + int(xs.min()), plate[1] + int(ys.min()),
          plate[0] + int(xs.max()) + 1, plate[1] + int(ys.max()) + 1)
    mask = cover[tb[1] - plate[1]:tb[3] - plate[1], tb[0] - plate[0]:tb[2] - plate[0]]
    left, right = np.linalg.norm(quad[3] - quad[0]), np.linalg.norm(quad[2] - quad[1])
    g = patch.glyph_height * min(left, right) / ph
    placed = R.PlacedText(text, tb, mask, g)
    inner = quad_inner_box(quad, 3)
    crop_box = (max(tb[0] - crop_pad, inner[0]), max(tb[1] - crop_pad, inner[1]),
                min(tb[2] + crop_pad, inner[2]), min(tb[3] + crop_pad, inner[3]))
    return FaintLabel(plate, placed, crop_box)


def draw_decoy_labels(img: np.ndarray, rng: np.random.Generator, texts: list[str],
                      glyph: tuple[float, float], contrast: tuple[float, float],
                      keep: list[R.Box], not_in: str, bounds: R.Box | None = None
                      ) -> list[str]:
    """Draw look-alike faint labels with ``texts`` outside the ``not_in`` part of the image.

    Each label looks like the evidence (same glyph and contrast ranges) but lies in another
    part of the image (:func:`R.position_phrase` differs from ``not_in``), so the question's
    position names the target; ``bounds`` (default: the image) is where they may go. Placed
    plates are added to ``keep``; returns the drawn texts.
    """
    h, w = img.shape[:2]
    bounds = bounds or (20, 20, w - 20, h - 20)
    drawn: list[str] = []
    for text in texts:
        patch = evidence_patch(rng, text, float(rng.uniform(*glyph)))
        size = label_size(patch)
        for _ in range(30):
            spot = R.find_free_spot(rng, size, bounds, keep, margin=24, tries=20)
            if spot is None:
                break
            box = (spot[0], spot[1], spot[0] + size[0], spot[1] + size[1])
            if R.position_phrase(box, w, h) == not_in:
                continue
            col = R.jitter_color(rng, R.pick(rng, PLATE_COLORS), 8)
            label = draw_faint_label(img, rng, text, patch.glyph_height,
                                     float(rng.uniform(*contrast)), spot, col, patch)
            keep.append(label.plate)
            drawn.append(text)
            break
    return drawn


# --------------------------------------------------------------------------------------------
# decorative printed things: stickers, price tags, notices, props


def card_patch(lines: Sequence[tuple[str, float, str]], paper: R.Color, ink: R.Color,
               pad: int, band: R.Color | None = None) -> np.ndarray:
    """Return a printed card holding ``lines`` of ``(text, glyph height, face)``, left aligned.

    With ``band`` the first line sits on a coloured header band in the ink colour that suits it.
    """
    patches = [text_patch(t, g, f) for t, g, f in lines]
    gap = [max(4, int(p.glyph_height * 0.7)) for p in patches]
    w = max(p.size[0] for p in patches) + 2 * pad
    h = sum(p.size[1] for p in patches) + sum(gap[1:]) + 2 * pad
    card = np.empty((h, w, 3), np.uint8)
    card[:] = paper
    y = pad
    for k, p in enumerate(patches):
        if k:
            y += gap[k]
        colour = ink
        if k == 0 and band is not None:
            card[:y + p.size[1] + gap[0] // 2 + 1] = band
            colour = R.ink_for(band)
        R.paste_text(card, p, pad, y, colour)
        y += p.size[1]
    cv2.rectangle(card, (0, 0), (w - 1, h - 1), shade(paper, 0.8), 1)
    return card


def sticker_lines(rng: np.random.Generator, kind: str) -> list[str]:
    """Return the text lines of a decorative sticker of ``kind`` (Faker content)."""
    if kind == "price":
        return [f"${float(rng.uniform(0.5, 60.0)):.2f}", R.fake_product(rng, ascii_only=True)]
    if kind == "address":
        street = R.fake_address(rng, ascii_only=True).split("\n")[0]
        return [R.fake_company(rng, ascii_only=True), street]
    if kind == "notice":
        return [R.pick(rng, ("OPEN", "NO PARKING", "DELIVERIES", "SALE", "FRAGILE", "THIS SIDE UP",
                             "STAFF ONLY", "KEEP DRY")),
                f"since {R.fake_date(rng, '%Y')}" if rng.random() < 0.5
                else R.fake_date(rng, "%d %b %Y")]
    return [R.fake_id(rng), R.fake_date(rng, "%d.%m.%Y")]


STICKER_KINDS: tuple[str, ...] = ("price", "address", "notice", "lot")
"""Kinds of decorative stickers :func:`add_stickers` prints."""


def add_stickers(img: np.ndarray, rng: np.random.Generator, count: int, avoid: list[R.Box],
                 glyph: tuple[float, float] = (14.0, 30.0), bounds: R.Box | None = None
                 ) -> list[R.Box]:
    """Place ``count`` readable stickers (price tags, address labels, notices) in ``bounds``.

    Each is printed in TrueType with Faker text, seen at an angle, away from ``avoid``.
    Returns the boxes placed.
    """
    h, w = img.shape[:2]
    placed: list[R.Box] = []
    for _ in range(count):
        kind = R.pick(rng, STICKER_KINDS)
        g = float(rng.uniform(*glyph))
        lines = sticker_lines(rng, kind)
        spec = [(lines[0], g, R.pick_font(rng, DISPLAY_FACES))]
        spec += [(t, max(8.0, g * 0.55), R.pick_font(rng, EVIDENCE_FACES)) for t in lines[1:]]
        paper = R.jitter_color(rng, R.pick(rng, ((245, 242, 230), (250, 250, 250),
                                                 (255, 236, 120), (230, 240, 255))), 8)
        band = R.rand_color(rng, 30, 200) if rng.random() < 0.5 else None
        card = card_patch(spec, paper, (25, 25, 30), max(6, int(g * 0.5)), band)
        ch, cw = card.shape[:2]
        if cw >= w // 2 or ch >= h // 3:
            continue
        spot = R.find_free_spot(rng, (cw + 10, ch + 10), bounds or (10, 10, w - 10, h - 10),
                                [*avoid, *placed], margin=14, tries=60)
        if spot is None:
            continue
        done = place_patch(img, rng, card, None, (spot[0] + 5, spot[1] + 5),
                           float(rng.uniform(0.1, 0.4)), shadow=0.5, avoid=[*avoid, *placed])
        if done is not None:
            placed.append(done[0])
    return placed


def draw_box3d(img: np.ndarray, front: R.Box, color: R.Color, depth: int, lit_from_left: bool
               ) -> R.Box:
    """Draw an extruded box: a shaded front face, a lit top and a darker side (in place).

    The top and side recede up and to the right (or left) by ``depth`` px. Returns the
    bounding box of all three faces.
    """
    x0, y0, x1, y1 = front
    dx = depth if lit_from_left else -depth
    dy = -int(depth * 0.8)
    top = np.array([[x0, y0], [x1, y0], [x1 + dx, y0 + dy], [x0 + dx, y0 + dy]], np.int32)
    sx = x1 if lit_from_left else x0
    side = np.array([[sx, y0], [sx + dx, y0 + dy], [sx + dx, y1 + dy], [sx, y1]], np.int32)
    cv2.fillPoly(img, [top], shade(color, 1.18), cv2.LINE_AA)
    cv2.fillPoly(img, [side], shade(color, 0.62), cv2.LINE_AA)
    fill_gradient(img, front, shade(color, 1.04), shade(color, 0.86))
    edge = shade(color, 0.5)
    for poly in (top, side):
        cv2.polylines(img, [poly], True, edge, 1, cv2.LINE_AA)
    stroke_rect(img, front, edge, 1)
    xs = [x0, x1, x0 + dx, x1 + dx]
    return min(xs), y0 + dy, max(xs), y1


def add_props(img: np.ndarray, rng: np.random.Generator, count: int, avoid: list[R.Box],
              size_range: tuple[float, float] = (0.05, 0.14), bounds: R.Box | None = None
              ) -> list[R.Box]:
    """Draw ``count`` props (framed photos, small boxes, cards) in ``bounds``, with shadows."""
    h, w = img.shape[:2]
    placed: list[R.Box] = []
    for _ in range(count):
        side = int(max(h, w) * rng.uniform(*size_range))
        bw, bh = side, int(side * rng.uniform(0.6, 1.3))
        spot = R.find_free_spot(rng, (bw + side // 4, bh + side // 4),
                                bounds or (10, 10, w - 10, h - 10),
                                [*avoid, *placed], margin=12, tries=60)
        if spot is None:
            continue
        kind = int(rng.integers(3))
        lit_from_left = bool(rng.random() < 0.5)
        depth = side // 5
        x = spot[0] + (0 if lit_from_left else depth)
        y = spot[1] + side // 4
        if kind == 0:  # a framed photo seen at an angle
            photo = R.fake_photo(rng, bh, bw)
            border = max(3, side // 14)
            cv2.rectangle(photo, (0, 0), (bw - 1, bh - 1), (245, 245, 240), border)
            done = place_patch(img, rng, photo, None, (x, y), float(rng.uniform(0.1, 0.45)),
                               avoid=[*avoid, *placed])
            if done is None:
                continue
            box = done[0]
        elif kind == 1:  # a small closed box
            front = (x, y, x + bw, y + bh)
            img[:] = R.soft_shadow(img, rng, front, 0.5)
            box = draw_box3d(img, front, R.rand_color(rng, 60, 220), depth, lit_from_left)
        else:  # a printed card
            g = float(rng.uniform(12, 20))
            card = card_patch([(R.fake_company(rng, ascii_only=True), g, "sans-bold"),
                               (R.fake_date(rng, "%d %B %Y"), g * 0.6, "serif")],
                              R.jitter_color(rng, (240, 238, 228), 10), (30, 30, 36),
                              int(g * 0.6))
            if card.shape[1] >= w // 2:
                continue
            done = place_patch(img, rng, card, None, (x, y), float(rng.uniform(0.1, 0.45)),
                               avoid=[*avoid, *placed])
            if done is None:
                continue
            box = done[0]
        placed.append(box)
    return placed


def finish_scene(img: np.ndarray, rng: np.random.Generator, keep: list[R.Box],
                 clutter: tuple[int, int], labels: tuple[int, int],
                 bounds: R.Box | None = None) -> None:
    """Add readable stickers (``labels``) and props (``clutter``) away from ``keep`` (in place).

    ``bounds`` (default: the whole image) is where they may go (e.g. the facade, not the sky).
    """
    h, w = img.shape[:2]
    grown = [R.grow_box(b, 30, w, h) for b in keep]
    stickers = add_stickers(img, rng, int(rng.integers(labels[0], labels[1] + 1)), grown,
                            bounds=bounds)
    add_props(img, rng, int(rng.integers(clutter[0], clutter[1] + 1)), [*grown, *stickers],
              bounds=bounds)


def scene_base(rng: np.random.Generator, width: int, height: int,
               kinds: tuple[str, ...]) -> np.ndarray:
    """Return the surface (a textured background of one of ``kinds``, or a photo) to draw on."""
    return R.surface(rng, height, width, R.pick(rng, kinds))


def place(rng: np.random.Generator, size: tuple[int, int], bounds: R.Box,
          occupied: list[R.Box], fallback: R.Box) -> tuple[int, int]:
    """Return a free top-left for a ``size`` box in ``bounds`` (else anywhere in ``fallback``)."""
    spot = R.find_free_spot(rng, size, bounds, occupied, margin=16)
    if spot is None:
        spot = R.find_free_spot(rng, size, fallback, occupied, margin=16, tries=300)
    if spot is None:  # pragma: no cover - scenes are large compared to labels
        raise RuntimeError("no free spot in the scene")
    return spot


# --------------------------------------------------------------------------------------------
# code_lookup: a product package


def draw_package(img: np.ndarray, rng: np.random.Generator, front: R.Box, category: str
                 ) -> R.Box:
    """Draw the target product's package: an extruded box with a printed front.

    The front shows a coloured band with a fictional Faker brand line, the product's category
    word (never its name or code), a size line and a barcode. Returns the box of all faces;
    the lower half of the front is left plain for the code tag.
    """
    x0, y0, x1, y1 = front
    pw, ph = x1 - x0, y1 - y0
    colour = R.rand_color(rng, 60, 225)
    img[:] = R.soft_shadow(img, rng, front, 0.6)
    whole = draw_box3d(img, front, colour, max(12, pw // 8), bool(rng.random() < 0.5))
    band = R.rand_color(rng, 20, 200)
    bh = max(18, ph // 7)
    fill_gradient(img, (x0 + 1, y0 + 1, x1 - 1, y0 + bh), shade(band, 1.1), shade(band, 0.9))
    brand = R.fake_company(rng, ascii_only=True).split(",")[0].split(" and ")[0]
    bp = text_patch(brand, bh * 0.45, R.pick_font(rng, DISPLAY_FACES))
    if bp.size[0] < pw - 16:
        paste_center(img, bp, (x0 + x1) / 2, y0 + (bh - bp.size[1]) // 2, R.ink_for(band))
    big = text_patch(category, float(rng.uniform(26, 44)), R.pick_font(rng, DISPLAY_FACES))
    y = y0 + bh + 10
    if big.size[0] < pw - 24:
        R.paste_text(img, big, x0 + 12, y, R.ink_for(shade(colour, 0.95)))
        y += big.size[1] + 8
    size = R.pick(rng, ("250 g", "500 g", "1 kg", "330 ml", "1 L", "6 pack", "12 pcs", "XL"))
    sp = text_patch(size, 13.0, R.pick_font(rng, EVIDENCE_FACES))
    if sp.size[0] < pw - 24 and y + sp.size[1] < y0 + ph // 2:
        R.paste_text(img, sp, x0 + 12, y, R.ink_for(shade(colour, 0.95)))
    code_w, code_h = min(pw // 3, 90), min(ph // 6, 40)
    if code_w > 30 and code_h > 14:
        bx, by = x1 - code_w - 10, y0 + bh + 10
        img[by:by + code_h, bx:bx + code_w] = barcode(rng, code_w, code_h)
    return whole


def draw_shelf(img: np.ndarray, rng: np.random.Generator, y: int) -> R.Box:
    """Draw a shelf board whose top edge is at row ``y`` (lit lip, shaded underside)."""
    h, w = img.shape[:2]
    wood = R.jitter_color(rng, (150, 110, 70), 30)
    lip = max(10, h // 60)
    fill_gradient(img, (0, y, w, y + lip), shade(wood, 1.2), shade(wood, 0.9))
    fill_gradient(img, (0, y + lip, w, min(h, y + lip * 3)), shade(wood, 0.55), shade(wood, 0.3))
    return 0, y, w, min(h, y + lip * 3)


def draw_neighbour_boxes(img: np.ndarray, rng: np.random.Generator, count: int, base_y: int,
                         avoid: list[R.Box]) -> list[R.Box]:
    """Draw other products standing on a shelf at ``base_y`` (Faker product names printed)."""
    h, w = img.shape[:2]
    placed: list[R.Box] = []
    for _ in range(count):
        bw = int(w * rng.uniform(0.08, 0.16))
        bh = int(h * rng.uniform(0.15, 0.3))
        x = int(rng.integers(10, max(11, w - bw - 30)))
        front = (x, base_y - bh, x + bw, base_y)
        depth = max(8, bw // 8)
        whole = (x - depth, base_y - bh - depth, x + bw + depth, base_y)
        if any(R.boxes_overlap(whole, a, 10) for a in [*avoid, *placed]) or front[1] < 10:
            continue
        colour = R.rand_color(rng, 50, 230)
        box = draw_box3d(img, front, colour, depth, bool(rng.random() < 0.5))
        name = R.fake_product(rng, ascii_only=True).split()
        p = text_patch(" ".join(name[:2]), float(rng.uniform(9, 14)), "condensed-bold")
        if p.size[0] < bw - 8:
            R.paste_text(img, p, x + 4, front[1] + 8, R.ink_for(colour))
        placed.append(box)
    return placed


# --------------------------------------------------------------------------------------------
# logo_lookup: storefront and jersey


def draw_logo_host(img: np.ndarray, rng: np.random.Generator, scene: str, logo: np.ndarray,
                   side: int, tilt: float, mask_of: Callable[[np.ndarray], np.ndarray]
                   ) -> tuple[R.Box, R.Box, np.ndarray]:
    """Draw the host object (shop front or jersey) with ``logo`` resized to ``side`` on it.

    The logo is turned ``tilt`` degrees counter-clockwise. Returns ``(host box, logo box, ink
    mask of the logo box)``; the ink mask is ``mask_of`` (a gray upright logo -> bool mask)
    turned with the logo. The host surface around the logo is a flat paint (a sign band or the
    shirt's chest), shaded only gently.
    """
    h, w = img.shape[:2]
    small = cv2.resize(logo, (side, side), interpolation=cv2.INTER_AREA)
    if scene == "storefront":
        host, (lx, ly) = draw_storefront(img, rng, side)
    else:
        host, (lx, ly) = draw_jersey(img, rng, side)
    box, ink = paste_tilted(img, small, mask_of(R.to_gray(small)), (lx + side / 2, ly + side / 2),
                            tilt)
    return host, box, ink


def draw_storefront(img: np.ndarray, rng: np.random.Generator, side: int
                    ) -> tuple[R.Box, tuple[int, int]]:
    """Draw a shop front (wall, sign band, shop window, door).

    Returns its box and the top-left of the logo's place on the sign band.
    """
    h, w = img.shape[:2]
    hw, hh = int(w * rng.uniform(0.45, 0.7)), int(h * rng.uniform(0.45, 0.65))
    hx, hy = int(rng.integers(20, w - hw - 20)), int(rng.integers(h // 5, h - hh - 10))
    wall = R.rand_color(rng, 60, 220)
    img[:] = R.soft_shadow(img, rng, (hx, hy, hx + hw, hy + hh), 0.5)
    fill_gradient(img, (hx, hy, hx + hw, hy + hh), shade(wall, 1.05), shade(wall, 0.85))
    stroke_rect(img, (hx, hy, hx + hw, hy + hh), shade(wall, 0.6), 2)
    # sign band: flat paint with a lit top edge and a shadow below
    band = R.rand_color(rng, 30, 230)
    by0, by1 = hy + hh // 12, hy + hh // 12 + side + side // 2
    cv2.rectangle(img, (hx + 8, by1), (hx + hw - 9, by1 + max(3, side // 8)),
                  shade(wall, 0.6), -1)
    cv2.rectangle(img, (hx + 8, by0), (hx + hw - 9, by1), band, -1)
    cv2.line(img, (hx + 8, by0), (hx + hw - 9, by0), shade(band, 1.3), 2, cv2.LINE_AA)
    # shop window with a reflection and a frame, a door with a handle
    wx0, wy0, wx1, wy1 = hx + hw // 12, hy + hh // 3, hx + hw // 2, hy + hh - hh // 8
    glass = R.jitter_color(rng, (120, 160, 190), 25)
    fill_gradient(img, (wx0, wy0, wx1, wy1), shade(glass, 1.15), shade(glass, 0.75))
    refl = np.array([[wx0 + (wx1 - wx0) // 5, wy0], [wx0 + (wx1 - wx0) // 3, wy0],
                     [wx0 + (wx1 - wx0) // 7, wy1], [wx0, wy1]], np.int32)
    cv2.fillPoly(img, [refl], shade(glass, 1.3), cv2.LINE_AA)
    stroke_rect(img, (wx0, wy0, wx1, wy1), (60, 60, 64), 4)
    dx0, dx1 = hx + hw * 3 // 5, hx + hw * 4 // 5
    door = R.jitter_color(rng, (90, 60, 40), 20)
    fill_gradient(img, (dx0, hy + hh // 3, dx1, hy + hh), shade(door, 1.1), shade(door, 0.8))
    stroke_rect(img, (dx0, hy + hh // 3, dx1, hy + hh), shade(door, 0.5), 3)
    cv2.circle(img, (dx1 - max(6, (dx1 - dx0) // 8), hy + hh * 2 // 3), max(3, hw // 120),
               (210, 190, 120), -1, cv2.LINE_AA)
    # an "OPEN" / hours card in the window
    g = float(rng.uniform(12, 18))
    card = card_patch([(R.pick(rng, ("OPEN", "WELCOME", "OPEN DAILY")), g, "sans-bold"),
                       (f"{int(rng.integers(7, 10))}:00 - {int(rng.integers(17, 22))}:00",
                        g * 0.7, "sans")], (250, 250, 245), (180, 30, 30), int(g * 0.5))
    ch, cw = card.shape[:2]
    if cw < (wx1 - wx0) - 20 and ch < (wy1 - wy0) - 20:
        place_patch(img, rng, card, None, (wx1 - cw - 12, wy0 + 12), 0.15, shadow=0.0)
    lx = int(rng.integers(hx + 16, hx + hw - side - 16))
    return (hx, hy, hx + hw, hy + hh), (lx, by0 + side // 4)


def draw_jersey(img: np.ndarray, rng: np.random.Generator, side: int
                ) -> tuple[R.Box, tuple[int, int]]:
    """Draw a football shirt (shaded body with folds, collar, cuffs, a number).

    Returns its box and the top-left of the crest's place on the chest.
    """
    h, w = img.shape[:2]
    hw, hh = int(w * rng.uniform(0.35, 0.5)), int(h * rng.uniform(0.6, 0.85))
    hx, hy = int(rng.integers(20, w - hw - 20)), int(rng.integers(10, h - hh - 10))
    kit = R.rand_color(rng, 20, 235)
    sl = hw // 4
    body = np.array([[hx + sl, hy], [hx + hw - sl, hy], [hx + hw, hy + hh // 4],
                     [hx + hw - sl // 2, hy + hh // 3], [hx + hw - sl, hy + hh // 5],
                     [hx + hw - sl, hy + hh], [hx + sl, hy + hh], [hx + sl, hy + hh // 5],
                     [hx + sl // 2, hy + hh // 3], [hx, hy + hh // 4]], np.int32)
    img[:] = R.soft_shadow(img, rng, (hx, hy, hx + hw, hy + hh), 0.55)
    cv2.fillPoly(img, [body], kit, cv2.LINE_AA)
    # folds: soft darker streaks on the lower body, away from the chest
    mask = np.zeros(img.shape[:2], np.uint8)
    cv2.fillPoly(mask, [body], 255)
    folds = np.zeros(img.shape[:2], np.float32)
    for _ in range(int(rng.integers(2, 5))):
        fx = int(rng.integers(hx + sl, hx + hw - sl))
        cv2.line(folds, (fx, hy + hh // 2), (fx + int(rng.integers(-hw // 6, hw // 6)), hy + hh),
                 0.16, max(4, hw // 30), cv2.LINE_AA)
    folds = cv2.GaussianBlur(folds, (0, 0), max(3.0, hw / 60)) * (mask > 0)
    region = img.astype(np.float32) * (1.0 - folds[..., None])
    img[:] = np.clip(region + 0.5, 0, 255).astype(np.uint8)
    trim = shade(kit, 0.55) if R.luminance(kit) > 110 else shade(kit, 1.8)
    cv2.polylines(img, [body], True, shade(kit, 0.6), 2, cv2.LINE_AA)
    cv2.ellipse(img, (hx + hw // 2, hy), (hw // 7, hh // 22), 0, 0, 180, trim, 5, cv2.LINE_AA)
    for cuff in ((body[2], body[3]), (body[8], body[9])):
        cv2.line(img, tuple(int(v) for v in cuff[0]), tuple(int(v) for v in cuff[1]), trim,
                 max(3, hw // 50), cv2.LINE_AA)
    number = text_patch(str(int(rng.integers(2, 30))), hh * 0.22, R.pick_font(rng, DISPLAY_FACES))
    if number.size[0] < hw - 2 * sl:
        paste_center(img, number, hx + hw / 2, hy + hh // 2, trim)
    left = bool(rng.random() < 0.5)
    lx = hx + (sl + hw // 12 if left else hw - sl - hw // 12 - side)
    ly = hy + hh // 5 + int(rng.integers(0, max(1, hh // 8)))
    return (hx, hy, hx + hw, hy + hh), (lx, ly)


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


def paste_logo(img: np.ndarray, rng: np.random.Generator, logo: np.ndarray, box: R.Box) -> None:
    """Paste a decoy ``logo`` into ``box`` as a printed sticker (shadow, thin white rim)."""
    x0, y0, x1, y1 = box
    img[:] = R.soft_shadow(img, rng, box, 0.4)
    img[y0:y1, x0:x1] = cv2.resize(logo, (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA)


# --------------------------------------------------------------------------------------------
# privacy_safe_lookup: facade and badge


def draw_facade(img: np.ndarray, rng: np.random.Generator) -> tuple[R.Box, R.Box]:
    """Draw a building facade rising from the bottom edge of the image.

    A painted wall, framed windows with sills and glass reflections, an entrance with a
    canopy. Returns ``(facade box, sign area)``
    where the sign area is the plain band at the facade's top (kept free of windows).
    """
    h, w = img.shape[:2]
    fw, fh = int(w * rng.uniform(0.5, 0.75)), int(h * rng.uniform(0.55, 0.8))
    fx, fy = int(rng.integers(10, w - fw - 10)), h - fh
    facade = R.rand_color(rng, 70, 210)
    img[:] = R.soft_shadow(img, rng, (fx, fy, fx + fw, h), 0.45)
    cv2.rectangle(img, (fx, fy), (fx + fw - 1, h - 1), facade, -1)
    cornice = max(6, fh // 60)
    fill_gradient(img, (fx - 6, fy - cornice, fx + fw + 6, fy), shade(facade, 1.2),
                  shade(facade, 0.7))
    rows, cols = int(rng.integers(3, 6)), int(rng.integers(4, 8))
    glass = R.jitter_color(rng, (110, 150, 185), 25)
    frame = R.pick(rng, ((245, 245, 240), (60, 60, 64), shade(facade, 0.6)))
    door_col = int(rng.integers(0, cols))
    for r in range(rows):
        for c in range(cols):
            x0 = fx + (c * fw) // cols + fw // (cols * 5)
            y0 = fy + fh // 5 + (r * fh * 3 // 5) // rows
            x1, y1 = x0 + fw // (cols * 2), y0 + fh // (rows * 3)
            if r == rows - 1 and c == door_col:
                continue
            fill_gradient(img, (x0, y0, x1, y1), shade(glass, 1.2), shade(glass, 0.7))
            cv2.line(img, (x0 + (x1 - x0) // 3, y0), (x0, y0 + (y1 - y0) // 2),
                     shade(glass, 1.35), max(2, (x1 - x0) // 10), cv2.LINE_AA)
            stroke_rect(img, (x0, y0, x1, y1), frame, 3)
            cv2.line(img, ((x0 + x1) // 2, y0), ((x0 + x1) // 2, y1), frame, 2)
            cv2.rectangle(img, (x0 - 4, y1), (x1 + 4, y1 + max(4, (y1 - y0) // 8)),
                          shade(facade, 1.15), -1)
    # entrance with a canopy at the bottom
    ex0 = fx + (door_col * fw) // cols + fw // (cols * 6)
    ex1 = ex0 + fw // cols - fw // (cols * 3)
    ey0 = h - max(40, fh // 4)
    fill_gradient(img, (ex0, ey0, ex1, h), (70, 60, 50), (40, 34, 30))
    stroke_rect(img, (ex0, ey0, ex1, h), shade(facade, 0.5), 3)
    canopy = np.array([[ex0 - 14, ey0 - 4], [ex1 + 14, ey0 - 4], [ex1 + 4, ey0 - 24],
                       [ex0 - 4, ey0 - 24]], np.int32)
    cv2.fillPoly(img, [canopy], shade(facade, 0.45), cv2.LINE_AA)
    return (fx, fy, fx + fw, h), (fx + 10, fy + 8, fx + fw - 10, fy + fh // 5)


def badge_card(rng: np.random.Generator, name: str, id_number: str) -> np.ndarray:
    """Return the printed badge card of ``name`` with ``id_number``.

    A header stripe with a title, a photo silhouette, the holder's name and ID, a Faker
    organisation and validity date, and a barcode.
    """
    face = R.pick_font(rng, ("sans", "condensed", "serif"))
    bold = f"{face}-bold"
    title = text_patch(R.pick(rng, BADGE_TITLES), float(rng.uniform(22, 30)), bold)
    who = text_patch(name, float(rng.uniform(20, 28)), bold)
    num = text_patch(f"ID {id_number}", float(rng.uniform(18, 24)), face)
    org = text_patch(R.fake_company(rng, ascii_only=True), 13.0, face)
    valid = text_patch(f"Valid until {R.fake_date(rng, '%d %b %Y')}", 11.0, face)
    photo = max(60, who.size[1] * 3)
    text_w = max(who.size[0], num.size[0], org.size[0], valid.size[0])
    bw = max(title.size[0] + 40, photo + text_w + 50)
    head = 30 + title.size[1]
    bh = head + max(photo, who.size[1] + num.size[1] + org.size[1] + 50) + 60
    card = np.empty((bh, bw, 3), np.uint8)
    card[:] = R.jitter_color(rng, (245, 245, 240), 8)
    stripe = R.rand_color(rng, 30, 200)
    card[:head] = stripe
    R.paste_text(card, title, (bw - title.size[0]) // 2, 15, R.ink_for(stripe))
    px, py = 16, head + 14
    cv2.rectangle(card, (px, py), (px + photo - 1, py + photo - 1), (200, 205, 212), -1)
    cv2.circle(card, (px + photo // 2, py + photo * 2 // 5), photo // 5, (150, 156, 166), -1,
               cv2.LINE_AA)
    cv2.ellipse(card, (px + photo // 2, py + photo), (photo * 2 // 5, photo * 2 // 5), 0, 180,
                360, (150, 156, 166), -1, cv2.LINE_AA)
    tx, y = px + photo + 18, head + 14
    R.paste_text(card, who, tx, y, (20, 20, 24))
    y += who.size[1] + 14
    R.paste_text(card, num, tx, y, (40, 40, 44))
    y += num.size[1] + 14
    R.paste_text(card, org, tx, y, (70, 70, 76))
    R.paste_text(card, valid, 16, bh - 40, (90, 90, 96))
    code_w = min(bw // 3, 120)
    card[bh - 44:bh - 14, bw - code_w - 16:bw - 16] = barcode(rng, code_w, 30)
    cv2.rectangle(card, (0, 0), (bw - 1, bh - 1), (170, 170, 170), 1)
    return card


def draw_badge(img: np.ndarray, rng: np.random.Generator, name: str, id_number: str,
               bounds: R.Box, occupied: list[R.Box]) -> R.Box:
    """Draw a readable lanyard badge (title, person name, ID) in ``bounds``; return its box.

    The card is held at an angle (a perspective placement with a soft shadow) below a lanyard.
    """
    card = badge_card(rng, name, id_number)
    bh, bw = card.shape[:2]
    h, w = img.shape[:2]
    stripe = R.rand_color(rng, 30, 200)
    for attempt in range(6):
        # the lanyard (60 px above the card) is part of the placed box: it must not cross a plate
        x, y = place(rng, (bw + 20, bh + 80), bounds, occupied, (10, 10, w - 10, h - 10))
        y += 60
        tilt = float(rng.uniform(0.1, 0.25)) if attempt < 5 else 0.0
        done = place_patch(img, rng, card, None, (x + 10, y), tilt, shadow=0.6,
                           avoid=[R.grow_box(b, 8, w, h) for b in occupied])
        if done is not None:
            break
    else:  # pragma: no cover - an upright card fits the spot ``place`` found
        raise RuntimeError("no place for the badge")
    box = done[0]
    cx = x + 10 + bw // 2
    cv2.line(img, (cx - bw // 6, max(0, y - 60)), (cx, y + 6), stripe, 8, cv2.LINE_AA)
    cv2.line(img, (cx + bw // 6, max(0, y - 60)), (cx, y + 6), shade(stripe, 0.8), 8,
             cv2.LINE_AA)
    return (min(x, box[0]), max(0, y - 60), max(x + bw + 20, box[2]), max(y + bh + 20, box[3]))
