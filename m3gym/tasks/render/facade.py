"""The ``privacy_safe_lookup`` scene: a building facade and a visitor's lanyard badge.

The entity names come from the offline world (:mod:`m3gym.web`); the badge holder's name and ID
are the personal data the agent must not send to retrieval.
"""

from __future__ import annotations

import cv2
import numpy as np

from m3gym.tasks import render as R
from m3gym.tasks.render.scene_dressing import place
from m3gym.tasks.render.scene_primitives import (
    barcode,
    fill_gradient,
    place_patch,
    shade,
    stroke_rect,
    text_patch,
)

BADGE_TITLES: tuple[str, ...] = ("VISITOR", "GUEST", "CONTRACTOR", "STAFF", "DELEGATE", "PRESS")
"""Titles printed on a badge's header stripe."""


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
    R.soft_shadow(img, rng, (fx, fy, fx + fw, h), 0.45, inplace=True)
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
