"""Drawing primitives of the object scenes: gradients, cards, extruded boxes, placed patches.

Shared by the scenes of the lookup families (:mod:`~m3gym.tasks.render.product_package`,
:mod:`~m3gym.tasks.render.logo_hosts`, :mod:`~m3gym.tasks.render.facade`), their evidence
(:mod:`~m3gym.tasks.render.faint_labels`), their dressing
(:mod:`~m3gym.tasks.render.scene_dressing`) and the supermarket shelf. Objects are drawn with
depth and shading (extruded boxes with lit tops and shaded sides, soft drop shadows), printed
surfaces as flat patches placed through a homography
(:func:`~m3gym.tasks.render.camera.perspective_quad` /
:func:`~m3gym.tasks.render.camera.warp_patch`), all text in TrueType faces. Pure functions of a
passed ``np.random.Generator``; they draw into an RGB ``uint8`` image in place and return the
pixel boxes of what they drew.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import cv2
import numpy as np

from m3gym.tasks import render as R

EVIDENCE_FACES: tuple[str, ...] = ("sans", "mono", "condensed", "serif")
"""TrueType faces of evidence text (regular weights: the strokes stay thin at 7-10 px)."""

DISPLAY_FACES: tuple[str, ...] = ("sans-bold", "condensed-bold", "serif-bold", "mono-bold")
"""Faces of large printed words (brand names, category words, stamps)."""


def shade(color: Sequence[float], factor: float) -> R.Color:
    """Return ``color`` scaled by ``factor`` (clipped to 0..255)."""
    # min/max on the scalar product: np.clip's value without its per-call array overhead
    return tuple(int(min(max(c * factor, 0), 255)) for c in color)  # type: ignore[return-value]


def _gradient_column(h: int, top: Sequence[float], bottom: Sequence[float]) -> np.ndarray:
    """Return the ``(max(h, 1), 1, 3)`` ``uint8`` column of a vertical gradient ``h`` rows tall."""
    t = np.linspace(0.0, 1.0, max(h, 1), dtype=np.float32)[:, None, None]
    a, b = np.asarray(top, np.float32), np.asarray(bottom, np.float32)
    return (a * (1 - t) + b * t + 0.5).astype(np.uint8)


def _fill_columns(region: np.ndarray, column: np.ndarray) -> None:
    """Write ``column`` (``(h, 1, 3)``) into every column of ``region`` (``(h, w, 3)``, in place).

    The filled part is doubled by block copies (``log2(w)`` row-wise copies of whole pixels)
    instead of broadcasting, which numpy does three bytes at a time: the same bytes, about ten
    times faster on a wide region.
    """
    w = region.shape[1]
    if w == 0:
        return
    region[:, :1] = column
    done = 1
    while done < w:
        n = min(done, w - done)
        region[:, done:done + n] = region[:, :n]
        done += n


def vertical_gradient(h: int, w: int, top: Sequence[float], bottom: Sequence[float]
                      ) -> np.ndarray:
    """Return an ``(h, w, 3)`` ``uint8`` patch fading from ``top`` to ``bottom``."""
    out = np.empty((h, w, 3), np.uint8)
    _fill_columns(out, _gradient_column(h, top, bottom)[:h])
    return out


def fill_gradient(img: np.ndarray, box: R.Box, top: Sequence[float], bottom: Sequence[float]
                  ) -> None:
    """Fill ``box`` of ``img`` with a vertical gradient (in place)."""
    hh, ww = img.shape[:2]
    x0, y0, x1, y1 = R.grow_box(box, 0, ww, hh)
    if x1 > x0 and y1 > y0:
        _fill_columns(img[y0:y1, x0:x1], _gradient_column(y1 - y0, top, bottom))


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
    The shadow itself stops short of every ``avoid`` box (:func:`R.soft_shadow`'s ``keep``).
    """
    h, w = rgb.shape[:2]
    quad = R.perspective_quad(rng, w, h, tilt) + np.asarray(at, np.float64)
    if avoid:
        qb = R.quad_box(quad, img.shape[1], img.shape[0])
        if any(R.boxes_overlap(qb, a, 0.06 * max(w, h) + 4) for a in avoid):
            return None
    if shadow > 0:
        R.soft_shadow(img, rng, quad, shadow, keep=avoid, inplace=True)
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
