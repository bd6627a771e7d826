"""A photographed supermarket shelf: shelf boards, price rails, packages, shelf-edge tags.

The scene is drawn on a flat canvas (the shelf unit seen head-on) and then photographed: a mild
whole-image homography (:func:`camera_tilt`, the camera slightly rolled and off-axis) before the
camera chain of :func:`~m3gym.tasks.render.camera.camera_pipeline`. Packages are shaded 3-D
objects: extruded boxes (:func:`~m3gym.tasks.render.lookup_scenes.draw_box3d`) and turned
vessels (cans, bottles, jars) with a cylindrical light profile and a specular streak, each with
a Faker brand and product printed in TrueType. Shelf-edge price tags (:class:`TagSpec`) carry
the product's name in small type, the price, a tiny barcode and optionally a coloured dot
sticker; :func:`tag_patch` returns the flat tag and the price's ink box in it.

Pure functions of a passed ``np.random.Generator``; drawing functions draw into an RGB
``uint8`` image in place and return pixel boxes ``(x0, y0, x1, y1)``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.tasks import render as R
from m3gym.tasks.render import lookup_scenes as LS
from m3gym.tasks.render.content import PRODUCT_SIZES

PACKAGE_KINDS: tuple[str, ...] = ("box", "can", "bottle", "jar")
"""Shapes of the packages on the shelves."""

RAIL_COLORS: tuple[R.Color, ...] = ((58, 60, 66), (38, 48, 86), (34, 70, 48), (92, 34, 42),
                                    (72, 72, 76))
"""Price-rail plastics (dark, so a light tag stands out and never floods into the rail)."""

STRIPE_COLORS: tuple[R.Color, ...] = ((34, 46, 96), (30, 84, 52), (60, 60, 64), (112, 30, 40))
"""Store colours of a tag's header stripe (far from every dot colour)."""

CAP_COLORS: tuple[R.Color, ...] = ((235, 235, 230), (190, 192, 196), (40, 40, 44),
                                   (196, 170, 96))
"""Neutral cap and lid colours (white, silver, black, gold): never a question's dot colour."""

DOT_COLORS: tuple[str, ...] = ("red", "blue", "green", "orange", "purple", "cyan", "pink",
                               "yellow")
"""Named colours of the tags' dot stickers (keys of :data:`R.NAMED_COLORS`)."""

DOT_RGB: np.ndarray = np.asarray([R.NAMED_COLORS[c] for c in DOT_COLORS], np.float32)
"""The dot colours as an ``(n, 3)`` float array (for :func:`dot_clearance`)."""

DOT_CLEARANCE: float = 80.0
"""Least RGB distance between a package's print colour and every dot colour."""

FALLBACK_PRINT: tuple[R.Color, ...] = ((60, 50, 40), (75, 65, 55), (90, 80, 70), (70, 70, 70))
"""Warm grays clear of every dot colour (checked by a test): used when random draws are not."""

TALKER_WORDS: tuple[str, ...] = ("SALE", "NEW", "SPECIAL", "HOT DEAL", "BUY 2 GET 1", "SAVE",
                                 "LOW PRICE", "2 FOR 1", "ORGANIC", "FRESH")
"""Headlines of promotional shelf talkers."""

TALKER_COLORS: tuple[R.Color, ...] = ((214, 36, 40), (250, 206, 30), (240, 120, 20),
                                     (30, 140, 70), (30, 90, 190))
"""Header colours of shelf talkers (large cards: never mistaken for a dot)."""


# --------------------------------------------------------------------------------------------
# the shelf unit


@dataclass(frozen=True)
class ShelfRow:
    """One shelf: products stand on ``base`` (a row), the price rail spans ``rail`` rows.

    Attributes:
        top: the highest row a product on this shelf may reach.
        base: the row the products stand on (the board's top, hidden by the rail).
        rail: ``(y0, y1)`` of the price rail's front face.
    """

    top: int
    base: int
    rail: tuple[int, int]


def shelf_rows(height: int, count: int, rail_height: int, kick: int) -> list[ShelfRow]:
    """Return ``count`` evenly spaced shelves over ``height`` rows above a ``kick`` plinth."""
    if count < 1 or rail_height < 4:
        raise ValueError(f"need at least one shelf and a rail of 4+ px, got {count}, "
                         f"{rail_height}")
    gap = (height - kick) / count
    if gap < 3 * rail_height:
        raise ValueError(f"{count} shelves with {rail_height} px rails do not fit {height} px")
    rows = []
    for i in range(count):
        y1 = int(round((i + 1) * gap))
        y0 = y1 - rail_height
        rows.append(ShelfRow(top=int(round(i * gap)) + rail_height // 2, base=y0 + 4,
                             rail=(y0, y1)))
    return rows


