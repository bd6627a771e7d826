"""Desktop screenshots: wallpaper, menu bar with status icons, windows, settings rows, a dock.

Every drawing helper works in place on an RGB canvas and returns the :class:`PlacedText` of the
texts a question may ask about (keyed by a name), so a family can build exact evidence from
them. Sizes follow one glyph height ``g`` (the capital height of the UI font, in pixels): bars,
rows, icons and paddings are multiples of it, so one knob scales the whole interface.
Everything is deterministic given the ``np.random.Generator`` passed in.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np

from m3gym.tasks import render as R
from m3gym.tasks.render.documents import put_text, text_width

Box = tuple[int, int, int, int]
Color = tuple[int, int, int]

UI_TEXT: Color = (28, 28, 32)
UI_MUTED: Color = (110, 110, 118)
UI_LINE: Color = (226, 226, 230)
ACCENT: Color = (10, 110, 230)
APP_COLORS: tuple[Color, ...] = (
    (52, 120, 246), (52, 199, 89), (255, 149, 0), (255, 59, 48), (175, 82, 222),
    (90, 200, 250), (255, 204, 0), (88, 86, 214), (142, 142, 147), (255, 45, 85),
)
"""Icon colours of the dock's apps."""


def fit_text(text: str, glyph: float, width: float, font: str = "sans") -> str:
    """Return ``text``, cut at a word and ended with ``...`` if needed, to fit ``width`` px."""
    if text_width(text, glyph, font) <= width:
        return text
    words = text.split()
    while len(words) > 1:
        words.pop()
        cut = " ".join(words) + "..."
        if text_width(cut, glyph, font) <= width:
            return cut
    return words[0][:max(1, int(width / glyph))] if words else text[:1]


def rounded_rect(img: np.ndarray, box: Sequence[float], radius: float, color: Color) -> None:
    """Fill an anti-aliased rounded rectangle ``box`` with corner ``radius`` (in place)."""
    x0, y0, x1, y1 = (int(round(v)) for v in box)
    r = int(max(0, min(radius, (x1 - x0) / 2, (y1 - y0) / 2)))
    if r == 0:
        cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), color, -1)
        return
    cv2.rectangle(img, (x0 + r, y0), (x1 - 1 - r, y1 - 1), color, -1)
    cv2.rectangle(img, (x0, y0 + r), (x1 - 1, y1 - 1 - r), color, -1)
    for cx, cy in ((x0 + r, y0 + r), (x1 - 1 - r, y0 + r), (x0 + r, y1 - 1 - r),
                   (x1 - 1 - r, y1 - 1 - r)):
        cv2.circle(img, (cx, cy), r, color, -1, cv2.LINE_AA)


