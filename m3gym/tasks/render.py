"""Procedural scene rendering shared by every task family.

Everything here is fast (OpenCV on whole arrays, small per-object patches, no Python loops over
pixels) and deterministic: the only source of randomness is the ``np.random.Generator`` passed in.
Images are ``uint8`` RGB ``(H, W, 3)``; boxes are ``(x0, y0, x1, y1)`` pixel coordinates with
exclusive ``x1``/``y1``.

The module has six groups of helpers:

* **backgrounds** — :func:`background` builds textured fields (gradient, noise, paper, wood, brick,
  asphalt, sky, fabric) with a lighting gradient and a vignette, rendered at low resolution and
  upscaled once so a 1600 px scene costs about two milliseconds;
* **text** — :func:`render_text` renders a string with a Hershey font at a given *glyph height*
  (the ink height of a capital letter, in pixels) and returns a :class:`TextPatch` (coverage,
  ink mask, size); :func:`paste_text` / :func:`draw_text` composite it and return a
  :class:`PlacedText` with the exact pixel box and ink mask of what was drawn;
* **clutter** — :func:`add_clutter` (shapes, boxes, stripes, fake photos, icons) and
  :func:`add_distractor_labels` (readable text labels), both avoiding reserved boxes;
* **codes** — :func:`random_code` ("K7-4F2" style, without the confusable O/0, I/1, S/5, Z/2,
  B/8, Q, L), :func:`near_miss_codes`, :func:`code_choices` (look-alike edits on
  :data:`CONFUSABLE_CYCLES`), :func:`code_variants`; numeric options :func:`value_window` /
  :func:`window_choices` (consecutive values, the answer at a uniformly random position);
* **degradations** — :func:`compress_dynamic_range`, :func:`add_sensor_noise`,
  :func:`mild_blur`, :func:`jpeg_artifacts`, plus :func:`faded_color` for faint ink;
* **measurement / geometry** — :func:`region_evidence` (an :class:`~m3gym.tasks.spec.Evidence`
  from a clean render), :func:`ink_contrast`, :func:`autocontrast_pil` and
  :func:`autocontrast_luts` (PIL's algorithm),
  :func:`view_scale`, :func:`box_to_bbox1000`, :func:`bbox1000_to_box`, :func:`crop_zoom_for`,
  :func:`find_free_spot`, :func:`position_phrase`.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import cv2
import numpy as np

from m3gym.tasks.spec import Evidence
from m3gym.view import VIEW_SIZE, view_scale  # noqa: F401 (re-exported for families)

Box = tuple[int, int, int, int]
Color = tuple[int, int, int]

"""Longest side, in pixels, at which an agent is assumed to see an image (INTER_AREA downscale)."""

NAMED_COLORS: dict[str, Color] = {
    "red": (206, 40, 40),
    "blue": (40, 90, 210),
    "green": (40, 150, 60),
    "yellow": (240, 210, 40),
    "orange": (240, 130, 30),
    "purple": (130, 60, 170),
    "pink": (240, 130, 180),
    "white": (245, 245, 240),
    "cyan": (40, 190, 210),
}
"""Colours that questions may name, with an RGB value each (insertion order is fixed)."""

READABLE_FACES: tuple[int, ...] = (
    cv2.FONT_HERSHEY_SIMPLEX,
    cv2.FONT_HERSHEY_DUPLEX,
    cv2.FONT_HERSHEY_COMPLEX,
    cv2.FONT_HERSHEY_TRIPLEX,
    cv2.FONT_HERSHEY_PLAIN,
)
"""Hershey faces that stay legible at small sizes (used for evidence text)."""

ALL_FACES: tuple[int, ...] = (
    *READABLE_FACES,
    cv2.FONT_HERSHEY_COMPLEX_SMALL,
    cv2.FONT_HERSHEY_SCRIPT_SIMPLEX,
    cv2.FONT_HERSHEY_SCRIPT_COMPLEX,
)
"""Every Hershey face (script faces only for decoration and distractors)."""

CODE_LETTERS: str = "ACDEFGHJKMNPRTUVWXY"
"""Letters used in codes: no O, I, L, Q, S, Z, B (confusable with 0, 1, 5, 2, 8)."""
CODE_DIGITS: str = "2345679"
"""Digits used in codes: no 0, 1 (O, I), no 8 (B)."""
CODE_PATTERNS: tuple[str, ...] = ("LD-DLD", "LL-DDDD", "LDL-DD", "DLL-DDL", "LL-DLD", "LDD-LDL")
"""Code layouts: ``L`` letter, ``D`` digit, anything else literal."""

DISTRACTOR_WORDS: tuple[str, ...] = (
    "SALE", "NEW", "FRAGILE", "ORGANIC", "FRESH", "EXIT", "OPEN", "PRIORITY", "THIS SIDE UP",
    "HANDLE WITH CARE", "BEST BEFORE", "MADE IN EU", "RECYCLE", "ECO", "PREMIUM", "LIMITED",
    "WARNING", "NO ENTRY", "STAFF ONLY", "DELIVERY", "EXPRESS", "HOT DEAL", "2 FOR 1", "-30%",
    "$4.99", "$12.50", "$0.89", "LOT 7", "ZONE C", "AISLE 4", "GATE 12", "ROOM 5",
)
"""Short readable strings for distractor labels."""

BACKGROUND_KINDS: tuple[str, ...] = (
    "gradient", "noise", "paper", "wood", "brick", "asphalt", "sky", "fabric",
)
"""Kinds accepted by :func:`background`."""


# --------------------------------------------------------------------------------------------
# small utilities


def pick(rng: np.random.Generator, options: Sequence[Any]) -> Any:
    """Return one element of ``options`` chosen by ``rng``."""
    return options[int(rng.integers(len(options)))]


def shuffled(rng: np.random.Generator, items: Sequence[Any]) -> tuple[Any, ...]:
    """Return ``items`` in an order drawn by ``rng``."""
    return tuple(items[int(i)] for i in rng.permutation(len(items)))


def rand_color(rng: np.random.Generator, low: int = 0, high: int = 256) -> Color:
    """Return a random RGB colour with channels in ``[low, high)``."""
    c = rng.integers(low, high, size=3).tolist()
    return (c[0], c[1], c[2])


def jitter_color(rng: np.random.Generator, color: Color, amount: int = 20) -> Color:
    """Return ``color`` with each channel moved by up to ``amount`` levels (clipped)."""
    d = rng.integers(-amount, amount + 1, size=3).tolist()
    return (min(255, max(0, int(color[0]) + d[0])), min(255, max(0, int(color[1]) + d[1])),
            min(255, max(0, int(color[2]) + d[2])))


def luminance(color: Color) -> float:
    """Return the Rec. 601 luma of an RGB colour (the weights of ``cv2.COLOR_RGB2GRAY``)."""
    r, g, b = color
    return 0.299 * r + 0.587 * g + 0.114 * b


def ink_for(color: Color) -> Color:
    """Return near-black or near-white ink, whichever contrasts more with ``color``."""
    return (20, 20, 24) if luminance(color) > 128 else (246, 246, 246)


def boxes_overlap(a: Sequence[float], b: Sequence[float], margin: float = 0.0) -> bool:
    """Return whether boxes ``a`` and ``b`` (x0, y0, x1, y1) overlap after growing ``a``."""
    return not (a[2] + margin <= b[0] or b[2] <= a[0] - margin
                or a[3] + margin <= b[1] or b[3] <= a[1] - margin)


def grow_box(box: Sequence[float], margin: float, width: int, height: int) -> Box:
    """Return ``box`` grown by ``margin`` on every side, rounded outward and clipped."""
    x0, y0, x1, y1 = box
    return (max(0, math.floor(x0 - margin)), max(0, math.floor(y0 - margin)),
            min(width, math.ceil(x1 + margin)), min(height, math.ceil(y1 + margin)))


def find_free_spot(
    rng: np.random.Generator, size: tuple[int, int], bounds: Box,
    occupied: Sequence[Sequence[float]], margin: int = 8, tries: int = 40,
) -> tuple[int, int] | None:
    """Return a top-left ``(x, y)`` where a ``(w, h)`` box fits in ``bounds`` without overlaps.

    Tries ``tries`` random positions; returns ``None`` when none is free.
    """
    w, h = size
    bx0, by0, bx1, by1 = bounds
    if bx1 - bx0 < w or by1 - by0 < h or tries < 1:
        return None
    # all candidates at once (one draw of 2 * tries integers), tested against every box at once
    xs = rng.integers(bx0, bx1 - w + 1, size=tries)
    ys = rng.integers(by0, by1 - h + 1, size=tries)
    x, y = int(xs[0]), int(ys[0])
    first = (x, y, x + w, y + h)
    if not any(boxes_overlap(first, o, margin) for o in occupied):
        return x, y  # the common case: no arrays built
    occ = np.asarray(occupied, dtype=np.float64).reshape(-1, 4)
    x0, y0 = xs[:, None].astype(np.float64), ys[:, None].astype(np.float64)
    apart = ((x0 + w + margin <= occ[:, 0]) | (occ[:, 2] <= x0 - margin)
             | (y0 + h + margin <= occ[:, 1]) | (occ[:, 3] <= y0 - margin))
    free = np.flatnonzero(apart.all(axis=1))
    if free.size == 0:
        return None
    return int(xs[free[0]]), int(ys[free[0]])


def solid_image(height: int, width: int, color: Sequence[float], dtype: type = np.uint8
                ) -> np.ndarray:
    """Return a new ``(height, width, 3)`` image of ``dtype`` filled with ``color``.

    Filled with ``cv2.rectangle``: numpy's broadcast of a 3-tuple into an ``(H, W, 3)`` array is
    over twenty times slower.
    """
    out = np.empty((height, width, 3), dtype)
    cv2.rectangle(out, (0, 0), (width, height), tuple(float(c) for c in color), -1)
    return out


def position_phrase(box: Sequence[float], width: int, height: int) -> str:
    """Return where ``box``'s centre lies on a 3x3 grid ("top-left", "center", "bottom", ...)."""
    cx = (box[0] + box[2]) / 2 / width
    cy = (box[1] + box[3]) / 2 / height
    col = ("left", "", "right")[min(2, int(cx * 3))]
    row = ("top", "", "bottom")[min(2, int(cy * 3))]
    if row and col:
        return f"{row}-{col}"
    return row or col or "center"