def draw_back_panel(img: np.ndarray, rng: np.random.Generator, rows: Sequence[ShelfRow]) -> None:
    """Paint the shelf unit's back (light metal with peg holes), uprights and plinth (in place).

    Under every rail the back falls into a soft shadow (the board above blocks the ceiling
    light).
    """
    h, w = img.shape[:2]
    metal = R.jitter_color(rng, (214, 214, 210), 14)
    LS.fill_gradient(img, (0, 0, w, h), LS.shade(metal, 1.04), LS.shade(metal, 0.9))
    step = int(rng.integers(26, 40))
    for dy, dx, dark in ((0, 0, 0.88), (0, 1, 0.88), (1, 0, 0.88), (1, 1, 0.88), (-1, 0, 0.95),
                         (2, 0, 0.95), (0, -1, 0.95), (0, 2, 0.95), (2, 1, 0.95), (1, 2, 0.95)):
        holes = img[step // 2 + dy::step, step // 2 + dx::step]  # a peg hole's 2x2 core, rim
        holes[:] = (holes * np.float32(dark) + 0.5).astype(np.uint8)
    for r in rows:
        top = r.rail[1]
        depth = max(24, (r.rail[1] - r.top) // 6)
        tables = scale_table(np.linspace(0.55, 1.0, depth, dtype=np.float32))
        for k in range(top, min(h, top + depth)):
            img[k] = cv2.LUT(img[k], tables[k - top])
    last = rows[-1].rail[1]
    plinth = R.jitter_color(rng, (52, 52, 56), 10)
    LS.fill_gradient(img, (0, last, w, h), LS.shade(plinth, 0.8), LS.shade(plinth, 1.2))
    post = max(14, w // 70)
    for x0 in (0, w - post):
        LS.fill_gradient(img, (x0, 0, x0 + post, h), (150, 152, 156), (110, 112, 116))
        LS.stroke_rect(img, (x0, 0, x0 + post, h), (80, 80, 84), 1)


def draw_rail(img: np.ndarray, row: ShelfRow, color: R.Color) -> R.Box:
    """Draw a shelf's price rail: a lit lip, the channel face and a dark lower lip (in place)."""
    w = img.shape[1]
    y0, y1 = row.rail
    lip = max(3, (y1 - y0) // 10)
    LS.fill_gradient(img, (0, y0, w, y1), LS.shade(color, 1.1), LS.shade(color, 0.85))
    LS.fill_gradient(img, (0, y0, w, y0 + lip), LS.shade(color, 1.7), LS.shade(color, 1.25))
    LS.fill_gradient(img, (0, y1 - lip, w, y1), LS.shade(color, 0.7), LS.shade(color, 0.45))
    return 0, y0, w, y1


# --------------------------------------------------------------------------------------------
# packages


@dataclass(frozen=True)
class PackageLook:
    """Everything needed to draw one product's package (drawn again for every facing).

    Attributes:
        kind: one of :data:`PACKAGE_KINDS`.
        size: ``(w, h)`` of the package's front, pixels.
        body: the package colour; ``label``: its label or band colour; ``cap``: lid colour.
        brand: the brand's TrueType patch; ``line``: a second printed line (product kind).
    """

    kind: str
    size: tuple[int, int]
    body: R.Color
    label: R.Color
    cap: R.Color
    brand: R.TextPatch | None
    line: R.TextPatch | None


def package_look(rng: np.random.Generator, kind: str, max_height: int, product: str,
                 scale: float = 1.0, span: int | None = None) -> PackageLook:
    """Draw the look of a package of ``kind`` at most ``max_height`` px tall.

    ``scale`` multiplies the package's width range (bigger shelves, bigger packages); with
    ``span`` the width is then adjusted (by up to a third) so whole facings fill ``span`` px.

    ``product`` (brand and product kind, e.g. "Dekker Oat Milk") gives the printed brand and
    product lines.
    """
    if kind not in PACKAGE_KINDS:
        raise ValueError(f"unknown package kind {kind!r}; expected one of {PACKAGE_KINDS}")
    wide = {"box": (110, 190), "can": (64, 104), "bottle": (64, 100), "jar": (86, 136)}[kind]
    tall = {"box": (1.1, 1.9), "can": (1.3, 1.8), "bottle": (2.6, 3.5), "jar": (1.0, 1.35)}[kind]
    w = int(rng.integers(int(wide[0] * scale), int(wide[1] * scale)))
    h = int(min(max_height, w * rng.uniform(*tall)))
    if span is not None:
        count = max(1, round((span - facing_gap(w)) / (w + facing_gap(w))))
        fit = (span - facing_gap(w)) // count - facing_gap(w)
        w = int(np.clip(fit, 0.75 * w, 1.33 * w))
    if h < 60:
        raise ValueError(f"a shelf {max_height} px tall is too low for a package")
    words = product.split()
    brand_w = w - 14 if kind != "bottle" else int(w * 0.8)
    brand = _fitting(words[0].upper(), 0.16 * w, brand_w, R.pick(rng, LS.DISPLAY_FACES))
    line = _fitting(" ".join(words[1:]), 0.09 * w, brand_w,
                    R.pick(rng, ("sans", "condensed", "serif")))
    return PackageLook(kind, (w, h), package_color(rng, 50, 230), package_color(rng, 40, 235),
                       R.pick(rng, CAP_COLORS), brand, line)


def package_color(rng: np.random.Generator, lo: int, hi: int, tries: int = 30) -> R.Color:
    """Return a random print colour at least :data:`DOT_CLEARANCE` away from every dot colour.

    The distance is checked for the colour as lit, in shade and under the specular streak.

    The named colours are reserved for the tags' dot stickers, so a question's colour names
    one sticker, not a can of the same paint. After ``tries`` random draws fail, a random warm
    gray of :data:`FALLBACK_PRINT` (every one of them clear) is used: the clearance always holds.
    """
    for _ in range(tries):
        color = R.rand_color(rng, lo, hi)
        if dot_clearance(color) >= DOT_CLEARANCE:
            return color
    return FALLBACK_PRINT[int(rng.integers(len(FALLBACK_PRINT)))]


def dot_clearance(color: R.Color) -> float:
    """Return the least RGB distance of ``color`` (lit, shaded, streaked) to any dot colour."""
    dots = DOT_RGB[None]
    c = np.asarray(color, np.float32)
    seen = np.stack([c, 0.75 * c, 0.65 * c + 0.35 * 255.0])[:, None]  # lit, shaded, streak
    return float(np.linalg.norm(dots - seen, axis=2).min())


def product_name(rng: np.random.Generator) -> str:
    """Return a Faker product without its size ("Dekker Oat Milk"): no digits on a tag's name."""
    full = R.fake_product(rng, ascii_only=True)
    for size in sorted(PRODUCT_SIZES, key=len, reverse=True):
        if full.endswith(" " + size):
            return full[:-len(size) - 1]
    return full


def _fitting(text: str, glyph: float, width: int, face: str) -> R.TextPatch | None:
    """Return ``text`` at ``glyph`` px, shrunk to fit ``width`` (None when it cannot)."""
    if not text.strip():
        return None
    patch = LS.text_patch(text, max(6.0, glyph), face)
    if patch.size[0] > width:
        small = glyph * width / patch.size[0]
        if small < 6.0:
            return None
        patch = LS.text_patch(text, small, face)
    return patch if patch.size[0] <= width else None


def draw_package(img: np.ndarray, look: PackageLook, x: int, base: int, lit_left: bool
                 ) -> R.Box:
    """Draw ``look`` with its front's bottom-left at ``(x, base)`` (in place); return its box."""
    if look.kind == "box":
        return _draw_box(img, look, x, base, lit_left)
    return paste_sprite(img, vessel_sprite(look, lit_left), x, base)


def _print_lines(canvas: np.ndarray, look: PackageLook, cx: float, y: int) -> None:
    """Print the brand and product lines of ``look`` centred on ``cx`` from row ``y`` down."""
    ink = R.ink_for(look.label)
    if look.brand is not None:
        LS.paste_center(canvas, look.brand, cx, y, ink)
        y += look.brand.size[1] + max(3, look.brand.size[1] // 3)
    if look.line is not None and y + look.line.size[1] < canvas.shape[0]:
        LS.paste_center(canvas, look.line, cx, y, ink)


def _draw_box(img: np.ndarray, look: PackageLook, x: int, base: int, lit_left: bool) -> R.Box:
    """Draw a carton: an extruded box with a label panel on its front."""
    w, h = look.size
    depth = max(8, w // 9)
    top = base - h + int(depth * 0.8)
    front = (x, top, x + w, base)
    whole = LS.draw_box3d(img, front, look.body, depth, lit_left)
    panel = (x + 5, top + h // 7, x + w - 5, top + h // 7 + int(h * 0.38))
    LS.fill_gradient(img, panel, LS.shade(look.label, 1.06), LS.shade(look.label, 0.9))
    sub = img[panel[1]:panel[3], panel[0]:panel[2]]
    _print_lines(sub, look, (panel[2] - panel[0]) / 2, 6)
    return whole


def _vessel_outline(kind: str, w: int, h: int) -> tuple[np.ndarray, tuple[int, int], int]:
    """Return a vessel's silhouette polygon, its label rows ``(y0, y1)`` and its cap's top row.

    Rows are measured from the vessel's top (0) down to its base (``h``).
    """
    if kind == "can":
        rim = max(4, w // 9)
        pts = [(0, rim), (w, rim), (w, h - rim), (0, h - rim)]
        return np.array(pts, np.int32), (int(h * 0.18), int(h * 0.82)), rim
    if kind == "jar":
        lid = max(8, int(h * 0.16))
        pts = [(int(w * 0.04), 0), (int(w * 0.96), 0), (int(w * 0.96), lid), (w, lid + 4),
               (w, h - 6), (w - 6, h), (6, h), (0, h - 6), (0, lid + 4), (int(w * 0.04), lid)]
        return np.array(pts, np.int32), (lid + int(h * 0.14), h - int(h * 0.14)), lid
    neck, cap = int(w * 0.36), max(10, int(h * 0.07))
    nx0 = (w - neck) // 2
    shoulder, neck_top = int(h * 0.34), int(h * 0.16)
    pts = [(nx0 - 2, 0), (nx0 + neck + 2, 0), (nx0 + neck + 2, cap), (nx0 + neck, cap),
           (nx0 + neck, neck_top), (w, shoulder), (w, h - 8), (w - 8, h), (8, h), (0, h - 8),
           (0, shoulder), (nx0, neck_top), (nx0, cap), (nx0 - 2, cap)]
    return np.array(pts, np.int32), (int(h * 0.45), int(h * 0.78)), cap


def vessel_sprite(look: PackageLook, lit_left: bool) -> tuple[np.ndarray, np.ndarray]:
    """Return a can, bottle or jar as ``(rgb float32, alpha float32 (h, w, 1))``.

    The print is drawn flat, then shaded by a cylindrical light profile with a specular streak
    on the lit side. Drawn once per product, pasted for every facing.
    """
    w, h = look.size
    poly, (ly0, ly1), cap = _vessel_outline(look.kind, w, h)
    canvas = np.empty((h, w, 3), np.uint8)
    canvas[:] = look.body
    canvas[:cap] = look.cap
    canvas[ly0:ly1] = look.label
    if look.kind == "can":  # the lid's lit ellipse and the bottom rim
        cv2.ellipse(canvas, (w // 2, cap), (w // 2, cap), 0, 0, 360, (200, 202, 206), -1,
                    cv2.LINE_AA)
        cv2.ellipse(canvas, (w // 2, cap), (w // 2 - 3, max(1, cap - 2)), 0, 0, 360,
                    (168, 170, 176), 1, cv2.LINE_AA)
        canvas[h - cap:] = (150, 152, 158)
    _print_lines(canvas[ly0:ly1], look, w / 2, max(3, (ly1 - ly0) // 8))
    u = (np.arange(w, dtype=np.float32) + 0.5) / w
    light = 0.3 if lit_left else 0.7
    profile = (0.52 + 0.5 * np.sin(np.pi * u) ** 0.6)[None, :, None]
    streak = np.exp(-((u - light) / 0.06) ** 2)[None, :, None] * 0.45
    body = canvas.astype(np.float32) * (profile * (1 - streak)) + 255.0 * streak
    mask = np.zeros((h + 1, w + 1), np.uint8)
    if look.kind == "can":
        cv2.rectangle(mask, (0, cap), (w - 1, h - cap), 255, -1)
        cv2.ellipse(mask, (w // 2, cap), (w // 2, cap), 0, 0, 360, 255, -1, cv2.LINE_AA)
        cv2.ellipse(mask, (w // 2, h - cap), (w // 2, cap), 0, 0, 180, 255, -1, cv2.LINE_AA)
    else:
        cv2.fillPoly(mask, [poly], 255, cv2.LINE_AA)
    return body, mask[:h, :w].astype(np.float32)[..., None] / 255.0


def paste_sprite(img: np.ndarray, sprite: tuple[np.ndarray, np.ndarray], x: int, base: int
                 ) -> R.Box:
    """Blend a :func:`vessel_sprite` with its bottom-left at ``(x, base)`` (in place); its box."""
    body, alpha = sprite
    h, w = body.shape[:2]
    y0 = base - h
    ih, iw = img.shape[:2]
    sx0, sy0, sx1, sy1 = max(0, x), max(0, y0), min(iw, x + w), min(ih, base)
    if sx1 <= sx0 or sy1 <= sy0:
        return sx0, sy0, sx0, sy0
    a = alpha[sy0 - y0:sy1 - y0, sx0 - x:sx1 - x]
    src = body[sy0 - y0:sy1 - y0, sx0 - x:sx1 - x]
    dst = img[sy0:sy1, sx0:sx1].astype(np.float32)
    img[sy0:sy1, sx0:sx1] = np.clip(dst + a * (src - dst) + 0.5, 0, 255).astype(np.uint8)
    return sx0, sy0, sx1, sy1


def facing_gap(width: int) -> int:
    """Return the gap between two facings of a package ``width`` px wide."""
    return max(3, width // 14)


def fill_facings(img: np.ndarray, rng: np.random.Generator, look: PackageLook,
                 span: tuple[int, int], base: int, layers: int = 1) -> list[R.Box]:
    """Draw as many facings of ``look`` as fit side by side in the columns ``span``.

    Each stands on row ``base`` over a soft contact shadow, stacked ``layers`` high; returns
    their boxes.
    """
    w = look.size[0]
    gap = facing_gap(w)
    count = max(1, (span[1] - span[0] - gap) // (w + gap))
    x = span[0] + (span[1] - span[0] - count * (w + gap) + gap) // 2
    lit_left = bool(rng.random() < 0.5)
    sprite = vessel_sprite(look, lit_left) if look.kind != "box" else None
    boxes = []
    for _ in range(count):
        for k in range(layers):
            foot = base - k * (look.size[1] + 2)
            _contact_shadow(img, (x, foot - look.size[1], x + w, foot))
            boxes.append(draw_package(img, look, x, foot, lit_left) if sprite is None
                          else paste_sprite(img, sprite, x, foot))
        x += w + gap
    return boxes


def scale_table(factors: np.ndarray) -> np.ndarray:
    """Return ``uint8`` tables: entry ``[k, v]`` is ``(v * factors[k] + 0.5)`` cast to ``uint8``.

    Applying row ``k`` to a ``uint8`` image (``cv2.LUT``) gives exactly the bytes of
    ``(img * factors[k] + 0.5).astype(np.uint8)`` with ``float32`` factors (a factor of at
    most 1).
    """
    values = np.arange(256, dtype=np.uint8)
    return (values * np.asarray(factors, np.float32)[:, None] + 0.5).astype(np.uint8)


CONTACT_SHADE: np.ndarray = scale_table(np.array([0.82], np.float32))[0]
"""The contact shadow's darkening, as a ``cv2.LUT`` table."""


def _contact_shadow(img: np.ndarray, front: R.Box) -> None:
    """Darken the back panel just right of and above a package (in place; light upper left)."""
    x0, y0, x1, y1 = front
    h, w = img.shape[:2]
    off = max(4, (x1 - x0) // 10)
    sx0, sy0, sx1, sy1 = max(0, x0 + off), max(0, y0 + off // 2), min(w, x1 + off), min(h, y1)
    if sx1 > sx0 and sy1 > sy0:
        region = img[sy0:sy1, sx0:sx1]
        img[sy0:sy1, sx0:sx1] = cv2.LUT(region, CONTACT_SHADE)


# --------------------------------------------------------------------------------------------
# shelf-edge price tags and shelf talkers


@dataclass(frozen=True)
class TagSpec:
    """A shelf-edge price tag, drawn the same way into the photo and its full-ink twin.

    Attributes:
        name: the product's name (small type); ``price``: the price text ("$3.49").
        glyph: the price's glyph height, px; ``price_face``: its TrueType face.
        paper: the tag's colour; ``stripe``: its header stripe colour.
        dot: the RGB of its coloured dot sticker, or None.
        bars: the tiny barcode (an ``(h, w, 3)`` patch).
    """

    name: str
    price: str
    glyph: float
    price_face: str
    paper: R.Color
    stripe: R.Color
    dot: R.Color | None
    bars: np.ndarray


def tag_spec(rng: np.random.Generator, name: str, price: str, glyph: float, face: str,
             dot: R.Color | None) -> TagSpec:
    """Draw the look of a tag for ``name`` at ``price`` (paper, stripe, barcode)."""
    paper = R.jitter_color(rng, R.pick(rng, ((246, 246, 240), (244, 238, 214),
                                             (250, 236, 140))), 5)
    bw, bh = max(12, int(round(2.0 * glyph))), max(5, int(round(0.8 * glyph)))
    return TagSpec(name, price, float(glyph), face, paper, R.pick(rng, STRIPE_COLORS), dot,
                   LS.barcode(rng, bw, bh))


@dataclass(frozen=True)
class TagPatch:
    """A flat tag and where its price lies in it (``price_box`` and its ``price_mask``)."""

    rgb: np.ndarray
    price_box: R.Box
    price_mask: np.ndarray
    glyph: float


@dataclass(frozen=True)
class TagLayout:
    """Where a :class:`TagSpec`'s print goes: its text patches, margins and overall size.

    Attributes:
        price, name: the price and the product name's text patches.
        pad: paper round the print; ``stripe``: the header stripe's rows; ``dot``: the dot's
            diameter (0 without a dot); ``px``: the price's first column; ``row``: its top row.
        size: ``(h, w)`` of the whole tag.
    """

    price: R.TextPatch
    name: R.TextPatch
    pad: int
    stripe: int
    dot: int
    px: int
    row: int
    size: tuple[int, int]


def tag_layout(spec: TagSpec) -> TagLayout:
    """Return the layout of ``spec``'s tag (the same for every ink; no pixels drawn)."""
    g = spec.glyph
    price = R.truetype_text(spec.price, g, spec.price_face)
    name = LS.text_patch(spec.name, max(3.5, 0.45 * g), "condensed")
    pad = max(9, int(round(0.8 * g)))  # paper round the print: a flood fill goes round it
    stripe = max(3, int(round(0.3 * g)))
    dot = max(12, int(round(1.3 * g))) if spec.dot is not None else 0
    bars_w = spec.bars.shape[1]
    px = pad + (dot + 8 + pad // 2 if dot else 0)  # paper between the dot and the price
    row = stripe + pad // 2 + name.size[1] + max(3, pad // 2)
    tw = max(name.size[0] + 2 * pad, px + price.size[0] + pad + bars_w + pad)
    th = row + price.size[1] + pad
    return TagLayout(price, name, pad, stripe, dot, px, row, (th, tw))


def tag_patch(spec: TagSpec, ink: R.Color) -> TagPatch:
    """Return the flat tag of ``spec`` printed in ``ink`` (the faded or the full ink).

    Layout (:func:`tag_layout`): a store-colour stripe on top; the product's name in small
    type; below it the coloured dot (when any), the price and, bottom-aligned at the right, a
    tiny barcode.
    """
    lay = tag_layout(spec)
    price, name, pad, stripe, dot, px, row = (lay.price, lay.name, lay.pad, lay.stripe, lay.dot,
                                              lay.px, lay.row)
    (th, tw), (bars_h, bars_w) = lay.size, spec.bars.shape[:2]
    rgb = np.empty((th, tw, 3), np.uint8)
    rgb[:] = spec.paper
    rgb[:stripe] = spec.stripe
    R.paste_text(rgb, name, pad, stripe + pad // 2, ink)
    placed = R.paste_text(rgb, price, px, row, ink)
    bx, by = tw - pad - bars_w, row + price.size[1] - bars_h
    faded = np.where(spec.bars < 128, np.asarray(ink, np.uint8), np.asarray(spec.paper, np.uint8))
    rgb[by:by + bars_h, bx:bx + bars_w] = faded
    if spec.dot is not None:
        cy = (placed.box[1] + placed.box[3]) // 2
        cv2.circle(rgb, (pad + dot // 2, cy), dot // 2, spec.dot, -1, cv2.LINE_AA)
    cv2.rectangle(rgb, (0, 0), (tw - 1, th - 1), LS.shade(spec.paper, 0.78), 1)
    return TagPatch(rgb, placed.box, placed.mask, float(price.glyph_height))


def talker_card(rng: np.random.Generator, glyph: float) -> np.ndarray:
    """Return a promotional shelf talker: a coloured headline band over a Faker product line."""
    band = R.pick(rng, TALKER_COLORS)
    product = " ".join(R.fake_product(rng, ascii_only=True).split()[:2])
    return LS.card_patch([(R.pick(rng, TALKER_WORDS), glyph, R.pick(rng, LS.DISPLAY_FACES)),
                          (product, glyph * 0.42, "sans-bold")],
                         (250, 250, 246), (30, 30, 34), max(6, int(glyph * 0.4)), band)


# --------------------------------------------------------------------------------------------
# the photograph


def camera_tilt(rng: np.random.Generator, width: int, height: int, margin: int, strength: float
                ) -> np.ndarray:
    """Return the homography taking a canvas ``margin`` px larger on each side to the photo.

    Each canvas corner lands outside the photo's matching corner by ``margin`` px, give or take
    ``0.8 * strength * margin`` (a slightly rolled, off-axis camera), so the photo is covered.
    """
    if not 0.0 <= strength <= 1.0:
        raise ValueError(f"strength must be in [0, 1], got {strength}")
    cw, ch = width + 2 * margin, height + 2 * margin
    src = np.array([[0, 0], [cw, 0], [cw, ch], [0, ch]], np.float32)
    out = np.array([[-1, -1], [1, -1], [1, 1], [-1, 1]], np.float32)
    jitter = rng.uniform(-0.8, 0.8, (4, 2)).astype(np.float32) * strength
    corners = np.array([[0, 0], [width, 0], [width, height], [0, height]], np.float32)
    dst = corners + out * margin * (1.0 - jitter * out)  # jitter*out < 1: stays outside
    return cv2.getPerspectiveTransform(src, dst)


def warp_photo(canvas: np.ndarray, hom: np.ndarray, size: tuple[int, int],
               nearest: bool = False) -> np.ndarray:
    """Return ``canvas`` seen through ``hom`` in a ``size = (w, h)`` photo (edges replicated)."""
    flags = cv2.INTER_NEAREST if nearest else cv2.INTER_LINEAR
    return R.warp_perspective(canvas, hom, size, flags, cv2.BORDER_REPLICATE)


def warp_point(hom: np.ndarray, box: R.Box) -> tuple[float, float]:
    """Return where the centre of canvas ``box`` lands in the photo through ``hom``."""
    pt = np.array([[[(box[0] + box[2]) / 2, (box[1] + box[3]) / 2]]], np.float32)
    x, y = cv2.perspectiveTransform(pt, hom)[0, 0]
    return float(x), float(y)


def paste_tag(img: np.ndarray, rng: np.random.Generator, tag: np.ndarray,
              centre: tuple[float, float]) -> R.Box:
    """Clip the flat ``tag`` upright onto the photo, centred on ``centre``, over a soft shadow.

    The tag's pixels are copied unresampled (integer placement), so its print stays exactly as
    drawn. Returns its box.
    """
    th, tw = tag.shape[:2]
    h, w = img.shape[:2]
    x0 = int(np.clip(round(centre[0] - tw / 2), 0, w - tw))
    y0 = int(np.clip(round(centre[1] - th / 2), 0, h - th))
    box = (x0, y0, x0 + tw, y0 + th)
    pad = int(math.ceil(0.45 * max(tw, th))) + 4
    sx0, sy0, sx1, sy1 = max(0, x0 - pad), max(0, y0 - pad), min(w, x0 + tw + pad), \
        min(h, y0 + th + pad)
    sub = np.ascontiguousarray(img[sy0:sy1, sx0:sx1])
    img[sy0:sy1, sx0:sx1] = R.soft_shadow(sub, rng, (x0 - sx0, y0 - sy0, x0 + tw - sx0,
                                                     y0 + th - sy0), 0.35)
    img[y0:y0 + th, x0:x0 + tw] = tag
    return box
