"""Shared code of the classic-RL suite: level-1 glyph tasks at low resolution, fixed answers.

The three families mirror ``M3Bench-L1`` families (a zoomed ``crop``, a turned card read after a
``crop``, ``autocontrast``) on small images (``side`` = 288 px, 384 px for ``glyph_zoom`` and
``glyph_rotate``, seen through a 96-px view), and every task
asks for one digit of :data:`GLYPHS` with the choices always listed in the same order. A choice
index therefore means the same digit in every episode, so a pixel policy can learn a classifier,
and every tool call costs microseconds: this is the suite for stable-baselines3-style training
(``M3Bench-Classic``, ``M3Bench-Classic-Discrete``). Checkpoints, rewards and the M3 score work
exactly as in the benchmark levels, scored at the families' :attr:`view_size` of 96 px.

* ``glyph_zoom`` — a digit on a small red-framed tag in a cluttered scene, 3–3.25 px tall in the
  view: one ``crop`` around the tag (a 3x3 grid cell or a quadrant) makes it legible.
* ``glyph_rotate`` — a small digit card lying turned by 90/180/270 degrees or mirrored, 2.6-2.9
  px tall in the view: one ``crop`` of the card shows it legibly, read as it lies.
* ``glyph_faint`` — a digit printed a few gray levels from its paper in a washed-out photo: one
  ``autocontrast`` restores it.

Classic RL builds a fresh task every episode, so the scenes have their own fast path (no
frozen split holds these families, so their bytes are free to change): a 48-px texture
background (:func:`glyph_surface`), clutter drawn from two batched draws (:func:`glyph_clutter`),
digit heights rounded to a 1/4-1 px grid so patches come from a cache (:func:`glyph_patch`), and
noise std rounded to :data:`NOISE_SIGMA_STEP` (:func:`glyph_noise`). The shared renderers
(``backgrounds``, ``clutter``, ``add_sensor_noise``) are unchanged, so the frozen families keep
their bytes.
"""

from __future__ import annotations

from dataclasses import replace
from functools import lru_cache
from typing import Any

import cv2
import numpy as np

from m3gym.spec import AnswerSpec, Checkpoint, Evidence, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.registry import FamilyConfig
from m3gym.tasks.render.photo_scene import current_photo_scene, photo_backdrop

GLYPHS: tuple[str, ...] = tuple("01234567")
"""The answer set of every classic task, in the fixed order of the choices (no 9: it is a 6 turned
upside down)."""

CLASSIC_VIEW: int = 96
"""View size (longest side) the classic families are designed and scored for."""

CLASSIC_MIN_VIEW_HEIGHT: float = 6.0
"""A digit from a closed set of eight is legible at 6 px (text codes need 9)."""

TAG_FRAME: R.Color = (220, 30, 30)
"""Frame colour of the target tag in ``glyph_zoom`` (decoy tags have none)."""

BACKGROUNDS: tuple[str, ...] = ("wood", "fabric", "noise", "gradient", "asphalt", "brick")
"""Background textures the classic scenes draw from."""

GLYPH_TEXTURE_SIDE: int = 48
"""Longest side, in pixels, at which :func:`glyph_surface` computes the background texture
(half the 96 px view: the texture is smooth in the view, and it costs a fifth of the default
192 px texture)."""

NOISE_SIGMA_STEP: float = 0.25
"""Grid, in gray levels, that :func:`glyph_noise` rounds the noise std to."""

CLUTTER_TRIES: int = 8
"""Random positions :func:`glyph_clutter` tries per object before skipping it."""

CLUTTER_MARGIN: int = 6
"""Free pixels :func:`glyph_clutter` keeps between an object and every other box."""

_CLUTTER_KINDS: int = 6
_POLY_MAX: int = 6
_U_POS: int = 4  # first column of the positions in glyph_clutter's uniform draws
_U_POLY: int = _U_POS + 2 * CLUTTER_TRIES  # first column of the polygon's angles
_U_COLS: int = _U_POLY + _POLY_MAX


def glyph_height_step(height: float) -> float:
    """Return the grid :func:`glyph_patch` rounds a height to: 1/4 px below 20 px, else 1 px."""
    return 0.25 if height < 20 else 1.0


