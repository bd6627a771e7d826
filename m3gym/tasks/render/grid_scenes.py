"""Photographs of periodic objects: a microplate on a bench, a calibration slide, a facade.

Each scene function returns a :class:`GridScene`: the clean, full-contrast photograph (before any
exposure problem; the family washes it out), the exact mask of the counted objects in the image
and their smallest centre-to-centre spacing. The object (plate, slide, facade) is drawn
fronto-parallel as a patch and pasted with a slight perspective
(:func:`~m3gym.tasks.render.camera.warp_patch`), so the mask is the object mask warped with the
same homography; the tilt is small enough that rows and columns stay unambiguous.

Every counted object is darker than what surrounds it on the object (wells in a white plate,
chrome dots on glass, windows in a wall) by a wide margin, while the object's other details
(moulded lettering, rims, sills, tile grout, blinds, lit rooms) stay on their own side of the
level midway between the two, so a single threshold after a contrast stretch separates them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.tasks.render.backgrounds import vignette_field
from m3gym.tasks.render.camera import (
    homography,
    perspective_quad,
    soft_shadow,
    uneven_lighting,
    warp_alpha,
    warp_patch,
)
from m3gym.tasks.render.content import fake_company, fake_id
from m3gym.tasks.render.fonts import pick_font, truetype_lines, truetype_text
from m3gym.tasks.render.photo_scene import surface
from m3gym.tasks.render.util import jitter_color

TILT: tuple[float, float] = (0.0, 0.05)
"""Range of :func:`perspective_quad` strengths (0.05: tilts up to 2.5°, roll up to 0.6°)."""

PLATE_MAKERS: tuple[str, ...] = ("NUNCLON", "CELLSTAR", "MICROLAB", "ASSAYPLATE", "BIOCLEAR",
                                  "POLYWELL")
"""Fictional maker names moulded on a plate's margin."""

LIQUID_TINTS: tuple[tuple[int, int, int], ...] = (
    (205, 92, 122), (72, 112, 190), (182, 112, 44), (128, 82, 160), (96, 150, 96),
)
"""Culture-medium pink, stain blue, amber, violet and green: all of gray level 100–135."""


@dataclass(frozen=True)
class GridScene:
    """A clean photograph of a periodic object and the exact mask of its counted objects.

    Attributes:
        rgb: ``uint8`` RGB photograph at full contrast (lit, before exposure and noise).
        mask: ``bool`` ``(h, w)`` mask of the counted objects.
        pitch: the smallest distance between the centres of two neighbouring objects, pixels.
        details: scene facts for the task's metadata (plain JSON values).
    """

    rgb: np.ndarray
    mask: np.ndarray
    pitch: float
    details: dict[str, object]


def _rgb(color: tuple[float, float, float] | tuple[int, int, int]) -> np.ndarray:
    """Return ``color`` as a float32 array of three channels."""
    return np.asarray(color, np.float32)


def _grid_centres(x0: float, y0: float, px: float, py: float, rows: int,
                  cols: int) -> np.ndarray:
    """Return the ``(rows * cols, 2)`` centres of a grid whose first cell starts at ``(x0, y0)``."""
    xs = x0 + (np.arange(cols) + 0.5) * px
    ys = y0 + (np.arange(rows) + 0.5) * py
    gx, gy = np.meshgrid(xs, ys)
    return np.stack([gx.ravel(), gy.ravel()], axis=1)


