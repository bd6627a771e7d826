"""Textured backgrounds with a lighting gradient and a vignette.

Kinds: gradient, noise, paper, wood, brick, asphalt, sky, fabric. Rendered at low resolution
and upscaled once, so a 1600 px scene costs about two milliseconds.
"""

from __future__ import annotations

import cv2
import numpy as np

from m3gym.tasks.render.util import jitter_color, rand_color, solid_image

BACKGROUND_KINDS: tuple[str, ...] = (
    "gradient", "noise", "paper", "wood", "brick", "asphalt", "sky", "fabric",
)
"""Kinds accepted by :func:`background`."""



BACKGROUND_DETAIL: int = 192
"""Longest side, in pixels, at which :func:`background` computes its texture by default."""



def _smooth_field(rng: np.random.Generator, h: int, w: int, cells: int) -> np.ndarray:
    """Return a float32 ``(h, w)`` smooth random field in [0, 1] (bicubic from a coarse grid)."""
    gh = max(2, cells * h // max(h, w) + 2)
    gw = max(2, cells * w // max(h, w) + 2)
    coarse = rng.random((gh, gw), dtype=np.float32)
    field = cv2.resize(coarse, (w, h), interpolation=cv2.INTER_CUBIC)
    return np.clip(field, 0.0, 1.0, out=field)



def lighting_field(rng: np.random.Generator, h: int, w: int, strength: float = 0.25) -> np.ndarray:
    """Return a float32 ``(h, w)`` light map: a linear gradient in a random direction.

    Values lie in ``[1 - strength, 1]``.
    """
    angle = rng.uniform(0, 2 * np.pi)
    xs = np.linspace(0.0, 1.0, w, dtype=np.float32) * np.float32(np.cos(angle))
    ys = np.linspace(0.0, 1.0, h, dtype=np.float32) * np.float32(np.sin(angle))
    lo = float(min(xs[0], xs[-1]) + min(ys[0], ys[-1]))
    hi = float(max(xs[0], xs[-1]) + max(ys[0], ys[-1]))
    k = np.float32(strength / max(hi - lo, 1e-6))
    # 1 - k * (x + y - lo), built from the two 1-D ramps by one broadcast add
    return (np.float32(1.0 + k * lo) - k * xs)[None, :] - (k * ys)[:, None]



def vignette_field(h: int, w: int, strength: float = 0.3) -> np.ndarray:
    """Return a float32 ``(h, w)`` radial map: 1 at the centre, ``1 - strength`` at the corners."""
    k = np.float32(strength / 0.5)
    xs = np.float32(1.0) - k * np.linspace(-0.5, 0.5, w, dtype=np.float32) ** 2
    ys = k * np.linspace(-0.5, 0.5, h, dtype=np.float32) ** 2
    return xs[None, :] - ys[:, None]



def _ramp_rgb(field: np.ndarray, c0: np.ndarray, c1: np.ndarray) -> np.ndarray:
    """Return the float32 RGB image ``c1 + (c0 - c1) * field`` (``field`` is ``(h, w)``)."""
    return c1 + field[..., None] * (c0 - c1)



def _base_texture(rng: np.random.Generator, kind: str, h: int, w: int) -> np.ndarray:
    """Return a float32 RGB texture of ``kind`` at (low) resolution ``(h, w)``, values 0..255."""
    if kind == "gradient":
        c0 = np.array(rand_color(rng, 40, 240), np.float32)
        c1 = np.array(rand_color(rng, 40, 240), np.float32)
        return _ramp_rgb(lighting_field(rng, h, w, 1.0), c0, c1)
    if kind in ("noise", "asphalt", "fabric", "paper"):
        base = {
            "noise": rand_color(rng, 60, 220),
            "asphalt": jitter_color(rng, (92, 92, 96), 20),
            "fabric": rand_color(rng, 50, 200),
            "paper": jitter_color(rng, (232, 226, 210), 12),
        }[kind]
        amp = np.float32({"noise": 60.0, "asphalt": 28.0, "fabric": 30.0, "paper": 14.0}[kind])
        field = _smooth_field(rng, h, w, 6)
        field *= amp
        g = rng.random((h, w), dtype=np.float32)
        g *= np.float32(0.6) * amp
        field += g
        field -= np.float32(0.8) * amp  # both terms centred on zero
        if kind == "fabric":
            weave = (np.float32(10.0) * np.sin(np.arange(h, dtype=np.float32) * 1.3))[:, None]
            field += weave * np.sin(np.arange(w, dtype=np.float32) * 1.3)[None, :]
        return np.array(base, np.float32) + field[..., None]
    if kind == "wood":
        base = np.array(jitter_color(rng, (150, 105, 65), 25), np.float32)
        warp = _smooth_field(rng, h, w, 4)
        freq = np.float32(rng.uniform(0.25, 0.6))
        phase = np.arange(h, dtype=np.float32)[:, None] * freq + (
            np.sin(np.arange(w, dtype=np.float32) * 0.02) * 2.0)[None, :]
        warp *= np.float32(36.0) * freq
        warp += phase
        grain = np.sin(warp, out=warp)
        grain *= np.float32(0.14)
        grain += np.float32(0.82)
        return grain[..., None] * base
    if kind == "brick":
        mortar = jitter_color(rng, (200, 195, 185), 15)
        img = solid_image(h, w, mortar, np.float32)
        bh = max(3, int(rng.integers(h // 14 + 2, h // 8 + 3)))
        bw = bh * 2 + 1
        brick = np.array(jitter_color(rng, (160, 70, 50), 25), np.float64)
        rows = range(0, h, bh)
        per_row = -(-(w + bw) // bw)
        shades = rng.uniform(0.8, 1.15, size=(len(rows), per_row))
        cols = np.minimum(255.0, shades[..., None] * brick).tolist()
        for row, y in enumerate(rows):
            shift = (bw // 2) * (row % 2)
            for i, x in enumerate(range(-shift, w, bw)):
                cv2.rectangle(img, (x + 1, y + 1), (x + bw - 1, y + bh - 1), cols[row][i], -1)
        return img
    if kind == "sky":
        top = np.array(jitter_color(rng, (70, 130, 210), 25), np.float32)
        bottom = np.array(jitter_color(rng, (190, 215, 240), 15), np.float32)
        t = np.linspace(0, 1, h, dtype=np.float32)[:, None, None]
        sky = top * (1 - t) + bottom * t
        clouds = _smooth_field(rng, h, w, 5)
        clouds -= np.float32(0.55)
        clouds *= np.float32(3.0)
        clouds = np.clip(clouds, 0, 1, out=clouds)[..., None]
        return sky + clouds * (np.float32(245.0) - sky)
    raise ValueError(f"unknown background kind {kind!r}; known: {', '.join(BACKGROUND_KINDS)}")



def background(
    rng: np.random.Generator, height: int, width: int, kind: str | None = None,
    lighting: float | None = None, vignette: float | None = None, detail: int | None = None,
) -> np.ndarray:
    """Return a ``uint8`` RGB ``(height, width, 3)`` textured background.

    The texture, lighting gradient and vignette are computed at ``1/detail`` resolution (by
    default so that the longest side is about :data:`BACKGROUND_DETAIL` px) and upscaled once
    (bilinear), the only full-size pass. ``kind`` is one of :data:`BACKGROUND_KINDS` (random if
    ``None``); ``lighting`` / ``vignette`` are darkening strengths in ``[0, 1)`` (random if
    ``None``).
    """
    if kind is None:
        kind = BACKGROUND_KINDS[int(rng.integers(len(BACKGROUND_KINDS)))]
    if detail is None:
        detail = max(1, -(-max(height, width) // BACKGROUND_DETAIL))
    sh, sw = max(2, height // detail), max(2, width // detail)
    tex = _base_texture(rng, kind, sh, sw)
    light = rng.uniform(0.0, 0.3) if lighting is None else lighting
    vig = rng.uniform(0.0, 0.35) if vignette is None else vignette
    shade = lighting_field(rng, sh, sw, light)
    shade *= vignette_field(sh, sw, vig)
    tex *= shade[..., None]
    small = np.empty((sh, sw, 3), np.uint8)
    np.clip(tex, 0, 255, out=tex)
    np.copyto(small, tex, casting="unsafe")
    return cv2.resize(small, (width, height), interpolation=cv2.INTER_LINEAR)