def glyph_patch(rng: np.random.Generator, digit: str, lo: float, hi: float) -> R.TextPatch:
    """Return ``digit`` ``lo``-``hi`` px tall in a random readable face, stroke 1 or 2 (>= 20 px).

    The height is drawn uniformly, rounded to :func:`glyph_height_step` and kept in
    ``[lo, hi]``, so patches repeat and come from a cache (read-only arrays).
    """
    height = float(rng.uniform(lo, hi))
    step = glyph_height_step(height)
    height = min(hi, max(lo, round(height / step) * step))
    return _digit_patch(digit, height, R.pick(rng, R.READABLE_FACES))


@lru_cache(maxsize=4096)
def _digit_patch(digit: str, height: float, face: int) -> R.TextPatch:
    """Return the (cached, read-only) render of ``digit`` ``height`` px tall in ``face``."""
    patch = R.render_text(digit, height, face, 2 if height >= 20 else 1)
    patch.alpha.setflags(write=False)
    patch.mask.setflags(write=False)
    return patch


def glyph_surface(rng: np.random.Generator, side: int, kind: str) -> np.ndarray:
    """Return the ``side`` px square surface of a classic scene: ``kind`` texture or a photo.

    The texture (one of :data:`BACKGROUNDS`), a light gradient and a vignette are computed at
    :data:`GLYPH_TEXTURE_SIDE` px as two gray fields and a colour matrix, coloured channel by
    channel and enlarged once (bilinear): the texture is smooth in the 96 px view, at
    a fraction of the cost of :func:`~m3gym.tasks.render.background`. While a photo scene is
    active the texture is replaced by a lit photo crop, as :func:`~m3gym.tasks.render.surface`
    does (the texture's draws are made either way).
    """
    n = GLYPH_TEXTURE_SIDE
    p, q, colours = _glyph_texture(rng, kind, n)
    ang, light, vig = rng.random(3).tolist()
    xs, ys, r2 = _unit_grid(n)
    c, s = np.cos(2 * np.pi * ang), np.sin(2 * np.pi * ang)
    # light: 1 at the ramp's bright end, 1 - light at the other; vignette: 1 - vig at corners
    k = 0.3 * light / (abs(c) + abs(s))
    shade = (1.0 + k * (min(0.0, c) + min(0.0, s)) - (k * c) * xs - (k * s) * ys
             - (0.35 * vig) * r2).astype(np.float32)
    p *= shade
    q = shade if q is None else cv2.multiply(q, shade)
    tex = cv2.merge([p * a + q * b for a, b in colours.tolist()])  # 3x faster than cv2.transform
    small = np.clip(tex, 0.0, 255.0, out=tex).astype(np.uint8)
    flat = cv2.resize(small, (side, side), interpolation=cv2.INTER_LINEAR)
    scene = current_photo_scene()
    return flat if scene is None else photo_backdrop(scene, flat)