def _paste(frame: np.ndarray, patch: np.ndarray, alpha: np.ndarray | None, objects: np.ndarray,
           centres: np.ndarray, rows: int, cols: int, centre: tuple[float, float],
           rng: np.random.Generator, shadow: float = 0.0) -> tuple[np.ndarray, float]:
    """Paste ``patch`` centred at ``centre`` with a slight perspective; return mask and pitch.

    ``objects`` is the patch's ``uint8`` object mask (255 = object), ``centres`` the objects'
    patch coordinates in row-major order. Returns the frame-size object mask (coverage >= 50 %)
    and the smallest distance between neighbouring projected centres.
    """
    ph, pw = patch.shape[:2]
    quad = perspective_quad(rng, pw, ph, float(rng.uniform(*TILT)))
    quad = quad - quad.mean(axis=0) + np.asarray(centre, np.float64)
    if shadow > 0:
        soft_shadow(frame, rng, quad, shadow, inplace=True)
    box, _ = warp_patch(frame, patch, alpha, quad)
    mask = np.zeros(frame.shape[:2], bool)
    mask[box[1]:box[3], box[0]:box[2]] = warp_alpha(objects, quad, box) >= 128
    pts = cv2.perspectiveTransform(centres.reshape(-1, 1, 2).astype(np.float64),
                                   homography(pw, ph, quad)).reshape(rows, cols, 2)
    gaps = [np.linalg.norm(np.diff(pts, axis=a), axis=2).min() for a in (0, 1)
            if pts.shape[a] > 1]
    return mask, float(min(gaps))


def _emboss(canvas: np.ndarray, alpha: np.ndarray, x: int, y: int, amount: float) -> None:
    """Shade ``canvas`` (float32 RGB, in place) with raised lettering ``alpha`` at ``(x, y)``.

    A highlight on the upper-left edges and a shadow on the lower-right ones, ``amount`` levels
    at most, and the face itself a little lighter: moulded plastic, no ink.
    """
    h, w = alpha.shape
    a = np.zeros((h + 4, w + 4), np.float32)
    a[2:2 + h, 2:2 + w] = alpha.astype(np.float32) / 255.0
    lit = a - np.roll(a, (1, 1), axis=(0, 1))
    shade = cv2.GaussianBlur(lit, (0, 0), 0.7) * np.float32(amount) + a * np.float32(amount * 0.2)
    region = canvas[y - 2:y + h + 2, x - 2:x + w + 2]
    region += shade[..., None]