# --------------------------------------------------------------------------------------------
# backgrounds


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


# --------------------------------------------------------------------------------------------
# text


@lru_cache(maxsize=64)
def cap_height_at_unit_scale(face: int, thickness: int = 1) -> float:
    """Return the ink height of a capital "H" for ``face`` at ``fontScale`` 1 (measured once)."""
    scale = 10.0
    (tw, th), _ = cv2.getTextSize("H", face, scale, thickness)
    canvas = np.zeros((th * 2 + 20, tw + 20), np.uint8)
    cv2.putText(canvas, "H", (10, th + 10), face, scale, 255, thickness, cv2.LINE_8)
    rows = np.flatnonzero(canvas.max(axis=1))
    return float(rows[-1] - rows[0] + 1 - (thickness - 1)) / scale


@dataclass(frozen=True)
class TextPatch:
    """A rendered string: anti-aliased coverage cropped tightly to the ink.

    Attributes:
        text: the string.
        alpha: ``uint8`` ``(h, w)`` coverage (255 = full ink).
        mask: ``bool`` ``(h, w)``, True where coverage >= 50 % (the strokes).
        glyph_height: measured ink height of a capital letter at these settings, pixels.
    """

    text: str
    alpha: np.ndarray
    mask: np.ndarray
    glyph_height: float

    @property
    def size(self) -> tuple[int, int]:
        """``(width, height)`` of the patch."""
        return int(self.alpha.shape[1]), int(self.alpha.shape[0])


