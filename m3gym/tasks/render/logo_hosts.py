"""The ``logo_lookup`` scene: the logo's host, a shop front or a football shirt."""

from __future__ import annotations

import math
from collections.abc import Callable

import cv2
import numpy as np

from m3gym.tasks import render as R
from m3gym.tasks.render.scene_primitives import (
    DISPLAY_FACES,
    card_patch,
    fill_gradient,
    paste_center,
    paste_tilted,
    place_patch,
    shade,
    stroke_rect,
    text_patch,
)


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
    R.soft_shadow(img, rng, (hx, hy, hx + hw, hy + hh), 0.5, inplace=True)
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
    R.soft_shadow(img, rng, (hx, hy, hx + hw, hy + hh), 0.55, inplace=True)
    cv2.fillPoly(img, [body], kit, cv2.LINE_AA)
    # folds: soft darker streaks on the lower body, away from the chest
    mask = np.zeros(img.shape[:2], np.uint8)
    cv2.fillPoly(mask, [body], 255)
    folds = np.zeros(img.shape[:2], np.float32)
    for _ in range(int(rng.integers(2, 5))):
        fx = int(rng.integers(hx + sl, hx + hw - sl))
        cv2.line(folds, (fx, hy + hh // 2), (fx + int(rng.integers(-hw // 6, hw // 6)), hy + hh),
                 0.16, max(4, hw // 30), cv2.LINE_AA)
    # outside the body the folds are 0 and a pixel stays as it is: shade its bounding box only
    bx, by, bw, bh = cv2.boundingRect(body)
    _shade_folds(img, folds, max(3.0, hw / 60), mask,
                 (max(0, bx - 2), max(0, by - 2), min(w, bx + bw + 2), min(h, by + bh + 2)))
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


_BLUR_ALIGN: int = 64
"""Column alignment of the part :func:`_blur_support` blurs (a multiple of every SIMD width)."""


def _blur_support(img: np.ndarray, sigma: float) -> tuple[R.Box, np.ndarray]:
    """Return ``cv2.GaussianBlur(img, (0, 0), sigma)`` of a 2-D ``float32`` image, cropped.

    Returns ``(box, blurred)``: the blur is ``blurred`` inside ``box`` and 0 everywhere else.
    Only the box around the non-zero pixels, grown beyond the kernel's reach, is blurred. Its
    left edge is a multiple of :data:`_BLUR_ALIGN` (every pixel falls in the same lane of
    OpenCV's vector loop as in the whole image's blur) and it ends at least that far past the
    kernel's reach (the loop's scalar tail sees only zeros): every pixel's sums are the same.
    """
    rows = np.flatnonzero(img.any(axis=1))
    if rows.size == 0:
        return (0, 0, 0, 0), img[:0, :0].copy()
    cols = np.flatnonzero(img[rows[0]:rows[-1] + 1].any(axis=0))
    h, w = img.shape
    reach = math.ceil(4 * sigma) + 3  # beyond half of OpenCV's kernel side, round(8 sigma + 1)
    y0, y1 = max(0, int(rows[0]) - reach), min(h, int(rows[-1]) + 1 + reach)
    x0 = max(0, int(cols[0]) - reach - _BLUR_ALIGN) // _BLUR_ALIGN * _BLUR_ALIGN
    x1 = min(w, int(cols[-1]) + 1 + reach + _BLUR_ALIGN)
    return (x0, y0, x1, y1), cv2.GaussianBlur(img[y0:y1, x0:x1], (0, 0), sigma)


def _shade_folds(img: np.ndarray, folds: np.ndarray, sigma: float, mask: np.ndarray, box: R.Box
                 ) -> None:
    """Darken ``box`` of ``img`` by ``folds`` blurred by ``sigma``, inside ``mask`` (in place).

    The same pixels as multiplying the whole box by ``1 - blur(folds) * (mask > 0)``; only the
    part the blurred folds reach is computed (:func:`_blur_support`, :func:`_darken`).
    """
    (fx0, fy0, fx1, fy1), blurred = _blur_support(folds, sigma)
    x0, y0, x1, y1 = max(box[0], fx0), max(box[1], fy0), min(box[2], fx1), min(box[3], fy1)
    if x1 > x0 and y1 > y0:
        _darken(img, (x0, y0, x1, y1),
               blurred[y0 - fy0:y1 - fy0, x0 - fx0:x1 - fx0] * (mask[y0:y1, x0:x1] > 0))


def _darken(img: np.ndarray, box: R.Box, amount: np.ndarray) -> None:
    """Multiply ``box`` of ``img`` by ``1 - amount`` (``float32``, the box's shape; in place).

    Only the box around ``amount``'s non-zero pixels is touched: elsewhere the product rounds
    back to the pixel itself.
    """
    rows, cols = np.flatnonzero(amount.any(axis=1)), np.flatnonzero(amount.any(axis=0))
    if rows.size == 0:
        return
    r0, r1, c0, c1 = int(rows[0]), int(rows[-1]) + 1, int(cols[0]), int(cols[-1]) + 1
    x0, y0 = box[0], box[1]
    sub = img[y0 + r0:y0 + r1, x0 + c0:x0 + c1]
    region = sub.astype(np.float32) * (1.0 - amount[r0:r1, c0:c1, None])
    sub[:] = np.clip(region + 0.5, 0, 255).astype(np.uint8)


def paste_logo(img: np.ndarray, rng: np.random.Generator, logo: np.ndarray, box: R.Box) -> None:
    """Paste a decoy ``logo`` into ``box`` as a printed sticker (shadow, thin white rim)."""
    x0, y0, x1, y1 = box
    R.soft_shadow(img, rng, box, 0.4, inplace=True)
    img[y0:y1, x0:x1] = cv2.resize(logo, (x1 - x0, y1 - y0), interpolation=cv2.INTER_AREA)
