"""The ``code_lookup`` scene: a product package on a shelf, among other products."""

from __future__ import annotations

import numpy as np

from m3gym.tasks import render as R
from m3gym.tasks.render.scene_primitives import (
    DISPLAY_FACES,
    EVIDENCE_FACES,
    barcode,
    draw_box3d,
    fill_gradient,
    paste_center,
    shade,
    text_patch,
)


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
    R.soft_shadow(img, rng, front, 0.6, inplace=True)
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