@dataclass(frozen=True)
class PlacedText:
    """Text composited into an image: its tight pixel box and ink mask (mask shape = box shape)."""

    text: str
    box: Box
    mask: np.ndarray
    glyph_height: float


def render_text(
    text: str, glyph_height: float, face: int = cv2.FONT_HERSHEY_SIMPLEX, thickness: int = 1,
    italic: bool = False,
) -> TextPatch:
    """Render ``text`` so a capital letter's ink is ``glyph_height`` pixels tall.

    Returns a :class:`TextPatch` cropped tightly to the ink (the patch is its own box).
    """
    if not text.strip():
        raise ValueError("render_text needs non-blank text")
    font = face | (cv2.FONT_ITALIC if italic else 0)
    scale = max(0.05, (glyph_height - (thickness - 1)) / cap_height_at_unit_scale(face, 1))
    (tw, th), base = cv2.getTextSize(text, font, scale, thickness)
    pad = thickness + 2 + int(th * 0.4 if italic else 0)
    canvas = np.zeros((th + base + th // 2 + 2 * pad, tw + 2 * pad), np.uint8)
    cv2.putText(canvas, text, (pad, pad + th), font, scale, 255, thickness, cv2.LINE_AA)
    rows = np.flatnonzero(canvas.max(axis=1))
    cols = np.flatnonzero(canvas.max(axis=0))
    alpha = canvas[rows[0]:rows[-1] + 1, cols[0]:cols[-1] + 1]
    return TextPatch(text=text, alpha=alpha, mask=alpha >= 128,
                     glyph_height=_glyph_height(face, scale, thickness))


@lru_cache(maxsize=512)
def _glyph_height(face: int, scale: float, thickness: int) -> float:
    """Return the measured anti-aliased ink height (coverage >= 50 %) of "H" at these settings."""
    (tw, th), _ = cv2.getTextSize("H", face, scale, thickness)
    pad = thickness + 4
    canvas = np.zeros((th * 2 + 2 * pad, tw + 2 * pad), np.uint8)
    cv2.putText(canvas, "H", (pad, pad + th), face, scale, 255, thickness, cv2.LINE_AA)
    rows = np.flatnonzero((canvas >= 128).any(axis=1))
    return float(rows[-1] - rows[0] + 1) if rows.size else float(th)


def paste_text(img: np.ndarray, patch: TextPatch, x: int, y: int, color: Color) -> PlacedText:
    """Composite ``patch`` in ``color`` into ``img`` (in place) with its top-left at ``(x, y)``.

    The patch must lie inside the image. Returns the exact box and ink mask of what was drawn.
    """
    w, h = patch.size
    if x < 0 or y < 0 or x + w > img.shape[1] or y + h > img.shape[0]:
        raise ValueError(f"text patch {w}x{h} at ({x}, {y}) leaves the {img.shape[1]}x"
                         f"{img.shape[0]} image")
    region = img[y:y + h, x:x + w]
    a = patch.alpha.astype(np.float32)
    a *= np.float32(1.0 / 255.0)
    solid = (solid_image(h, w, color, region.dtype) if region.ndim == 3
             else np.full((h, w), round(luminance(color)), region.dtype))
    cv2.blendLinear(solid, region, a, np.float32(1.0) - a, dst=region)
    return PlacedText(text=patch.text, box=(x, y, x + w, y + h), mask=patch.mask,
                      glyph_height=patch.glyph_height)


def draw_text(
    img: np.ndarray, text: str, xy: tuple[int, int], glyph_height: float, color: Color,
    face: int = cv2.FONT_HERSHEY_SIMPLEX, thickness: int = 1, italic: bool = False,
) -> PlacedText:
    """Render ``text`` and paste its ink box's top-left at ``xy`` (see :func:`paste_text`)."""
    patch = render_text(text, glyph_height, face, thickness, italic)
    return paste_text(img, patch, xy[0], xy[1], color)


def random_font(rng: np.random.Generator, readable: bool = True) -> tuple[int, bool]:
    """Return a random ``(face, italic)``; ``readable`` limits to :data:`READABLE_FACES`."""
    faces = READABLE_FACES if readable else ALL_FACES
    return faces[int(rng.integers(len(faces)))], bool(rng.random() < 0.25)


# --------------------------------------------------------------------------------------------
# clutter


def fake_photo(rng: np.random.Generator, h: int, w: int) -> np.ndarray:
    """Return a small ``uint8`` RGB "photo": sky/ground split, a sun or blob, soft shading."""
    img = background(rng, h, w, kind=("sky", "gradient", "noise")[int(rng.integers(3))],
                     vignette=0.0, detail=max(1, min(h, w) // 24))
    horizon = int(h * rng.uniform(0.45, 0.8))
    ground = rand_color(rng, 30, 180)
    pts = np.array([[0, horizon], [w // 3, horizon - int(h * rng.uniform(0, 0.3))],
                    [2 * w // 3, horizon - int(h * rng.uniform(0, 0.2))], [w, horizon],
                    [w, h], [0, h]], np.int32)
    cv2.fillPoly(img, [pts], ground, cv2.LINE_AA)
    cx, cy = int(rng.integers(w)), int(rng.integers(max(1, horizon)))
    cv2.circle(img, (cx, cy), max(2, min(h, w) // 8), rand_color(rng, 150, 256), -1, cv2.LINE_AA)
    return img


def _draw_icon(img: np.ndarray, rng: np.random.Generator, box: Box) -> None:
    """Draw a simple pictogram (circle+cross, triangle+bar, arrow or star) inside ``box``."""
    x0, y0, x1, y1 = box
    cx, cy, r = (x0 + x1) // 2, (y0 + y1) // 2, max(3, min(x1 - x0, y1 - y0) // 2 - 1)
    col, ink = rand_color(rng, 30, 230), rand_color(rng, 0, 256)
    kind = int(rng.integers(4))
    if kind == 0:
        cv2.circle(img, (cx, cy), r, col, -1, cv2.LINE_AA)
        cv2.line(img, (cx - r // 2, cy), (cx + r // 2, cy), ink, max(1, r // 5), cv2.LINE_AA)
        cv2.line(img, (cx, cy - r // 2), (cx, cy + r // 2), ink, max(1, r // 5), cv2.LINE_AA)
    elif kind == 1:
        tri = np.array([[cx, cy - r], [cx - r, cy + r], [cx + r, cy + r]], np.int32)
        cv2.fillPoly(img, [tri], col, cv2.LINE_AA)
        cv2.line(img, (cx, cy - r // 3), (cx, cy + r // 3), ink, max(1, r // 5), cv2.LINE_AA)
    elif kind == 2:
        cv2.arrowedLine(img, (cx - r, cy), (cx + r, cy), col, max(1, r // 3), cv2.LINE_AA,
                        tipLength=0.45)
    else:
        ang = np.linspace(0, 2 * np.pi, 11)[:-1] - np.pi / 2
        rad = np.where(np.arange(10) % 2 == 0, r, r * 0.45)
        star = np.stack([cx + rad * np.cos(ang), cy + rad * np.sin(ang)], 1).astype(np.int32)
        cv2.fillPoly(img, [star], col, cv2.LINE_AA)


CLUTTER_KINDS: tuple[str, ...] = ("shape", "box", "stripes", "photo", "icon", "ellipse", "line")
"""Kinds of clutter drawn by :func:`add_clutter`."""


def add_clutter(
    img: np.ndarray, rng: np.random.Generator, count: int,
    avoid: Sequence[Sequence[float]] = (), size_range: tuple[float, float] = (0.04, 0.16),
    bounds: Box | None = None,
) -> list[Box]:
    """Draw ``count`` clutter objects into ``img`` (in place) away from the ``avoid`` boxes.

    Object sizes are fractions ``size_range`` of the image's longest side. Returns the boxes
    drawn (objects that found no free spot are skipped).
    """
    h, w = img.shape[:2]
    bounds = bounds or (0, 0, w, h)
    placed: list[Box] = []
    occupied = list(avoid)
    longest = max(h, w)
    for _ in range(count):
        kind = CLUTTER_KINDS[int(rng.integers(len(CLUTTER_KINDS)))]
        bw = int(longest * rng.uniform(*size_range))
        bh = int(bw * rng.uniform(0.5, 1.5))
        spot = find_free_spot(rng, (bw, bh), bounds, occupied, margin=6, tries=12)
        if spot is None:
            continue
        x, y = spot
        box = (x, y, x + bw, y + bh)
        col = rand_color(rng, 20, 236)
        if kind == "shape":
            n = int(rng.integers(3, 7))
            ang = np.sort(rng.uniform(0, 2 * np.pi, n))
            pts = np.stack([x + bw / 2 * (1 + np.cos(ang)), y + bh / 2 * (1 + np.sin(ang))], 1)
            cv2.fillPoly(img, [pts.astype(np.int32)], col, cv2.LINE_AA)
        elif kind == "box":
            cv2.rectangle(img, (x, y), (x + bw - 1, y + bh - 1), col, -1)
            edge = tuple(int(c * 0.6) for c in col)
            cv2.rectangle(img, (x, y), (x + bw - 1, y + bh - 1), edge, max(1, bw // 40))
            cv2.line(img, (x, y + bh // 3), (x + bw - 1, y + bh // 3), edge, 1, cv2.LINE_AA)
        elif kind == "stripes":
            alt = rand_color(rng, 20, 236)
            step = max(3, int(bw // rng.integers(4, 10)))
            for i, sx in enumerate(range(x, x + bw, step)):
                cv2.rectangle(img, (sx, y), (min(x + bw, sx + step) - 1, y + bh - 1),
                              col if i % 2 else alt, -1)
        elif kind == "photo":
            img[y:y + bh, x:x + bw] = fake_photo(rng, bh, bw)
            cv2.rectangle(img, (x, y), (x + bw - 1, y + bh - 1), (250, 250, 250), max(2, bw // 30))
        elif kind == "icon":
            _draw_icon(img, rng, box)
        elif kind == "ellipse":
            cv2.ellipse(img, (x + bw // 2, y + bh // 2), (bw // 2, bh // 2),
                        float(rng.uniform(0, 180)), 0, 360, col, -1, cv2.LINE_AA)
        else:
            cv2.line(img, (x, y), (x + bw - 1, y + bh - 1), col, int(rng.integers(2, 6)),
                     cv2.LINE_AA)
        placed.append(box)
        occupied.append(box)
    return placed


def add_distractor_labels(
    img: np.ndarray, rng: np.random.Generator, count: int,
    avoid: Sequence[Sequence[float]] = (), glyph_range: tuple[float, float] = (16.0, 40.0),
    texts: Sequence[str] | None = None, bounds: Box | None = None, plate: bool = True,
) -> list[PlacedText]:
    """Draw ``count`` readable text labels (optionally on a coloured plate) away from ``avoid``.

    Texts come from ``texts`` or :data:`DISTRACTOR_WORDS`. Returns the labels drawn.
    """
    h, w = img.shape[:2]
    bounds = bounds or (0, 0, w, h)
    words = list(texts) if texts is not None else list(DISTRACTOR_WORDS)
    occupied = list(avoid)
    out: list[PlacedText] = []
    for _ in range(count):
        text = words[int(rng.integers(len(words)))]
        face, italic = random_font(rng, readable=rng.random() < 0.8)
        patch = render_text(text, float(rng.uniform(*glyph_range)), face,
                            int(rng.integers(1, 4)), italic)
        pw, ph = patch.size
        pad = max(4, int(patch.glyph_height * 0.4)) if plate else 0
        spot = find_free_spot(rng, (pw + 2 * pad, ph + 2 * pad), bounds, occupied, tries=12)
        if spot is None:
            continue
        x, y = spot
        if plate:
            plate_col = rand_color(rng, 30, 240)
            cv2.rectangle(img, (x, y), (x + pw + 2 * pad - 1, y + ph + 2 * pad - 1), plate_col, -1)
            ink = ink_for(plate_col)
        else:
            ink = rand_color(rng, 0, 256)
        out.append(paste_text(img, patch, x + pad, y + pad, ink))
        occupied.append((x, y, x + pw + 2 * pad, y + ph + 2 * pad))
    return out


# --------------------------------------------------------------------------------------------
# codes


def random_code(rng: np.random.Generator, pattern: str | None = None) -> str:
    """Return a random code such as ``"K7-4F2"`` following ``pattern`` (random if ``None``)."""
    if pattern is None:
        pattern = CODE_PATTERNS[int(rng.integers(len(CODE_PATTERNS)))]
    chars = []
    for p in pattern:
        if p == "L":
            chars.append(CODE_LETTERS[int(rng.integers(len(CODE_LETTERS)))])
        elif p == "D":
            chars.append(CODE_DIGITS[int(rng.integers(len(CODE_DIGITS)))])
        else:
            chars.append(p)
    return "".join(chars)


def _mutable_positions(code: str) -> list[int]:
    return [i for i, c in enumerate(code) if c in CODE_LETTERS or c in CODE_DIGITS]


def near_miss_codes(
    rng: np.random.Generator, code: str, count: int, exclude: Sequence[str] = (),
) -> list[str]:
    """Return ``count`` distinct codes that differ from ``code`` in 1 or 2 characters.

    Letters are replaced by letters and digits by digits, so the layout stays the same. Codes in
    ``exclude`` are never returned.
    """
    positions = _mutable_positions(code)
    banned = {code, *exclude}
    out: list[str] = []
    for _ in range(count * 50):
        if len(out) == count:
            break
        k = 1 if rng.random() < 0.6 or len(positions) < 2 else 2
        picked = rng.choice(len(positions), size=k, replace=False)
        chars = list(code)
        for j in picked:
            i = positions[int(j)]
            pool = CODE_LETTERS if chars[i] in CODE_LETTERS else CODE_DIGITS
            options = [c for c in pool if c != code[i]]
            chars[i] = options[int(rng.integers(len(options)))]
        cand = "".join(chars)
        if cand not in banned:
            banned.add(cand)
            out.append(cand)
    if len(out) < count:
        raise ValueError(f"cannot make {count} near misses of {code!r}")
    return out


def pivot_choices(
    rng: np.random.Generator, answer: Any, neighbours: Callable[[Any], Sequence[Any]],
    count: int, fmt: Callable[[Any], str] = str, exclude: Sequence[str] = (),
) -> tuple[str, ...]:
    """Return ``count`` shuffled choices whose centre is *not* the answer.

    Distractors built around the answer (near-miss codes, answer ± k) make the answer the medoid
    or median of the list, which a policy can pick without looking at the image. Instead a hidden
    *pivot* is drawn among the answer's neighbours, and the distractors are the pivot's
    neighbours: the answer is then one neighbour of the pivot like every other option, so no
    choice-only statistic singles it out. The pivot itself is never offered.
    """
    banned = {fmt(answer), *exclude}
    near = [n for n in neighbours(answer) if fmt(n) not in banned]
    if not near:
        raise ValueError(f"no neighbours of {answer!r} to build choices from")
    pivot = near[int(rng.integers(len(near)))]
    banned.add(fmt(pivot))
    options = [fmt(answer)]
    for pool in (neighbours(pivot), near):
        for i in rng.permutation(len(pool)):
            text = fmt(pool[int(i)])
            if len(options) == count:
                break
            if text not in banned:
                banned.add(text)
                options.append(text)
    if len(options) < count:
        raise ValueError(f"cannot make {count} choices around {answer!r}")
    order = rng.permutation(len(options))
    return tuple(options[int(i)] for i in order)


def value_window(rng: np.random.Generator, low: int, high: int, count: int,
                 contains: int | None = None, step: int = 1) -> list[int]:
    """Return ``count`` consecutive candidate values ``start, start + step, ...`` in the range.

    With ``contains`` the window holds that value at a uniformly random position, then is shifted
    (clipped) to fit the feasible range; without it the window is drawn uniformly among the
    windows that fit. When the range holds fewer than ``count`` values the window extends past
    ``high`` (a family whose configuration allows so few values cannot offer more choices).
    """
    if count < 1 or step < 1 or high < low:
        raise ValueError(f"need count >= 1, step >= 1 and low <= high, got {count}, {step}, "
                         f"[{low}, {high}]")
    last_start = max(low, high - (count - 1) * step)
    if contains is None:
        start = low + step * int(rng.integers((last_start - low) // step + 1))
    else:
        if not low <= contains <= high:
            raise ValueError(f"value {contains} outside the feasible range [{low}, {high}]")
        start = contains - step * int(rng.integers(count))
        start = min(max(start, low), last_start)
        start += (contains - start) % step  # stay on the value's lattice
        if start > contains:
            start -= step
    return [start + i * step for i in range(count)]


def window_choices(rng: np.random.Generator, answer: int, low: int, high: int, count: int,
                   fmt: Callable[[int], str] = str, step: int = 1) -> tuple[str, ...]:
    """Return ``count`` shuffled consecutive values in ``[low, high]`` that include ``answer``.

    The answer sits at a uniformly random position of the window (see :func:`value_window`), so
    no statistic of the options (median, centre, spread) points at it.
    """
    return shuffled(rng, [fmt(v) for v in value_window(rng, low, high, count, answer, step)])


def single_edits(code: str) -> list[str]:
    """Return every code that differs from ``code`` in exactly one letter (or one digit)."""
    out = []
    for i in _mutable_positions(code):
        pool = CODE_LETTERS if code[i] in CODE_LETTERS else CODE_DIGITS
        out += [code[:i] + c + code[i + 1:] for c in pool if c != code[i]]
    return out


CONFUSABLE_CYCLES: tuple[str, ...] = ("CGDUJ", "EFPRK", "HMN", "YTXAWV", "2734659")
"""Code characters on cycles of look-alikes at view resolution: each character's two cycle
neighbours are among its nearest glyphs when downscaled (RMS distance of the INTER_AREA-downscaled
renders in the readable faces at 4–5 px view height, measured in
``tests/test_choice_leak.py``). Every character has exactly two neighbours, so every code of a
layout has the same number of look-alike edits, which keeps the answer uniform among the options
of :func:`code_choices`. Letters and digits never mix, so the layout is kept."""


@lru_cache(maxsize=64)
def confusable_neighbours(char: str) -> tuple[str, ...]:
    """Return the two look-alike neighbours of a code character on :data:`CONFUSABLE_CYCLES`."""
    for cycle in CONFUSABLE_CYCLES:
        i = cycle.find(char)
        if i >= 0:
            return tuple(dict.fromkeys((cycle[i - 1], cycle[(i + 1) % len(cycle)])))
    return ()


def confusable_edits(code: str) -> list[str]:
    """Return every code that differs from ``code`` in one character, by a look-alike."""
    return [code[:i] + c + code[i + 1:] for i in _mutable_positions(code)
            for c in confusable_neighbours(code[i])]


def code_choices(
    rng: np.random.Generator, code: str, count: int = 6, exclude: Sequence[str] = (),
) -> tuple[str, ...]:
    """Return ``count`` shuffled codes: ``code`` and look-alike near misses not centred on it.

    A hidden pivot is a look-alike edit of the code and the options are look-alike edits of the
    pivot (see :func:`pivot_choices`): the edit graph is regular (:data:`CONFUSABLE_CYCLES`), so
    given the options the answer is a uniformly random member, and every option differs from the
    answer only in one or two characters whose downscaled glyphs look alike.
    """
    return pivot_choices(rng, code, confusable_edits, count, exclude=exclude)


def code_variants(code: str) -> tuple[str, ...]:
    """Return accepted spellings of ``code`` besides itself (without separators, spaced)."""
    bare = "".join(c for c in code if c.isalnum())
    spaced = code.replace("-", " ")
    return tuple(dict.fromkeys(v for v in (bare, spaced) if v != code))


# --------------------------------------------------------------------------------------------
# degradations


def faded_color(paper: Color, contrast: float) -> Color:
    """Return ink that is ``contrast`` gray levels darker than ``paper`` (same hue shift)."""
    return tuple(int(np.clip(round(c - contrast), 0, 255)) for c in paper)  # type: ignore[return-value]


def compress_dynamic_range(img: np.ndarray, low: Sequence[float], span: float) -> np.ndarray:
    """Return ``img`` mapped linearly from 0..255 to ``low[c] .. low[c] + span`` per channel.

    ``low`` has one offset per channel (a tint); the result is a washed-out, low-contrast image.
    One ``cv2.transform`` pass (rounded, saturated), about three times faster than a 3-channel
    ``cv2.LUT``.
    """
    channels = 1 if img.ndim == 2 else img.shape[2]
    if len(low) != channels:
        raise ValueError(f"need {channels} offsets, got {len(low)}")
    m = np.zeros((channels, channels + 1), np.float32)
    m[np.arange(channels), np.arange(channels)] = span / 255.0
    m[:, channels] = np.asarray(low, np.float32)
    if channels == 1:
        return cv2.convertScaleAbs(img, alpha=float(m[0, 0]), beta=float(m[0, 1]))
    return cv2.transform(img, m)


NOISE_TILE_SHAPE: tuple[int, int] = (197, 643)
"""Rows and columns of the cached unit-noise tile (prime-ish sizes: repeats never align)."""


@lru_cache(maxsize=1)
def _noise_tile_parts() -> tuple[np.ndarray, np.ndarray]:
    """Return the cached read-only positive and negative parts of a unit Gaussian noise tile.

    The tile (``NOISE_TILE_SHAPE`` x 3, float32) comes from a fixed seed, so it is the same in
    every process; ``unit = pos - neg`` with ``pos, neg >= 0``.
    """
    unit = np.random.default_rng(20240531).standard_normal((*NOISE_TILE_SHAPE, 3),
                                                           dtype=np.float32)
    pos, neg = np.maximum(unit, 0.0), np.maximum(-unit, 0.0)
    pos.setflags(write=False)
    neg.setflags(write=False)
    return pos, neg


def add_sensor_noise(
    img: np.ndarray, rng: np.random.Generator, sigma: float, inplace: bool = False,
) -> np.ndarray:
    """Return ``img`` plus zero-mean Gaussian noise of std ``sigma`` levels.

    With ``inplace`` the (writeable) ``img`` itself is modified and returned; otherwise the
    result is written to a new array in the same pass (no separate copy).

    The noise is one fixed tile of unit noise (``NOISE_TILE_SHAPE``), scaled by ``sigma`` and
    rounded to whole levels once per call (on the tile, not on the image), then repeated from a
    random offset with saturating ``uint8`` adds: indistinguishable from fresh noise at these
    amplitudes and several times faster. Deterministic in ``rng`` and independent of the
    number of OpenCV threads (integer element-wise ops only).
    """
    if sigma <= 0:
        return img
    h, w = img.shape[:2]
    pos_unit, neg_unit = _noise_tile_parts()
    th, tw = NOISE_TILE_SHAPE
    oy, ox = int(rng.integers(th)), int(rng.integers(tw))
    flip = bool(rng.integers(2))
    # scale and round the tile once, then lay it out as one full-width strip starting at
    # column ``ox``: the image is then processed in a few contiguous full-width row bands
    alpha = float(sigma)
    reps = -(-(w + ox) // tw)
    pos = np.tile(cv2.convertScaleAbs(pos_unit, alpha=alpha), (1, reps, 1))[:, ox:ox + w]
    neg = np.tile(cv2.convertScaleAbs(neg_unit, alpha=alpha), (1, reps, 1))[:, ox:ox + w]
    if flip:
        pos, neg = neg, pos
    if img.ndim == 2:
        pos, neg = np.ascontiguousarray(pos[..., 0]), np.ascontiguousarray(neg[..., 0])
    elif img.shape[2] != 3:
        raise ValueError(f"add_sensor_noise needs a gray or RGB image, got {img.shape}")
    out = img if inplace else np.empty_like(img)
    for y in range(-oy, h, th):
        y0, y1 = max(y, 0), min(y + th, h)
        ty = y0 - y
        band = out[y0:y1]
        cv2.add(img[y0:y1], pos[ty:ty + y1 - y0], dst=band)
        cv2.subtract(band, neg[ty:ty + y1 - y0], dst=band)
    return out


def mild_blur(img: np.ndarray, sigma: float) -> np.ndarray:
    """Return ``img`` blurred with a Gaussian of std ``sigma`` px (unchanged if ``sigma`` <= 0)."""
    return cv2.GaussianBlur(img, (0, 0), sigma) if sigma > 0 else img


def jpeg_artifacts(img: np.ndarray, quality: int) -> np.ndarray:
    """Return ``img`` after a JPEG round trip at ``quality`` (RGB in, RGB out)."""
    ok, buf = cv2.imencode(".jpg", cv2.cvtColor(img, cv2.COLOR_RGB2BGR),
                           [cv2.IMWRITE_JPEG_QUALITY, int(quality)])
    if not ok:  # pragma: no cover - OpenCV always encodes uint8 RGB
        raise RuntimeError("JPEG encoding failed")
    return cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


# --------------------------------------------------------------------------------------------
# measurement and geometry


def to_gray(img: np.ndarray) -> np.ndarray:
    """Return a ``uint8`` grayscale version of an RGB or grayscale image."""
    return img if img.ndim == 2 else cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)


def ink_contrast(gray: np.ndarray, mask: np.ndarray) -> float:
    """Return ``|mean(ink) - mean(surround)|`` in gray levels for a region and its ink mask.

    The surround is the region minus the ink dilated by one pixel (3x3), so anti-aliased stroke
    edges count for neither side. Returns 0 when either side is empty.
    """
    g = to_gray(gray).astype(np.float32)
    ink = mask.astype(bool)
    near = cv2.dilate(ink.astype(np.uint8), np.ones((3, 3), np.uint8)).astype(bool)
    surround = ~near
    if not ink.any() or not surround.any():
        return 0.0
    return float(abs(g[ink].mean() - g[surround].mean()))


def autocontrast_luts(img: np.ndarray, cutoff: float = 0.0) -> np.ndarray:
    """Return the per-channel lookup tables of PIL's ``ImageOps.autocontrast(img, cutoff)``.

    For each channel, ``cutoff`` percent of the pixels are ignored at each end of the histogram
    and the remaining range is stretched linearly to 0..255 (PIL's exact integer arithmetic).
    Returns a ``uint8`` array ``(256, 1, C)`` usable with ``cv2.LUT`` (``C`` = 1 for gray).
    Applying the tables to a small region measures the op's effect without transforming the
    whole image.
    """
    channels = 1 if img.ndim == 2 else img.shape[2]
    luts = []
    for c in range(channels):
        hist = cv2.calcHist([np.ascontiguousarray(img)], [c], None, [256], [0, 256]).ravel()
        hist = hist.astype(np.int64)
        n = int(hist.sum())
        cut = int(n * float(cutoff) // 100)
        lo = int(np.searchsorted(np.cumsum(hist), cut, side="right"))
        hi = 255 - int(np.searchsorted(np.cumsum(hist[::-1]), cut, side="right"))
        if hi <= lo:
            luts.append(np.arange(256, dtype=np.uint8))
            continue
        scale = 255.0 / (hi - lo)
        ix = (np.arange(256, dtype=np.float64) * scale - lo * scale).astype(np.int64)
        luts.append(np.clip(ix, 0, 255).astype(np.uint8))
    return np.stack(luts, axis=1).reshape(256, 1, channels)


def autocontrast_pil(img: np.ndarray, cutoff: float = 0.0) -> np.ndarray:
    """Return ``img`` after PIL's ``ImageOps.autocontrast(img, cutoff)`` (per-channel LUTs)."""
    luts = autocontrast_luts(img, cutoff)
    return cv2.LUT(img, luts[:, :, 0] if img.ndim == 2 else luts)


def box_to_bbox1000(box: Sequence[float], width: int, height: int) -> list[int]:
    """Return ``box`` (pixels) as an integer 0–1000 ``bbox_2d`` that still covers it.

    Rounded outward so that the crop tool's truncating de-normalisation
    (:func:`bbox1000_to_box`) yields a pixel box containing ``box``.
    """
    x0, y0, x1, y1 = box
    bx0, by0 = max(0, math.floor(x0 * 1000 / width)), max(0, math.floor(y0 * 1000 / height))
    bx1, by1 = min(1000, math.ceil(x1 * 1000 / width)), min(1000, math.ceil(y1 * 1000 / height))
    # k / 1000 * side can land a hair below an integer (290 / 1000 * 100 = 28.999...), which the
    # truncation turns into one pixel less: widen by one unit until the round trip covers the box
    while bx1 < 1000 and int(bx1 / 1000 * width) < x1:
        bx1 += 1
    while by1 < 1000 and int(by1 / 1000 * height) < y1:
        by1 += 1
    while bx0 > 0 and int(bx0 / 1000 * width) > x0:
        bx0 -= 1
    while by0 > 0 and int(by0 / 1000 * height) > y0:
        by0 -= 1
    return [bx0, by0, bx1, by1]


def bbox1000_to_box(bbox: Sequence[float], width: int, height: int) -> Box:
    """Return the pixel box Agentic-MME's crop takes for a 0–1000 ``bbox_2d`` (truncating)."""
    x0, x1 = sorted((int(bbox[0] / 1000 * width), int(bbox[2] / 1000 * width)))
    y0, y1 = sorted((int(bbox[1] / 1000 * height), int(bbox[3] / 1000 * height)))
    return (min(max(0, x0), width), min(max(0, y0), height),
            min(max(0, x1), width), min(max(0, y1), height))


def crop_zoom_for(
    crop_size: tuple[int, int], glyph_height: float, min_view_height: float,
    margin: float = 1.5, view_size: int = VIEW_SIZE, max_zoom: float = 5.0,
) -> float | None:
    """Return the smallest zoom (step 0.5, 1–``max_zoom``) at which a crop shows glyphs legibly.

    Legible means ``glyph_height * zoom * view_scale(crop * zoom) >= margin * min_view_height``.
    Returns ``None`` when no allowed zoom reaches it (the crop box is too large).
    """
    w, h = crop_size
    for zoom in np.arange(1.0, max_zoom + 0.25, 0.5):
        out_w, out_h = int(w * zoom), int(h * zoom)
        if glyph_height * zoom * view_scale(out_h, out_w, view_size) >= margin * min_view_height:
            return float(zoom)
    return None


def region_evidence(
    evidence_id: str, clean: np.ndarray, box: Box, mask: np.ndarray, *, text: str | None,
    glyph_height: float, image: int = 0, clean_is_region: bool = False,
) -> Evidence:
    """Return an :class:`Evidence` for ``box`` from an undegraded render.

    ``clean`` is the whole clean image (cropped here at ``box``) or, with ``clean_is_region``,
    already the region (e.g. an upright render of rotated evidence). ``mask`` is the ink mask
    with the region's shape. The stored arrays are read-only copies.
    """
    x0, y0, x1, y1 = box
    region = clean if clean_is_region else clean[y0:y1, x0:x1]
    gray = np.array(to_gray(region), dtype=np.uint8, copy=True)
    ink = np.array(mask, dtype=bool, copy=True)
    if gray.shape != ink.shape:
        raise ValueError(f"clean {gray.shape} and mask {ink.shape} differ")
    gray.setflags(write=False)
    ink.setflags(write=False)
    return Evidence(id=evidence_id, image=image, box=(float(x0), float(y0), float(x1), float(y1)),
                    text=text, glyph_height=float(glyph_height), clean=gray, mask=ink)


def embed_mask(mask: np.ndarray, at: tuple[int, int], shape: tuple[int, int]) -> np.ndarray:
    """Return a ``bool`` array of ``shape``, False except ``mask`` placed at ``at = (x, y)``."""
    out = np.zeros(shape, bool)
    x, y = at
    out[y:y + mask.shape[0], x:x + mask.shape[1]] = mask
    return out


def freeze(img: np.ndarray) -> np.ndarray:
    """Return ``img`` as a contiguous read-only array (no copy when already contiguous)."""
    out = np.ascontiguousarray(img)
    out.setflags(write=False)
    return out
