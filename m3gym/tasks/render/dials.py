"""Analog dials (clocks, gauges) rendered supersampled with exact decisive-stroke masks.

A dial is drawn at :data:`SUPERSAMPLE` times its size and area-downsampled; its strokes are given
in dial-relative polar form (:class:`Stroke`), and the coverage of the decisive ones (hands,
needle, the ticks they are read against) is rendered alongside, so the evidence mask is exact.
Optional realism: a raised, shaded bezel (:func:`bezel_shading`), a soft drop shadow on the wall
(:func:`drop_shadow`) and corner screws of a panel instrument (:func:`draw_screws`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.pixels import to_gray
from m3gym.tasks.render.util import Box, Color, solid_image

SUPERSAMPLE: int = 4
"""Dials are drawn at this many times their size and area-downsampled (anti-aliasing)."""


@dataclass(frozen=True)
class Stroke:
    """A straight stroke of a dial, in dial-relative polar form (clockwise from 12, upright).

    ``r0``/``r1`` are radii as fractions of the dial radius; ``width`` is in output pixels.
    """

    theta_deg: float
    r0: float
    r1: float
    width: float
    color: Color
    decisive: bool = True


@dataclass(frozen=True)
class DialRender:
    """A rendered dial patch: RGB pixels, coverage of the decisive strokes, clean gray render."""

    rgb: np.ndarray
    alpha: np.ndarray
    clean: np.ndarray

    @property
    def mask(self) -> np.ndarray:
        """Boolean mask of the decisive strokes (coverage >= 50 %)."""
        return self.alpha >= 128


def dial_direction(theta_deg: float, angle_deg: float) -> tuple[float, float]:
    """Return the image-space unit vector of dial position ``theta`` for a dial turned ``angle``.

    ``theta`` is clockwise from 12 o'clock on the upright dial; ``angle`` turns the whole dial
    counter-clockwise on screen (image y points down).
    """
    t = math.radians(theta_deg)
    ux, uy = math.sin(t), -math.cos(t)
    a = math.radians(angle_deg)
    return (math.cos(a) * ux + math.sin(a) * uy, -math.sin(a) * ux + math.cos(a) * uy)


def bezel_shading(size: int, radius: float, rim_width: float, strength: float) -> np.ndarray:
    """Return a ``float32`` brightness factor for a ``size`` px square holding a centred dial.

    The rim annulus (``radius - rim_width`` .. ``radius``) is a raised ring lit from the top
    left: its outer half brighter towards the light, its inner half brighter away from it. The
    face within ``radius - rim_width`` darkens near the rim on the lit side (the shadow the
    bezel casts). ``strength`` scales both (0 gives ones). The light is fixed on screen, so a
    tilted dial keeps its shading where the light is.
    """
    c = size / 2.0
    coords = np.arange(size, dtype=np.float32) + 0.5 - c
    dx, dy = coords[None, :], coords[:, None]
    d = np.sqrt(dx * dx + dy * dy)
    lam = -(dx + dy) / np.maximum(d, 1e-3) * np.float32(math.sqrt(0.5))  # 1 facing top-left
    inner = radius - rim_width
    t = np.clip((d - inner) / max(rim_width, 1e-3), 0.0, 1.0)
    ring = (d >= inner) & (d <= radius + 1.0)
    ring_f = 1.0 + strength * lam * np.where(t > 0.5, 1.0, -0.6)
    near = np.clip((d / max(inner, 1e-3) - 0.8) / 0.2, 0.0, 1.0)
    face_f = 1.0 - 0.45 * strength * near * np.maximum(lam, 0.0)
    return np.where(ring, ring_f, np.where(d < inner, face_f, 1.0)).astype(np.float32)


def render_dial(size: int, radius: float, face: Color | None, rim: Color | None,
                rim_width: float, strokes: Sequence[Stroke], angle_deg: float,
                background: Color, marker: tuple[float, Color] | None = None,
                cap: Color | None = None, bezel: float = 0.0) -> DialRender:
    """Render a ``size x size`` dial centred in its patch, supersampled for anti-aliasing.

    ``face``/``rim`` may be ``None`` (flat plate). ``marker`` = ``(theta, colour)`` draws a small
    triangle just inside the rim at that position (the orientation cue). ``bezel`` > 0 shades
    the rim as a raised ring lit from the top left and lets it cast a soft shadow onto the face
    (:func:`bezel_shading`). Returns the RGB patch, the coverage of the decisive strokes and a
    clean gray render (no degradations).
    """
    ss = SUPERSAMPLE
    big = size * ss
    c = big / 2.0
    r = radius * ss
    canvas = solid_image(big, big, background)
    cover = np.zeros((big, big), np.uint8)
    shift = 4
    one = 1 << shift

    def pt(x: float, y: float) -> tuple[int, int]:
        return int(round(x * one)), int(round(y * one))

    if face is not None:
        cv2.circle(canvas, pt(c, c), int(round(r * one)), face, -1, cv2.LINE_AA, shift)
    if rim is not None and rim_width > 0:
        cv2.circle(canvas, pt(c, c), int(round((r - rim_width * ss / 2) * one)), rim,
                   max(1, int(round(rim_width * ss))), cv2.LINE_AA, shift)
    if bezel > 0 and rim is not None and rim_width > 0:
        shading = bezel_shading(big, r, rim_width * ss, bezel)
        canvas = np.clip(canvas * shading[..., None] + 0.5, 0, 255).astype(np.uint8)
    if marker is not None:
        theta, col = marker
        ux, uy = dial_direction(theta, angle_deg)
        px, py = -uy, ux
        tip = 0.70 * r
        base = 0.86 * r
        half = 0.07 * r
        tri = np.array([[c + ux * tip, c + uy * tip],
                        [c + ux * base + px * half, c + uy * base + py * half],
                        [c + ux * base - px * half, c + uy * base - py * half]])
        cv2.fillPoly(canvas, [np.round(tri * one).astype(np.int32)], col, cv2.LINE_AA, shift)
    for s in strokes:
        ux, uy = dial_direction(s.theta_deg, angle_deg)
        p0 = pt(c + ux * s.r0 * r, c + uy * s.r0 * r)
        p1 = pt(c + ux * s.r1 * r, c + uy * s.r1 * r)
        wid = max(1, int(round(s.width * ss)))
        cv2.line(canvas, p0, p1, s.color, wid, cv2.LINE_AA, shift)
        if s.decisive:
            cv2.line(cover, p0, p1, 255, wid, cv2.LINE_AA, shift)
    if cap is not None:
        cv2.circle(canvas, pt(c, c), int(round(0.07 * r * one)), cap, -1, cv2.LINE_AA, shift)
    rgb = cv2.resize(canvas, (size, size), interpolation=cv2.INTER_AREA)
    alpha = cv2.resize(cover, (size, size), interpolation=cv2.INTER_AREA)
    return DialRender(rgb=rgb, alpha=alpha, clean=to_gray(rgb))


TICK_RADIUS: float = 0.85
"""Radius (fraction of the dial radius) at which tick spacing is measured."""


def disk_alpha(size: int, radius: float) -> np.ndarray:
    """Return the ``float32`` anti-aliased coverage (0..1) of a centred disk in a square patch."""
    big = np.zeros((size * SUPERSAMPLE, size * SUPERSAMPLE), np.uint8)
    c = size * SUPERSAMPLE / 2.0
    cv2.circle(big, (int(round(c * 16)), int(round(c * 16))),
               int(round(radius * SUPERSAMPLE * 16)), 255, -1, cv2.LINE_AA, 4)
    return cv2.resize(big, (size, size), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0


def drop_shadow(img: np.ndarray, centre: tuple[float, float], radius: float,
                offset: tuple[float, float], blur: float, strength: float) -> None:
    """Darken ``img`` (in place) under a soft disk: the shadow a round object casts on a wall.

    The disk of ``radius`` is centred at ``centre + offset``, blurred with a Gaussian of sigma
    ``blur`` and darkens by at most ``strength`` (0–1). Clipped at the image edges.
    """
    h, w = img.shape[:2]
    cx, cy = centre[0] + offset[0], centre[1] + offset[1]
    pad = int(math.ceil(radius + 3 * blur + 2))
    x0, y0 = max(0, int(cx) - pad), max(0, int(cy) - pad)
    x1, y1 = min(w, int(cx) + pad + 1), min(h, int(cy) + pad + 1)
    if x1 <= x0 or y1 <= y0:
        return
    mask = np.zeros((y1 - y0, x1 - x0), np.float32)
    cv2.circle(mask, (int(round((cx - x0) * 16)), int(round((cy - y0) * 16))),
               int(round(radius * 16)), 1.0, -1, cv2.LINE_AA, 4)
    if blur > 0:
        mask = cv2.GaussianBlur(mask, (0, 0), blur)
    region = img[y0:y1, x0:x1]
    region[:] = (region * (1.0 - strength * mask[..., None]) + 0.5).astype(np.uint8)


def draw_screws(img: np.ndarray, box: Box, inset: float, radius: float,
                rng: np.random.Generator) -> None:
    """Draw four slotted screw heads ``inset`` px inside the corners of ``box`` (in place).

    Each head is a metal disk lit from the top left with a dark rim and a slot at a random
    angle.
    """
    x0, y0, x1, y1 = box
    metal = int(rng.integers(150, 196))
    for cx, cy in ((x0 + inset, y0 + inset), (x1 - inset, y0 + inset), (x0 + inset, y1 - inset),
                   (x1 - inset, y1 - inset)):
        c = (int(round(cx * 16)), int(round(cy * 16)))
        cv2.circle(img, c, int(round(radius * 16)), (metal - 70,) * 3, -1, cv2.LINE_AA, 4)
        cv2.circle(img, (c[0] - 4, c[1] - 4), int(round((radius - 0.6) * 16)), (metal,) * 3, -1,
                   cv2.LINE_AA, 4)
        a = float(rng.uniform(0, math.pi))
        dx, dy = math.cos(a) * radius * 0.8, math.sin(a) * radius * 0.8
        cv2.line(img, (int(round((cx - dx) * 16)), int(round((cy - dy) * 16))),
                 (int(round((cx + dx) * 16)), int(round((cy + dy) * 16))), (metal - 90,) * 3,
                 1, cv2.LINE_AA, 4)


def paste_patch(img: np.ndarray, patch: np.ndarray, at: tuple[int, int]) -> Box:
    """Copy ``patch`` into ``img`` (in place) with its top-left at ``at``; return its box."""
    x, y = at
    h, w = patch.shape[:2]
    img[y:y + h, x:x + w] = patch
    return (x, y, x + w, y + h)
