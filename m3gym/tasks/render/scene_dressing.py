"""What fills a lookup scene around its evidence: readable stickers, props, the surface.

Decorative text (product names, prices, addresses, companies, dates) comes from Faker
(:mod:`~m3gym.tasks.render.content`); the facts a task asks about never come from here.
"""

from __future__ import annotations

import cv2
import numpy as np

from m3gym.tasks import render as R
from m3gym.tasks.render.scene_primitives import (
    DISPLAY_FACES,
    EVIDENCE_FACES,
    card_patch,
    draw_box3d,
    place_patch,
)

STICKER_KINDS: tuple[str, ...] = ("price", "address", "notice", "lot")
"""Kinds of decorative stickers :func:`add_stickers` prints."""


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
            R.soft_shadow(img, rng, front, 0.5, keep=[*avoid, *placed], inplace=True)
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