def _well_sprite(radius: float, floor: np.ndarray, wall: np.ndarray,
                 rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
    """Return a well's float32 RGB sprite and its ``uint8`` mask (a disc of ``radius``).

    The wall is a darker ring, the floor lighter towards the centre, and a thin bright
    meniscus highlight crosses its upper left.
    """
    r = int(math.ceil(radius)) + 2
    yy, xx = np.mgrid[-r:r + 1, -r:r + 1].astype(np.float32)
    d = np.sqrt(xx * xx + yy * yy) / np.float32(radius)
    t = np.clip((d - 0.55) / 0.45, 0.0, 1.0)[..., None]
    sprite = floor[None, None, :] * (1 - t) + wall[None, None, :] * t
    glint = np.zeros(d.shape, np.float32)
    angle = float(rng.uniform(200.0, 250.0))
    c = (r * 16, r * 16)
    axes = (int(radius * 0.62 * 16), int(radius * 0.62 * 16))
    cv2.ellipse(glint, c, axes, 0, angle, angle + float(rng.uniform(35, 60)), 1.0,
                max(1, int(radius * 0.07)), cv2.LINE_AA, shift=4)
    glint = cv2.GaussianBlur(glint, (0, 0), max(0.6, radius * 0.03))
    sprite += glint[..., None] * (np.float32(245.0) - sprite) * np.float32(0.8)
    disc = np.zeros(d.shape, np.uint8)
    cv2.circle(disc, c, int(radius * 16), 255, -1, cv2.LINE_AA, shift=4)
    return sprite, disc


def well_plate(rng: np.random.Generator, w: int, h: int, rows: int, cols: int) -> GridScene:
    """Draw a white microplate on a lab bench from above: wells, a moulded maker's mark, a rim."""
    s, lm, tm, rm, bm = 0.22, 0.85, 0.8, 0.5, 0.55  # margins in pitches: skirt, labels
    pitch = min(w * float(rng.uniform(0.82, 0.92)) / (cols + 2 * s + lm + rm),
                h * float(rng.uniform(0.8, 0.9)) / (rows + 2 * s + tm + bm))
    pw = int(round(pitch * (cols + 2 * s + lm + rm)))
    ph = int(round(pitch * (rows + 2 * s + tm + bm)))
    deck = _rgb(jitter_color(rng, (226, 229, 232), 6))
    plate = np.empty((ph, pw, 3), np.float32)
    plate[:] = deck * np.linspace(1.0, float(rng.uniform(0.95, 1.0)), pw,
                                  dtype=np.float32)[None, :, None]
    alpha = np.zeros((ph, pw), np.uint8)
    corner, edge = pitch * 0.18, pitch * s
    chamfer = pitch * 0.35
    outline = np.array([[corner, 0], [pw - chamfer, 0], [pw, chamfer], [pw, ph - corner],
                        [pw - corner, ph], [corner, ph], [0, ph - corner], [0, corner]])
    cv2.fillPoly(alpha, [np.round(outline * 16).astype(np.int32)], 255, cv2.LINE_AA, shift=4)
    # the skirt: a darker band with a bright moulded lip where it meets the deck
    lip = np.zeros((ph, pw), np.float32)
    inner = np.array([[edge, edge], [pw - edge, edge], [pw - edge, ph - edge], [edge, ph - edge]])
    cv2.polylines(lip, [np.round(inner * 16).astype(np.int32)], True, 1.0,
                  max(1, int(pitch * 0.04)), cv2.LINE_AA, shift=4)
    skirt = np.ones((ph, pw), np.float32)
    cv2.fillPoly(skirt, [np.round(inner * 16).astype(np.int32)], 0.0, cv2.LINE_AA, shift=4)
    plate *= (1.0 - 0.07 * cv2.GaussianBlur(skirt, (0, 0), 1.0))[..., None]
    plate += (cv2.GaussianBlur(lip, (0, 0), 0.8) * 14.0)[..., None]
    x0, y0 = pitch * (s + lm), pitch * (s + tm)
    centres = _grid_centres(x0, y0, pitch, pitch, rows, cols)
    # a moulded maker's mark and lot in the top margin. No row letters or column numbers: the
    # last of them would print the answer (how many rows and columns) on the plate.
    font = pick_font(rng, ("sans-bold", "condensed-bold", "sans"))
    glyph = max(7.0, pitch * float(rng.uniform(0.24, 0.32)))
    emboss = float(rng.uniform(14.0, 22.0))
    maker = PLATE_MAKERS[int(rng.integers(len(PLATE_MAKERS)))]
    mark = f"{maker}  LOT {int(rng.integers(10**5)):05d}"
    a = truetype_text(mark, glyph, font).alpha
    if a.shape[1] < pw - 2 * x0:
        _emboss(plate, a, int(x0), int(y0 - pitch * tm * 0.45 - a.shape[0] / 2), emboss)
    # wells: empty ones shaded, some filled with tinted liquid (whole columns, as in an assay)
    radius = pitch * float(rng.uniform(0.34, 0.4))
    wall = _rgb(jitter_color(rng, (92, 97, 104), 8))
    floor = _rgb(jitter_color(rng, (140, 144, 150), 8))
    sprites = [_well_sprite(radius, floor, wall, rng)]
    tints = [LIQUID_TINTS[int(i)] for i in rng.permutation(len(LIQUID_TINTS))[:2]]
    for tint in tints:
        liquid = _rgb(tint)
        sprites.append(_well_sprite(radius, liquid * 1.06, liquid * 0.72, rng))
    filled_cols = rng.random(cols) < float(rng.uniform(0.0, 0.6))
    tint_of_col = rng.integers(1, len(sprites), cols)
    objects = np.zeros((ph, pw), np.uint8)
    for (cx, cy), k in zip(centres, range(rows * cols)):
        j = k % cols
        sprite, disc = sprites[int(tint_of_col[j]) if filled_cols[j] else 0]
        r = disc.shape[0] // 2
        x, y = int(round(cx)) - r, int(round(cy)) - r
        a = disc.astype(np.float32)[..., None] / 255.0
        region = plate[y:y + disc.shape[0], x:x + disc.shape[1]]
        region *= 1.0 - a
        region += sprite * a
        np.maximum(objects[y:y + disc.shape[0], x:x + disc.shape[1]], disc,
                   out=objects[y:y + disc.shape[0], x:x + disc.shape[1]])
    patch = np.clip(plate, 0, 255).astype(np.uint8)
    bench = surface(rng, h, w, R_BENCH[int(rng.integers(len(R_BENCH)))], vignette=0.0)
    gray = cv2.cvtColor(cv2.cvtColor(bench, cv2.COLOR_RGB2GRAY), cv2.COLOR_GRAY2RGB)
    frame = cv2.addWeighted(bench, 0.35, gray, 0.65, 0.0)  # bench tops are muted
    centre = (w * (0.5 + float(rng.uniform(-0.03, 0.03))),
              h * (0.5 + float(rng.uniform(-0.03, 0.03))))
    mask, gap = _paste(frame, patch, alpha, objects, centres, rows, cols, centre, rng, shadow=0.6)
    frame = uneven_lighting(frame, rng, float(rng.uniform(0.1, 0.3)))
    return GridScene(frame, mask, gap, {"filled_columns": int(filled_cols.sum())})


R_BENCH: tuple[str, ...] = ("paper", "noise", "wood", "gradient")
"""Bench surfaces under the plate (:func:`~m3gym.tasks.render.backgrounds.background` kinds)."""


def _slide_label(rng: np.random.Generator, slide: np.ndarray, box: tuple[int, int, int, int],
                 max_glyph: float) -> None:
    """Paint a slide's label in ``box`` of ``slide`` (float32 RGB, in place).

    Backlit paper with printed lines (a fictional maker, the title, the kind of target, a
    serial number), glyphs at most ``max_glyph`` px tall so they stay smaller than the dots.
    """
    lx0, ly0, lx1, ly1 = box
    paper = _rgb(jitter_color(rng, (196, 188, 172), 8))
    slide[ly0:ly1, lx0:lx1] = paper
    lines = [fake_company(rng, ascii_only=True)[:22], "CALIBRATION SLIDE",
             str(rng.choice(["Dot grid", "Dot array", "Stage target"])),
             f"S/N {fake_id(rng)}"]
    gl = max(6.0, min((ly1 - ly0) * float(rng.uniform(0.045, 0.06)), max_glyph))
    text, _ = truetype_lines(lines, gl, pick_font(rng, ("sans", "condensed", "mono")),
                             line_spacing=1.9)
    tw, th = text.alpha.shape[1], text.alpha.shape[0]
    scale = min(1.0, ((lx1 - lx0) * 0.86) / tw)
    ta = cv2.resize(text.alpha, (max(1, int(tw * scale)), max(1, int(th * scale))),
                    interpolation=cv2.INTER_AREA) if scale < 1 else text.alpha
    tx, ty = lx0 + ((lx1 - lx0) - ta.shape[1]) // 2, ly0 + int((ly1 - ly0 - ta.shape[0]) * 0.35)
    a = ta.astype(np.float32)[..., None] / 255.0
    ink = _rgb(jitter_color(rng, (40, 40, 52), 8))
    region = slide[ty:ty + ta.shape[0], tx:tx + ta.shape[1]]
    region *= 1.0 - a
    region += ink * a


def dot_slide(rng: np.random.Generator, w: int, h: int, rows: int, cols: int) -> GridScene:
    """Draw a glass calibration slide on a light box: chrome dots, a printed label, edges."""
    panel = _rgb(jitter_color(rng, (236, 240, 242), 5))
    frame = np.empty((h, w, 3), np.float32)
    frame[:] = panel
    frame *= (1.0 - 0.06 * np.linspace(0, 1, h, dtype=np.float32))[:, None, None]
    if rng.random() < 0.5:  # the light box's bezel along the bottom edge
        bezel = int(h * float(rng.uniform(0.03, 0.06)))
        frame[h - bezel:] = _rgb(jitter_color(rng, (58, 60, 64), 8))
        frame[h - bezel:h - bezel + 3] *= 1.4
    frame_u8 = np.clip(frame, 0, 255).astype(np.uint8)
    sh = int(h * float(rng.uniform(0.66, 0.78)))
    end = int(w * float(rng.uniform(0.03, 0.07)))  # the slide's short end, inside the frame
    sw = w - end + int(0.25 * w)  # the far end runs out of the frame
    label_w = int(sh * float(rng.uniform(0.55, 0.75)))
    margin = 0.06 * w
    region_w = w - end - label_w - 0.09 * sh - margin  # from the label to near the frame edge
    region_h = sh * 0.8
    pitch = min(region_w / cols, region_h / rows)
    glass = _rgb(jitter_color(rng, (214, 226, 219), 5))
    slide = np.empty((sh, sw, 3), np.float32)
    slide[:] = glass
    # a soft diagonal reflection of the room light across the glass
    xs = np.arange(sw, dtype=np.float32)[None, :] + np.arange(sh, dtype=np.float32)[:, None]
    streak = float(rng.uniform(0.2, 0.8)) * sw
    slide *= (1.0 + 0.05 * np.exp(-(((xs - streak) / (0.12 * sh)) ** 2)))[..., None]
    edge = max(2, int(sh * 0.012))
    for sl in (slice(0, edge), slice(sh - edge, sh)):  # ground long edges: bright, then a dark line
        slide[sl] = glass * 1.07
    slide[edge:edge + 2] *= 0.78
    slide[sh - edge - 2:sh - edge] *= 0.78
    slide[:, :edge] = glass * 1.07
    slide[:, edge:edge + 2] *= 0.78
    alpha = np.zeros((sh, sw), np.uint8)
    cv2.rectangle(alpha, (0, 0), (sw - 1, sh - 1), 255, -1)
    lx0, ly0 = edge + 3, edge + 3
    lx1, ly1 = lx0 + label_w, sh - edge - 3
    radius = pitch * float(rng.uniform(0.22, 0.3))
    # the dot array, framed by a thin etched line
    gx0 = lx1 + 0.09 * sh + (region_w - cols * pitch) / 2
    gy0 = (sh - rows * pitch) / 2
    centres = _grid_centres(gx0, gy0, pitch, pitch, rows, cols)
    chrome = _rgb(jitter_color(rng, (62, 64, 70), 8))
    objects = np.zeros((sh, sw), np.uint8)
    for cx, cy in centres:
        cv2.circle(objects, (int(cx * 16), int(cy * 16)), int(radius * 16), 255, -1, cv2.LINE_AA,
                   shift=4)
    line = np.zeros((sh, sw), np.uint8)
    pad = pitch * 0.75
    cv2.rectangle(line, (int((gx0 + 0.5 * pitch - pad) * 16), int((gy0 + 0.5 * pitch - pad) * 16)),
                  (int((gx0 + (cols - 0.5) * pitch + pad) * 16),
                   int((gy0 + (rows - 0.5) * pitch + pad) * 16)), 255,
                  max(1, int(pitch * 0.03)), cv2.LINE_AA, shift=4)
    dark = np.maximum(objects, line).astype(np.float32)[..., None] / 255.0
    slide = slide * (1.0 - dark) + chrome * dark
    if rng.random() < 0.5:  # label at the right end instead: turn the slide end for end
        slide, alpha, objects = slide[::-1, ::-1], alpha[::-1, ::-1], objects[::-1, ::-1]
        centres = np.array([sw, sh]) - centres[::-1]
        lx0, lx1 = sw - lx1, sw - lx0
        cx = w - end - sw / 2
    else:
        cx = end + sw / 2
    slide = np.ascontiguousarray(slide)
    _slide_label(rng, slide, (lx0, ly0, lx1, ly1), radius * 0.8)
    patch = np.clip(slide, 0, 255).astype(np.uint8)
    centre = (cx, h / 2 + float(rng.uniform(-0.04, 0.04)) * h)
    mask, gap = _paste(frame_u8, np.ascontiguousarray(patch), np.ascontiguousarray(alpha),
                       np.ascontiguousarray(objects), centres, rows, cols, centre, rng,
                       shadow=0.15)
    gain = vignette_field(h, w, float(rng.uniform(0.1, 0.25)))
    lit = cv2.multiply(frame_u8, cv2.merge([gain, gain, gain]), dtype=cv2.CV_8U)
    return GridScene(lit, mask, gap, {})


def _tiles(rng: np.random.Generator, h: int, w: int, tile: float,
           color: np.ndarray) -> np.ndarray:
    """Return a float32 RGB wall of ``tile``-px ceramic tiles (jittered shades, darker grout)."""
    ny, nx = int(h / tile) + 2, int(w / tile) + 2
    shades = rng.uniform(0.975, 1.02, (ny, nx)).astype(np.float32)
    wall = cv2.resize(shades, (int(nx * tile), int(ny * tile)),
                      interpolation=cv2.INTER_NEAREST)[:h, :w]
    grout = max(1, int(tile * 0.07))
    idx_y = (np.arange(h) % tile) < grout
    idx_x = (np.arange(w) % tile) < grout
    wall[idx_y, :] = 0.88
    wall[:, idx_x] = 0.88
    return wall[..., None] * color[None, None, :]


def facade(rng: np.random.Generator, w: int, h: int, rows: int, cols: int) -> GridScene:
    """Draw a tiled facade below a cornice: framed windows, sills, mullions, blinds, lit rooms."""
    pw, ph = int(w * 1.2), int(h * 1.2)
    ox, oy = (pw - w) / 2, (ph - h) / 2
    roof = oy + h * float(rng.uniform(0.04, 0.12))
    cornice = h * float(rng.uniform(0.03, 0.05))
    wall_color = _rgb(jitter_color(rng, R_WALLS[int(rng.integers(len(R_WALLS)))], 8))
    top = roof + cornice
    gx0 = ox + w * float(rng.uniform(0.05, 0.1))
    gx1 = ox + w * (1 - float(rng.uniform(0.05, 0.1)))
    gy0 = top + h * float(rng.uniform(0.04, 0.07))
    gy1 = oy + h * (1 - float(rng.uniform(0.03, 0.07)))
    px, py = (gx1 - gx0) / cols, (gy1 - gy0) / rows
    img = _tiles(rng, ph, pw, min(px, py) * float(rng.uniform(0.14, 0.22)), wall_color)
    sky = _rgb(jitter_color(rng, (226, 230, 234), 4))
    r0, r1 = int(roof), int(top)
    img[:r0] = sky * np.linspace(1.03, 0.98, r0, dtype=np.float32)[:, None, None]
    stone = _rgb(jitter_color(rng, (214, 210, 200), 6))
    img[r0:r1] = stone * np.linspace(1.04, 0.9, r1 - r0, dtype=np.float32)[:, None, None]
    img[r0:r0 + 2] *= 0.8
    fall = max(2, int(cornice * 0.8))  # the cornice's soft shadow on the wall
    img[r1:r1 + fall] *= np.linspace(0.84, 1.0, fall, dtype=np.float32)[:, None, None]
    ww, wh = px * float(rng.uniform(0.5, 0.64)), py * float(rng.uniform(0.55, 0.68))
    fw = max(2.0, min(ww, wh) * 0.08)
    frame_color = _rgb(jitter_color(rng, (64, 62, 60), 10))
    glass_top = _rgb(jitter_color(rng, (104, 112, 122), 8))
    glass_bottom = _rgb(jitter_color(rng, (58, 64, 72), 6))
    lit_color = _rgb(jitter_color(rng, (150, 104, 44), 8))
    mullion, transom = rng.random() < 0.7, rng.random() < 0.5
    centres = _grid_centres(gx0, gy0, px, py, rows, cols)
    objects = np.zeros((ph, pw), np.uint8)
    kinds = rng.choice(3, rows * cols, p=[0.65, 0.2, 0.15])  # plain, blinds, lit
    blind_drop = rng.uniform(0.25, 0.6, rows * cols)
    for k, (cx, cy) in enumerate(centres):
        x0, y0 = int(round(cx - ww / 2)), int(round(cy - wh / 2 - py * 0.05))
        x1, y1 = int(round(cx + ww / 2)), int(round(cy + wh / 2 - py * 0.05))
        sill_h = max(3, int(wh * 0.06))
        sx0, sx1 = int(x0 - ww * 0.06), int(x1 + ww * 0.06)
        img[y1 + sill_h:y1 + 3 * sill_h, sx0:sx1] *= np.linspace(
            0.82, 1.0, 2 * sill_h, dtype=np.float32)[:, None, None]
        img[y1:y1 + sill_h, sx0:sx1] = stone * 1.04
        img[y1 + sill_h - 1:y1 + sill_h, sx0:sx1] = stone * 0.86
        img[y0:y1, x0:x1] = frame_color
        g0, g1, gxa, gxb = int(y0 + fw), int(y1 - fw), int(x0 + fw), int(x1 - fw)
        t = np.linspace(0.0, 1.0, g1 - g0, dtype=np.float32)[:, None, None]
        pane = glass_top * (1 - t) + glass_bottom * t
        if kinds[k] == 2:
            pane = lit_color * (1.05 - 0.15 * t)
        img[g0:g1, gxa:gxb] = pane
        if kinds[k] == 1:  # venetian blinds down to part of the pane: slats and gaps
            drop = int((g1 - g0) * blind_drop[k])
            slat = max(2, int(wh * 0.035))
            rows_b = np.arange(drop)
            tone = np.where((rows_b // slat) % 2 == 0, 0.62, 0.42).astype(np.float32)
            img[g0:g0 + drop, gxa:gxb] = (tone[:, None, None] * _rgb((200, 192, 176)))
        img[g0:g0 + max(2, int(wh * 0.08)), gxa:gxb] *= 0.8  # the reveal's shadow
        if mullion:
            m0 = int(round(cx - fw * 0.4))
            img[g0:g1, m0:m0 + max(2, int(fw * 0.8))] = frame_color
        if transom:
            t0 = int(g0 + (g1 - g0) * 0.3)
            img[t0:t0 + max(2, int(fw * 0.8)), gxa:gxb] = frame_color
        objects[y0:y1, x0:x1] = 255
    patch = np.clip(img, 0, 255).astype(np.uint8)
    frame = np.empty((h, w, 3), np.uint8)
    frame[:] = np.clip(sky, 0, 255).astype(np.uint8)
    centre = (w / 2, h / 2)
    mask, gap = _paste(frame, patch, None, objects, centres, rows, cols, centre, rng)
    frame = uneven_lighting(frame, rng, float(rng.uniform(0.05, 0.2)))
    return GridScene(frame, mask, gap, {"lit_windows": int((kinds == 2).sum()),
                                        "blinds": int((kinds == 1).sum())})


R_WALLS: tuple[tuple[int, int, int], ...] = ((200, 196, 186), (196, 178, 160), (184, 190, 194),
                                             (206, 200, 170))
"""Tile colours of a facade's wall (beige, terracotta-pale, gray, sand), gray level 175–200."""


SCENES = {"well_plate": well_plate, "dot_slide": dot_slide, "facade": facade}
"""Pattern kind -> scene function ``(rng, w, h, rows, cols) -> GridScene``."""