@lru_cache(maxsize=4)
def _unit_grid(n: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Return read-only x ``(1, n)``, y ``(n, 1)`` in [0, 1] and r^2 ``(n, n)`` (1 at corners)."""
    t = np.linspace(0.0, 1.0, n)
    xs, ys = t[None, :], t[:, None]
    r2 = ((xs - 0.5) ** 2 + (ys - 0.5) ** 2) / 0.5
    for a in (xs, ys, r2):
        a.setflags(write=False)
    return xs, ys, r2


_TEXTURE_BASE: dict[str, tuple[tuple[int, int, int], int, float]] = {
    "noise": ((140, 140, 140), 80, 60.0), "asphalt": ((92, 92, 96), 20, 28.0),
    "fabric": ((125, 125, 125), 75, 30.0), "wood": ((150, 105, 65), 25, 0.0),
    "brick": ((160, 70, 50), 25, 0.0), "gradient": ((140, 140, 140), 100, 0.0),
}
"""Per texture: base colour, jitter per channel and grain amplitude (gray levels)."""


def _glyph_texture(
    rng: np.random.Generator, kind: str, n: int,
) -> tuple[np.ndarray, np.ndarray | None, np.ndarray]:
    """Return a texture of ``kind`` as fields ``p``, ``q`` (``None``: all ones) and a colour matrix.

    ``p`` and ``q`` are float32 ``(n, n)``; the ``(3, 2)`` float32 matrix ``[A | B]`` colours a
    pixel ``A * p + B * q`` (values about 0..255).
    """
    centre, jitter, amp = _TEXTURE_BASE[kind]
    base = np.asarray(centre, np.float32) + rng.integers(-jitter, jitter, size=3,
                                                         endpoint=True).astype(np.float32)
    xs, ys, _ = _unit_grid(n)
    if kind == "gradient":  # base + t * (other - base), t a ramp in a random direction
        other = rng.integers(40, 240, size=3).astype(np.float32)
        ang = 2 * np.pi * float(rng.random())
        c, s = np.cos(ang), np.sin(ang)
        t = (c * xs + s * ys - min(0.0, c) - min(0.0, s)) / (abs(c) + abs(s))
        return t.astype(np.float32), None, np.stack([other - base, base], 1)
    if kind == "wood":  # base * (0.82 + 0.14 sin(warped rings))
        warp = cv2.resize(rng.random((6, 6), dtype=np.float32), (n, n),
                          interpolation=cv2.INTER_CUBIC)
        freq = 0.25 + 0.35 * float(rng.random())  # rings per 96 texture rows / 2 pi
        phase = (ys * (96.0 * freq) + 2.0 * np.sin(xs * 2.0)).astype(np.float32)
        warp *= np.float32(36.0 * freq / 2)
        warp += phase
        grain = np.sin(warp, out=warp)
        return grain, None, np.stack([np.float32(0.14) * base, np.float32(0.82) * base], 1)
    if kind == "brick":  # shaded bricks (p) and mortar joints (q)
        mortar = np.asarray((200, 195, 185), np.float32) + rng.integers(
            -15, 15, size=3, endpoint=True).astype(np.float32)
        bh = int(rng.integers(n // 14 + 2, n // 8 + 3))
        bw = 2 * bh + 1
        shades = rng.uniform(0.8, 1.15, size=(n // bh + 1, n // bw + 2)).astype(np.float32)
        row = np.arange(n)[:, None] // bh
        x = np.arange(n)[None, :] + (bw // 2) * (row % 2)
        joint = (np.arange(n)[:, None] % bh == 0) | (x % bw == 0)
        p = np.where(joint, np.float32(0.0), shades[row, x // bw])
        return p, joint.astype(np.float32), np.stack([base, mortar], 1)
    # noise, asphalt, fabric: base + smooth blotches + fine grain (+ the fabric's weave)
    u = rng.random(n * n + 36, dtype=np.float32)
    field = cv2.resize(u[n * n:].reshape(6, 6), (n, n), interpolation=cv2.INTER_CUBIC)
    field *= np.float32(amp)
    grain = u[:n * n].reshape(n, n)
    grain *= np.float32(0.6 * amp)
    field += grain
    field -= np.float32(0.8 * amp)
    if kind == "fabric":
        field += _weave(n)
    return field, None, np.stack([np.ones(3, np.float32), base], 1)


@lru_cache(maxsize=4)
def _weave(n: int) -> np.ndarray:
    """Return the read-only ``(n, n)`` float32 weave pattern of the fabric texture."""
    k = np.arange(n, dtype=np.float32) * np.float32(1.3)
    out = (np.float32(10.0) * np.sin(k))[:, None] * np.sin(k)[None, :]
    out.setflags(write=False)
    return out


def glyph_clutter(
    img: np.ndarray, rng: np.random.Generator, count: int, avoid: list[R.Box],
    size_range: tuple[float, float],
) -> list[R.Box]:
    """Draw ``count`` simple objects into ``img`` (in place) away from the ``avoid`` boxes.

    The classic scenes' clutter: boxes, ellipses, polygons, stripes, lines and discs, each
    ``size_range`` x the longest side wide and drawn inside its box (give or take an
    anti-aliased pixel), at least :data:`CLUTTER_MARGIN` px from every other box; an object
    that finds no free spot in :data:`CLUTTER_TRIES` tries is skipped. Every random number is
    drawn in two calls up front, so a scene costs a few OpenCV calls per object. Returns the
    boxes drawn.
    """
    if count <= 0:
        return []
    h, w = img.shape[:2]
    longest = max(h, w)
    lo, hi = size_range
    u = rng.random((count, _U_COLS))
    cols = rng.integers(20, 236, size=(count, 2, 3)).tolist()
    occupied = [tuple(b) for b in avoid]
    placed: list[R.Box] = []
    m = CLUTTER_MARGIN
    for i in range(count):
        r = u[i].tolist()
        bw = int(longest * (lo + (hi - lo) * r[0]))
        bh = int(bw * (0.5 + r[1]))
        if not (2 <= bw <= w and 2 <= bh <= h):
            continue
        spot = None
        for k in range(_U_POS, _U_POLY, 2):
            x, y = int(r[k] * (w - bw + 1)), int(r[k + 1] * (h - bh + 1))
            if all(x + bw + m <= o[0] or o[2] <= x - m or y + bh + m <= o[1] or o[3] <= y - m
                   for o in occupied):
                spot = (x, y)
                break
        if spot is None:
            continue
        x, y = spot
        x1, y1 = x + bw - 1, y + bh - 1
        col, alt = tuple(cols[i][0]), tuple(cols[i][1])
        kind = int(r[2] * _CLUTTER_KINDS)
        if kind == 0:  # a box with a darker edge and a lid line
            edge = tuple(int(c * 0.6) for c in col)
            cv2.rectangle(img, (x, y), (x1, y1), col, -1)
            cv2.rectangle(img, (x, y), (x1, y1), edge, max(1, bw // 40))
            cv2.line(img, (x, y + bh // 3), (x1, y + bh // 3), edge, 1)
        elif kind == 1:  # axis-aligned, so it stays inside its box (a turned one would not)
            ax, ay = (bw - 1) // 2, (bh - 1) // 2
            cv2.ellipse(img, (x + ax, y + ay), (ax, ay), 0.0, 0, 360, col, -1, cv2.LINE_AA)
        elif kind == 2:  # a convex polygon of 3-6 corners on the box's ellipse
            n = 3 + int(r[3] * (_POLY_MAX - 2))
            ang = np.sort(np.asarray(u[i, _U_POLY:_U_POLY + n]) * (2.0 * np.pi))
            pts = np.stack([x + (bw - 1) / 2 * (1 + np.cos(ang)),
                            y + (bh - 1) / 2 * (1 + np.sin(ang))], 1)
            cv2.fillPoly(img, [pts.astype(np.int32)], col, cv2.LINE_AA)
        elif kind == 3:
            step = max(3, bw // (4 + int(r[3] * 6)))
            for j, sx in enumerate(range(x, x + bw, step)):
                cv2.rectangle(img, (sx, y), (min(x + bw, sx + step) - 1, y1),
                              col if j % 2 else alt, -1)
        elif kind == 4:
            t = 2 + int(r[3] * 4)
            e = t // 2 + 1  # the round caps stay inside the box
            cv2.line(img, (x + e, y + e), (max(x + e, x1 - e), max(y + e, y1 - e)), col, t,
                     cv2.LINE_AA)
        else:  # a disc with a cross (a pictogram)
            rad = max(3, min(bw, bh) // 2 - 1)
            cx, cy = x + bw // 2, y + bh // 2
            t = max(1, rad // 5)
            cv2.circle(img, (cx, cy), rad, col, -1, cv2.LINE_AA)
            cv2.line(img, (cx - rad // 2, cy), (cx + rad // 2, cy), alt, t, cv2.LINE_AA)
            cv2.line(img, (cx, cy - rad // 2), (cx, cy + rad // 2), alt, t, cv2.LINE_AA)
        box = (x, y, x + bw, y + bh)
        placed.append(box)
        occupied.append(box)
    return placed


def glyph_noise_sigma(rng: np.random.Generator, lo: float, hi: float) -> float:
    """Draw a noise std from ``lo``-``hi``, rounded to :data:`NOISE_SIGMA_STEP` inside the range."""
    sigma = float(rng.uniform(lo, hi))
    return min(hi, max(lo, round(sigma / NOISE_SIGMA_STEP) * NOISE_SIGMA_STEP))


def glyph_noise(img: np.ndarray, rng: np.random.Generator, lo: float, hi: float) -> np.ndarray:
    """Add sensor noise of std drawn from ``lo``-``hi`` to the RGB ``img`` in place; return it.

    The std is rounded by :func:`glyph_noise_sigma`; the noise is
    :func:`~m3gym.tasks.render.add_sensor_noise` at that std.
    """
    return R.add_sensor_noise(img, rng, glyph_noise_sigma(rng, lo, hi), inplace=True)


def shading_gray(rng: np.random.Generator, side: int, depth: float) -> np.ndarray:
    """Return a ``uint8`` ``(side, side)`` lighting offset, ``depth`` levels peak to peak.

    Soft bands of light and shade (a card under a lamp): a sinusoid with a period of 0.25-0.4
    sides in a random direction plus a weaker linear ramp in another, on a 36-px grid enlarged
    once (the classic suite's version of ``_text_common.shading_field``, same draws).
    """
    xs, ys, _ = _unit_grid(36)
    ramp_dir, band_dir, phase = rng.uniform(0.0, 2.0 * np.pi, size=3).tolist()
    period = float(rng.uniform(0.25, 0.4))
    k = 2.0 * np.pi / period
    rc, rs = 0.4 * np.cos(ramp_dir), 0.4 * np.sin(ramp_dir)
    bc, bs = k * np.cos(band_dir), k * np.sin(band_dir)
    field = np.sin(bc * xs + bs * ys + phase) + (rc * xs + rs * ys)
    lo, hi = float(field.min()), float(field.max())
    scale = depth / max(hi - lo, 1e-6)
    small = cv2.convertScaleAbs(field.astype(np.float32), alpha=scale, beta=-lo * scale)
    return cv2.resize(small, (side, side), interpolation=cv2.INTER_LINEAR)


def check_common(side: int, glyphs: tuple[str, ...]) -> None:
    """Raise ``ValueError`` for an image side or answer set the classic families cannot use."""
    if not 192 <= side <= 768:
        raise ValueError("side must lie in 192..768 px")
    if len(glyphs) < 2 or len(set(glyphs)) != len(glyphs) or any(
            len(g) != 1 or not g.isdigit() for g in glyphs):
        raise ValueError("glyphs must be >= 2 distinct single digits")


def classic_task(
    family: FamilyConfig, domain: str, image: np.ndarray, question: str, digit: str,
    glyphs: tuple[str, ...], call: RefCall, evidence: Evidence,
    checkpoints: tuple[Checkpoint, ...], metadata: dict[str, Any],
) -> Task:
    """Assemble a classic task: fixed choices (``glyphs`` in order), exact digit answer."""
    image = R.freeze(image)
    h, w = image.shape[:2]
    meta = {
        "level": 1, "family": family.name, "domain": domain, "suite": "classic",
        "evidence_area_fraction": evidence.area / float(h * w), "view_size": CLASSIC_VIEW,
        "image_size": [w, h], **metadata,
    }
    return Task(
        task_id=f"{family.name}/0", family=family.name, level=1, domain=domain, images=(image,),
        question=question, answer=AnswerSpec(value=digit), reference=((call,),),
        evidence=(replace(evidence, min_view_height=CLASSIC_MIN_VIEW_HEIGHT),),
        checkpoints=checkpoints, choices=tuple(glyphs), capabilities=("visual_grounding",),
        metadata=meta,
    )


def glyph_evidence(img: np.ndarray, placed: R.PlacedText, margin: int) -> Evidence:
    """Return the evidence of a pasted digit: its box grown by ``margin`` and its ink mask."""
    h, w = img.shape[:2]
    box = R.grow_box(placed.box, margin, w, h)
    mask = R.embed_mask(placed.mask, (placed.box[0] - box[0], placed.box[1] - box[1]),
                        (box[3] - box[1], box[2] - box[0]))
    return R.region_evidence("digit", img, box, mask, text=placed.text,
                             glyph_height=placed.glyph_height)


def grid_cell(cell: int, side: int) -> R.Box:
    """Return the pixel box of 3x3 grid cell ``cell`` (row by row) of a ``side`` square."""
    r, c = divmod(cell, 3)
    edges = [round(side * k / 3) for k in range(4)]
    return (edges[c], edges[r], edges[c + 1], edges[r + 1])


def draw_tag(img: np.ndarray, patch: R.TextPatch, xy: tuple[int, int], plate: R.Color,
             frame: R.Color | None, frame_px: int = 2) -> tuple[R.Box, R.PlacedText]:
    """Draw a tag (plate, optional ``frame_px`` frame, the digit) at ``xy``; return box, text."""
    pw, ph = patch.size
    pad = 3
    x, y = xy
    w, h = pw + 2 * pad + 2, ph + 2 * pad + 2
    cv2.rectangle(img, (x, y), (x + w - 1, y + h - 1), plate, -1)
    if frame is not None:
        cv2.rectangle(img, (x, y), (x + w - 1, y + h - 1), frame, frame_px)
    placed = R.paste_text(img, patch, x + pad + 1, y + pad + 1, R.ink_for(plate))
    return (x, y, x + w, y + h), placed


def tag_size(patch: R.TextPatch) -> tuple[int, int]:
    """Return the ``(w, h)`` of the tag :func:`draw_tag` draws around ``patch``."""
    pw, ph = patch.size
    return pw + 8, ph + 8