def wallpaper(rng: np.random.Generator, height: int, width: int) -> np.ndarray:
    """Return a smooth, colourful desktop wallpaper (blurred random blobs on a gradient)."""
    small = R.background(rng, max(2, height // 16), max(2, width // 16), kind="gradient",
                         lighting=0.0, vignette=0.2)
    for _ in range(int(rng.integers(3, 7))):
        c = (int(rng.integers(small.shape[1])), int(rng.integers(small.shape[0])))
        cv2.circle(small, c, int(rng.integers(8, max(9, small.shape[1] // 3))),
                   R.rand_color(rng, 40, 230), -1, cv2.LINE_AA)
    small = cv2.GaussianBlur(small, (0, 0), max(2.0, small.shape[1] / 18))
    return cv2.resize(small, (width, height), interpolation=cv2.INTER_CUBIC)


def shadowed_panel(img: np.ndarray, box: Box, radius: float, color: Color) -> None:
    """Draw a rounded panel with a soft drop shadow beneath it (in place)."""
    x0, y0, x1, y1 = box
    h, w = img.shape[:2]
    pad = int(radius * 2) + 8
    bx0, by0, bx1, by1 = max(0, x0 - pad), max(0, y0 - pad), min(w, x1 + pad), min(h, y1 + pad)
    shade = np.zeros((by1 - by0, bx1 - bx0), np.float32)
    rounded_rect(shade, (x0 - bx0, y0 - by0 + radius * 0.4, x1 - bx0, y1 - by0 + radius * 0.4),
                 radius, 1.0)
    shade = cv2.GaussianBlur(shade, (0, 0), max(2.0, radius * 0.6))
    gain = cv2.merge([1.0 - 0.35 * shade] * 3)
    img[by0:by1, bx0:bx1] = cv2.multiply(img[by0:by1, bx0:bx1].astype(np.float32), gain,
                                         dtype=cv2.CV_8U)
    rounded_rect(img, box, radius, color)


def battery_icon(img: np.ndarray, x: float, y: float, g: float, level: int) -> Box:
    """Draw a battery outline filled to ``level`` percent, top-left at ``(x, y)``; its box.

    The fill shows the level's tens (to the middle of the ten, as a segmented indicator): the
    icon never tells apart levels that share their tens, as a question's options do.
    """
    w, h = int(round(2.3 * g)), int(round(1.1 * g))
    x0, y0 = int(round(x)), int(round(y))
    cv2.rectangle(img, (x0, y0), (x0 + w - 1, y0 + h - 1), UI_TEXT, 1, cv2.LINE_AA)
    nub = max(1, h // 3)
    cv2.rectangle(img, (x0 + w, y0 + nub), (x0 + w + max(1, int(g * 0.15)), y0 + h - 1 - nub),
                  UI_TEXT, -1)
    fill = int(round((w - 4) * min(100, level // 10 * 10 + 5) / 100.0))
    if fill > 0:
        cv2.rectangle(img, (x0 + 2, y0 + 2), (x0 + 1 + fill, y0 + h - 3),
                      (40, 40, 44) if level > 20 else (230, 50, 40), -1)
    return (x0, y0, x0 + w + int(g * 0.15) + 1, y0 + h)


def wifi_icon(img: np.ndarray, cx: float, cy: float, g: float) -> None:
    """Draw a three-arc Wi-Fi symbol with its dot at ``(cx, cy)`` (in place)."""
    c = (int(round(cx)), int(round(cy)))
    for k in (1, 2, 3):
        r = int(round(k * 0.42 * g))
        cv2.ellipse(img, c, (r, r), 0, -135, -45, UI_TEXT, max(1, int(g * 0.13)), cv2.LINE_AA)
    cv2.circle(img, c, max(1, int(g * 0.12)), UI_TEXT, -1, cv2.LINE_AA)


@dataclass(frozen=True)
class MenuBar:
    """A drawn menu bar: its height and the placed texts (``battery``, ``clock``)."""

    height: int
    texts: dict[str, R.PlacedText]


def menu_bar(img: np.ndarray, g: float, menus: Sequence[str], battery: int, clock: str
             ) -> MenuBar:
    """Draw a translucent menu bar: menus on the left, Wi-Fi, battery % and clock on the right."""
    w = img.shape[1]
    bar_h = int(round(2.2 * g))
    band = img[:bar_h].astype(np.float32)
    img[:bar_h] = (band * 0.25 + np.float32(0.75 * 246)).astype(np.uint8)
    x = g * 1.5
    y = (bar_h - g) / 2
    for i, m in enumerate(menus):
        p = put_text(img, m, g, x, y, UI_TEXT, "sans-bold" if i == 0 else "sans")
        x = p.box[2] + 1.6 * g
    texts: dict[str, R.PlacedText] = {}
    texts["clock"] = put_text(img, clock, g, w - 1.5 * g, y, UI_TEXT, anchor="right")
    right = texts["clock"].box[0] - 1.6 * g
    texts["battery"] = put_text(img, f"{battery}%", g, right, y, UI_TEXT, anchor="right")
    icon_x = texts["battery"].box[0] - 0.6 * g - 2.5 * g
    battery_icon(img, icon_x, (bar_h - 1.1 * g) / 2, g, battery)
    wifi_icon(img, icon_x - 1.6 * g, bar_h / 2 + 0.55 * g, g)
    return MenuBar(bar_h, texts)


def window_frame(img: np.ndarray, box: Box, title: str, g: float) -> int:
    """Draw a window with a title bar (three buttons, centred title); return the content top."""
    x0, y0, x1, y1 = box
    shadowed_panel(img, box, 1.0 * g, (248, 248, 250))
    bar = int(round(2.6 * g))
    cv2.line(img, (x0, y0 + bar), (x1 - 1, y0 + bar), UI_LINE, 1)
    for i, col in enumerate(((255, 95, 86), (255, 189, 46), (39, 201, 63))):
        cv2.circle(img, (int(x0 + 1.3 * g + i * 1.5 * g), int(y0 + bar / 2)), int(0.5 * g), col,
                   -1, cv2.LINE_AA)
    put_text(img, title, g, (x0 + x1) / 2, y0 + (bar - g) / 2, UI_TEXT, "sans-bold", "center")
    return y0 + bar


def toggle(img: np.ndarray, x: float, y: float, g: float, on: bool) -> None:
    """Draw an on/off switch with its top-right at ``(x, y)`` (in place)."""
    w, h = 3.0 * g, 1.7 * g
    rounded_rect(img, (x - w, y, x, y + h), h / 2, (52, 199, 89) if on else (214, 214, 218))
    cx = x - h / 2 if on else x - w + h / 2
    cv2.circle(img, (int(round(cx)), int(round(y + h / 2))), int(h / 2 - 2), (255, 255, 255), -1,
               cv2.LINE_AA)


def settings_rows(img: np.ndarray, box: Box, g: float, rows: Sequence[tuple[str, str | bool]]
                  ) -> dict[str, tuple[R.PlacedText, R.PlacedText | None]]:
    """Draw grouped setting rows (label left; value text or a switch right) inside ``box``.

    Returns, per label, its placed label and value text (``None`` for a switch).
    """
    x0, y0, x1, _ = box
    row_h = 3.0 * g
    rounded_rect(img, (x0, y0, x1, y0 + row_h * len(rows)), 0.8 * g, (255, 255, 255))
    out: dict[str, tuple[R.PlacedText, R.PlacedText | None]] = {}
    for i, (label, value) in enumerate(rows):
        y = y0 + i * row_h
        if i:
            cv2.line(img, (int(x0 + 1.2 * g), int(y)), (x1 - 1, int(y)), UI_LINE, 1)
        lab = put_text(img, label, g, x0 + 1.2 * g, y + (row_h - g) / 2, UI_TEXT)
        if isinstance(value, bool):
            toggle(img, x1 - 1.2 * g, y + (row_h - 1.7 * g) / 2, g, value)
            out[label] = (lab, None)
        else:
            chevron_x = x1 - 1.4 * g
            pts = np.array([[chevron_x - 0.35 * g, y + row_h / 2 - 0.45 * g],
                            [chevron_x, y + row_h / 2],
                            [chevron_x - 0.35 * g, y + row_h / 2 + 0.45 * g]])
            cv2.polylines(img, [np.round(pts).astype(np.int32)], False, UI_MUTED,
                          max(1, int(g * 0.14)), cv2.LINE_AA)
            val = put_text(img, value, g, chevron_x - 1.0 * g, y + (row_h - g) / 2, UI_MUTED,
                           anchor="right")
            out[label] = (lab, val)
    return out


def app_icon(img: np.ndarray, box: Box, color: Color, letter: str) -> None:
    """Draw a rounded-square app icon of ``color`` with a white ``letter`` (in place)."""
    x0, y0, x1, y1 = box
    size = x1 - x0
    top = tuple(min(255, int(c * 1.15) + 20) for c in color)
    for k in range(4):  # a gentle vertical gradient, four bands
        t = k / 3.0
        col = tuple(int(top[j] * (1 - t) + color[j] * t) for j in range(3))
        rounded_rect(img, (x0, y0 + k * size / 8, x1, y1), 0.22 * size, col)
    put_text(img, letter, size * 0.45, (x0 + x1) / 2, y0 + size * 0.275, (255, 255, 255),
             "sans-bold", "center")


def dock(img: np.ndarray, g: float, apps: Sequence[str], badges: dict[int, int]
         ) -> dict[str, R.PlacedText]:
    """Draw a dock of app icons with name labels and red unread badges at the bottom.

    Returns the placed texts keyed ``name/<i>`` and ``badge/<i>``.
    """
    h, w = img.shape[:2]
    icon = int(round(4.6 * g))
    gap = int(round(max(icon * 0.5, max(text_width(a, 0.8 * g) for a in apps) - icon + g)))
    total = len(apps) * icon + (len(apps) - 1) * gap + 2 * g
    x = (w - total) / 2
    y0 = h - icon - 3.6 * g
    panel = (int(x), int(y0 - 0.9 * g), int(x + total), int(h - 0.6 * g))
    band = img[panel[1]:panel[3], panel[0]:panel[2]].astype(np.float32)
    img[panel[1]:panel[3], panel[0]:panel[2]] = (band * 0.45 + np.float32(0.55 * 236)).astype(
        np.uint8)
    out: dict[str, R.PlacedText] = {}
    for i, name in enumerate(apps):
        ix = int(round(x + g + i * (icon + gap)))
        box = (ix, int(y0), ix + icon, int(y0) + icon)
        app_icon(img, box, APP_COLORS[i % len(APP_COLORS)], name[0].upper())
        out[f"name/{i}"] = put_text(img, name, 0.8 * g, ix + icon / 2, y0 + icon + 0.7 * g,
                                    UI_TEXT, anchor="center")
        if i in badges:
            text = str(badges[i])
            r = max(0.95 * g, (text_width(text, 0.9 * g, "sans-bold") + 0.8 * g) / 2)
            cx, cy = ix + icon - 0.2 * g, y0 + 0.2 * g
            rounded_rect(img, (cx - r, cy - 0.95 * g, cx + r, cy + 0.95 * g), 0.95 * g,
                         (255, 59, 48))
            out[f"badge/{i}"] = put_text(img, text, 0.9 * g, cx, cy - 0.45 * g,
                                         (255, 255, 255), "sans-bold", "center")
    return out
