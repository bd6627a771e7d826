"""Heuristic plans for documents: receipts, bar charts and desktop screenshots.

Each plan finds the region that matters in the view (the bright receipt paper, the chart's
saturated bars, a window, the menu bar or the dock), reads it through zoomed crops tiled so the
text comes back large (:func:`read_tiles`: one parallel step of crops, optionally followed by
autocontrast and rotate steps), maps every word back to full-resolution pixels, and answers
from what it read: a line's price, a bar's data label, a row's value. Plans see only what a
policy sees (the question, the views, the tool results, the choices).
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

import cv2
import numpy as np
from rapidfuzz import fuzz

from m3gym.agents.heuristic import vision as hv
from m3gym.agents.heuristic.calls import crop_call, crop_pixels, full_size, op_call
from m3gym.agents.heuristic.reading import flatten_lighting
from m3gym.agents.heuristic.view import EpisodeView, Plan
from m3gym.agents.ocr import OcrWord, read_words_batch

Box = tuple[float, float, float, float]

TILE_PX: int = 360
"""Side, in full-resolution pixels, of one reading tile (zoomed about 2x into the 768 view)."""


@dataclass(frozen=True)
class SourceWord:
    """A word read in a crop, with its box in full-resolution pixels of image 0."""

    text: str
    conf: float
    box: Box
    line: int
    tile: int = 0
    local: Box = (0.0, 0.0, 0.0, 0.0)

    @property
    def center(self) -> tuple[float, float]:
        """Centre ``(x, y)`` of the box."""
        return (self.box[0] + self.box[2]) / 2, (self.box[1] + self.box[3]) / 2


def tiles(box: Box, size: tuple[int, int], tile: int = TILE_PX, overlap: float = 0.2,
          along: str = "both") -> list[Box]:
    """Return tiles of about ``tile`` px covering ``box`` (clipped to ``size``), overlapping.

    ``along="y"`` keeps the full width and splits the height only (``"x"``: the other way).
    """
    x0, y0, x1, y1 = box
    w, h = size
    x0, y0, x1, y1 = max(0.0, x0), max(0.0, y0), min(float(w), x1), min(float(h), y1)

    def cuts(lo: float, hi: float, split: bool) -> list[tuple[float, float]]:
        n = max(1, int(np.ceil((hi - lo) / tile))) if split else 1
        step = (hi - lo) / n
        pad = overlap * step / 2 if n > 1 else 0.0
        return [(max(lo, lo + i * step - pad), min(hi, lo + (i + 1) * step + pad))
                for i in range(n)]

    xs = cuts(x0, x1, along in ("both", "x"))
    ys = cuts(y0, y1, along in ("both", "y"))
    return [(a, b, c, d) for b, d in ys for a, c in xs]


def tile_zoom(box: Box, limit: int = 760) -> float:
    """Return the zoom (0.5-5, step 0.25) bringing the tile's long side near ``limit`` px."""
    side = max(box[2] - box[0], box[3] - box[1], 1.0)
    return float(np.clip(np.floor(limit / side * 4) / 4, 0.5, 5.0))


def to_source(words: Sequence[OcrWord], image: np.ndarray, px: tuple[int, int, int, int],
              turn: int = 0, tile: int = 0) -> list[SourceWord]:
    """Return ``words`` read in a crop's output ``image`` mapped to full-resolution pixels.

    ``px`` is the crop's source pixel box; ``turn`` (0, 90, -90) the counter-clockwise rotation
    applied to the crop's output before reading (undone here).
    """
    h, w = image.shape[:2]
    cw, ch = (h, w) if turn else (w, h)  # the crop's own size (before the turn)
    k = cw / max(px[2] - px[0], 1)
    out = []
    for word in words:
        bx0, by0, bx1, by1 = word.box
        pts = [(bx0, by0), (bx1, by1)]
        if turn == 90:  # (x, y) in the turned image came from (cw - y, x)
            pts = [(cw - y, x) for x, y in pts]
        elif turn == -90:  # came from (y, ch - x)
            pts = [(y, ch - x) for x, y in pts]
        xs = sorted(p[0] for p in pts)
        ys = sorted(p[1] for p in pts)
        out.append(SourceWord(word.text, word.conf, (px[0] + xs[0] / k, px[1] + ys[0] / k,
                                                     px[0] + xs[1] / k, px[1] + ys[1] / k),
                              word.line, tile, tuple(float(v) for v in word.box)))
    return out


def read_tiles(boxes: Sequence[Box], size: tuple[int, int], contrast: bool = False,
               turn: int = 0, psm: int = 11, both: bool = False, flatten: bool = False,
               scale: float = 1.0) -> Plan:
    """Crop ``boxes`` of image 0 and read them; return every word, in full-resolution pixels.

    The crops run in one parallel step, then optionally an autocontrast and a rotate of each
    result (one step each).

    ``both`` also reads each image inverted (light text on a dark plate, e.g. badges);
    ``flatten`` reads the ink depth below the local paper level instead (faded print under
    uneven light, :func:`~m3gym.agents.heuristic.reading.flatten_lighting`); ``scale``
    enlarges for OCR.
    """
    w, h = size
    out = yield [crop_call(0, hv.to_bbox1000(b, w, h), tile_zoom(b)) for b in boxes]
    pxs = [crop_pixels(str(rec.get("result_text", ""))) for rec in out.calls]
    idx = list(out.indices)
    images = list(out.images)
    if contrast and any(i is not None for i in idx):
        ok = [i for i in idx if i is not None]
        out2 = yield [op_call("autocontrast", i, cutoff=1.0) for i in ok]
        it = iter(zip(out2.indices, out2.images))
        for j, i in enumerate(idx):
            if i is not None:
                idx[j], images[j] = next(it)
    if turn and any(i is not None for i in idx):
        ok = [i for i in idx if i is not None]
        out3 = yield [op_call("rotate", i, angle=turn, expand=True) for i in ok]
        it = iter(zip(out3.indices, out3.images))
        for j, i in enumerate(idx):
            if i is not None:
                idx[j], images[j] = next(it)
    pairs = [(im, px) for im, px in zip(images, pxs) if im is not None and px is not None]
    if not pairs:
        return []
    shown = [flatten_lighting(im, 12.0) if flatten else im for im, _ in pairs]
    readings = read_words_batch(shown, scale=scale, both_polarities=both, psm=psm)
    words: list[SourceWord] = []
    for t, (ws, (im, px)) in enumerate(zip(readings, pairs)):
        words += to_source(ws, im, px, turn, t)
    return words


def nearest_choice(value: float, choices: Sequence[str], max_off: float) -> str | None:
    """Return the numeric choice nearest ``value`` when within ``max_off``, else None."""
    best: tuple[float, str] | None = None
    for c in choices:
        try:
            d = abs(float(c) - value)
        except ValueError:
            continue
        if best is None or d < best[0]:
            best = (d, c)
    return best[1] if best is not None and best[0] <= max_off else None


def lines_of(words: Sequence[SourceWord], local: bool = False) -> list[list[SourceWord]]:
    """Return the words grouped into text lines by their vertical overlap, top to bottom.

    ``local`` groups within each tile in the coordinates it was read in (a turned crop's lines
    run vertically in the source image); otherwise in source coordinates across tiles.
    """
    def frame(w: SourceWord) -> Box:
        return w.local if local else w.box

    lines: list[list[SourceWord]] = []
    kept = [w for w in words if any(ch.isalnum() for ch in w.text)]
    for wd in sorted(kept, key=lambda w: (w.tile if local else 0, frame(w)[1] + frame(w)[3])):
        b = frame(wd)
        for line in lines:
            same = not local or line[0].tile == wd.tile
            if not same:
                continue
            top = float(np.median([frame(w)[1] for w in line]))
            bottom = float(np.median([frame(w)[3] for w in line]))
            overlap = min(b[3], bottom) - max(b[1], top)
            if overlap >= 0.5 * min(b[3] - b[1], bottom - top):
                line.append(wd)
                break
        else:
            lines.append([wd])
    return [sorted(line, key=lambda w: frame(w)[0]) for line in lines]


def line_matching(words: Sequence[SourceWord], name: str, min_score: float = 70.0,
                  local: bool = False) -> list[SourceWord] | None:
    """Return the text line whose words best spell ``name`` (fuzzy), or None."""
    target = re.sub(r"[^a-z0-9]", "", name.lower())
    best: tuple[float, list[SourceWord]] | None = None
    for line in lines_of(words, local):
        text = re.sub(r"[^a-z0-9]", "", "".join(w.text for w in line).lower())
        score = fuzz.partial_ratio(target, text) if text else 0.0
        if best is None or score > best[0]:
            best = (score, line)
    return best[1] if best is not None and best[0] >= min_score else None


PRICE_RE = re.compile(r"(\d{1,4})\s*[.,:]\s*(\d{2})(?!\d)")


def price_of(line: Sequence[SourceWord]) -> float | None:
    """Return the amount at the end of a receipt line ("12.49"), None when none is read."""
    text = " ".join(w.text for w in line).strip()
    found = PRICE_RE.findall(text)
    return float(f"{found[-1][0]}.{found[-1][1]}") if found else None


# --------------------------------------------------------------------------------------------
# receipt_total


def asked_items(question: str) -> tuple[str, list[str]]:
    """Return the question kind (price/sum/difference) and the item names it asks about."""
    m = re.search(r"How much more does (.+?) cost than (.+?) on the receipt", question)
    if m:
        return "difference", [m.group(1), m.group(2)]
    m = re.search(r"What do (.+?) and (.+?) cost together", question)
    if m:
        return "sum", [m.group(1), m.group(2)]
    m = re.search(r"charge for (.+?)\?", question)
    return "price", [m.group(1)] if m else []


def sideways_turn(gray: np.ndarray) -> int:
    """Return the quarter turn (90: counter-clockwise, -90: clockwise) setting a receipt upright.

    The receipt lies sideways. Its type is 2-3 px tall in the view (too small to read which way
    is up), but its barcode, a block of solid ink, marks its foot at one end of the paper's long
    (horizontal) axis.
    """
    ink = 255.0 - gray.astype(np.float32)
    cols = ink.mean(axis=0)
    end = max(1, cols.size // 6)
    foot_left = float(cols[:end].mean()) > float(cols[-end:].mean())
    return 90 if foot_left else -90  # foot on the left: the head is on the right, turn CCW


def plan_receipt_total(view: EpisodeView) -> Plan:
    """Find the receipt paper, read it in zoomed tiles (turned upright if sideways), add prices."""
    kind, names = asked_items(view.question)
    img = view.images[0]
    s = view.view_scale(0)
    size = full_size(view, 0)
    paper = hv.bright_region(img, min_level=170, min_fraction=0.005)  # a receipt is narrow
    if paper is None or not names:
        return None
    inset = 3  # view px: keep the table out of the tiles (it would blunt the flattening)
    box = (paper[0] + inset) / s, (paper[1] + inset) / s, (paper[2] - inset) / s, \
        (paper[3] - inset) / s
    gray = cv2.cvtColor(img[paper[1]:paper[3], paper[0]:paper[2]], cv2.COLOR_RGB2GRAY)
    upright = hv.text_lines_horizontal(cv2.equalizeHist(gray))
    along = "y" if upright else "x"
    boxes = tiles(box, size, tile=int(1.6 * TILE_PX), along=along)[:4]
    turn = 0 if upright else sideways_turn(gray)
    words = yield from read_tiles(boxes, size, contrast=False, turn=turn, psm=6, flatten=True,
                                  scale=2.0)
    prices = []
    for name in names:
        line = line_matching(words, name, local=True)
        price = price_of(line) if line else None
        if price is None:
            return None
        prices.append(price)
    value = {"price": prices[0], "sum": sum(prices),
             "difference": prices[0] - prices[-1]}[kind]
    return nearest_choice(value, view.choices, 0.02)


# --------------------------------------------------------------------------------------------
# chart_value


def asked_chart(question: str) -> tuple[str, list[str], str] | None:
    """Return (kind, series names, category) of a chart question, None when unparsed."""
    m = re.search(r'by how much does "(.+?)" exceed "(.+?)" for (.+?)\?', question)
    if m:
        return "difference", [m.group(1), m.group(2)], m.group(3)
    m = re.search(r'printed on the "(.+?)" bar for (.+?)\?', question)
    if m:
        return "value", [m.group(1)], m.group(2)
    return None


def saturated_mask(rgb: np.ndarray) -> np.ndarray:
    """Return a ``uint8`` mask of strongly coloured pixels (bars, swatches)."""
    hsv = cv2.cvtColor(rgb, cv2.COLOR_RGB2HSV)
    return (((hsv[..., 1] >= 110) & (hsv[..., 2] >= 70)) * 255).astype(np.uint8)


def plan_chart_value(view: EpisodeView) -> Plan:
    """Find the bars, read the chart in tiles, match legend colour and category, read labels."""
    parsed = asked_chart(view.question)
    if parsed is None:
        return None
    kind, series, category = parsed
    img = view.images[0]
    s = view.view_scale(0)
    size = full_size(view, 0)
    mask = cv2.morphologyEx(saturated_mask(img), cv2.MORPH_OPEN, np.ones((2, 2), np.uint8))
    ys, xs = np.nonzero(mask)
    if xs.size < 20:
        return None
    x0, x1 = np.percentile(xs, (0.5, 99.5))
    y0, y1 = np.percentile(ys, (0.5, 99.5))
    pad_x, pad_y = 0.05 * (x1 - x0) + 25, 0.1 * (y1 - y0) + 20
    # below the bars: the category labels, about two text lines under the axis
    region = ((x0 - pad_x) / s, (y0 - pad_y) / s, (x1 + pad_x) / s, (y1 + 2 * pad_y) / s)
    boxes = tiles(region, size, tile=int(0.9 * TILE_PX))[:12]
    words = yield from read_tiles(boxes, size, scale=2.0)
    cat = [w for w in words if fuzz.ratio(w.text.lower(), category.split()[-1].lower()) >= 80]
    if not cat:
        return None
    cat_word = max(cat, key=lambda w: w.center[1])  # category labels sit lowest
    values = []
    for name in series:
        value = _series_value(img, s, words, name, cat_word)
        if value is None:
            return None
        values.append(value)
    answer = values[0] if kind == "value" else values[0] - values[1]
    return nearest_choice(answer, view.choices, 0.05)


def _series_value(img: np.ndarray, s: float, words: Sequence[SourceWord], name: str,
                  cat_word: SourceWord) -> float | None:
    """Return the data label of series ``name`` at the category word (None when unread)."""
    first = name.split()[0].lower()
    legend = [w for w in words if fuzz.ratio(w.text.lower(), first) >= 80]
    if not legend:
        return None
    lw = legend[0]
    # the swatch sits just left of the legend name: take the most saturated view pixel there
    hgt = lw.box[3] - lw.box[1]
    vx0, vx1 = int((lw.box[0] - 2.4 * hgt) * s), int(np.ceil((lw.box[0] - 1) * s))
    vy0, vy1 = int((lw.box[1] - 0.3 * hgt) * s), int(np.ceil((lw.box[3] + 0.3 * hgt) * s))
    patch = img[max(0, vy0):max(vy0 + 1, vy1), max(0, vx0):max(vx0 + 1, vx1)]
    if patch.size == 0:
        return None
    sat = cv2.cvtColor(patch, cv2.COLOR_RGB2HSV)[..., 1]
    py, px = np.unravel_index(int(np.argmax(sat)), sat.shape)
    if int(sat[py, px]) < 80:
        return None
    color = patch[py, px].astype(np.float32)
    bars = hv.color_blobs(img, tuple(int(c) for c in color), tol=40.0, close=1, min_area=6)
    cx = cat_word.center[0] * s
    group = [b for b in bars if b.size[1] >= 3 and abs(b.center[0] - cx) <= 0.6 * 40
             + 2.5 * b.size[0]]
    if not group:
        return None
    bar = min(group, key=lambda b: abs(b.center[0] - cx))
    bx, top = bar.center[0] / s, bar.box[1] / s
    labels = []
    for w in words:
        m = re.fullmatch(r"(\d{1,4})[.,](\d)", w.text.strip())
        if not m:
            continue
        wx, wy = w.center
        if abs(wx - bx) <= 0.6 * (bar.size[0] / s) + 6 and -4 * hgt <= top - wy <= 4 * hgt:
            labels.append((abs(top - wy - 1.2 * hgt), float(f"{m.group(1)}.{m.group(2)}")))
    return min(labels)[1] if labels else None


# --------------------------------------------------------------------------------------------
# ui_status


def windows(img: np.ndarray) -> list[tuple[int, int, int, int]]:
    """Return boxes of light, low-saturation panels (windows) in the view, largest first."""
    hsv = cv2.cvtColor(img, cv2.COLOR_RGB2HSV)
    mask = ((hsv[..., 2] >= 235) & (hsv[..., 1] <= 20)).astype(np.uint8) * 255
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
    n, _, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    out = []
    for i in range(1, n):
        x, y, w, h, area = (int(v) for v in stats[i])
        if w >= 40 and h >= 25 and area >= 0.5 * w * h:
            out.append((area, (x, y, x + w, y + h)))
    return [b for _, b in sorted(out, reverse=True)]


def plan_ui_status(view: EpisodeView) -> Plan:
    """Read the asked status value: the menu bar, a settings row, an About window or a badge."""
    q = view.question
    img = view.images[0]
    s = view.view_scale(0)
    size = full_size(view, 0)
    w, h = size
    if "battery percentage" in q:
        words = yield from read_tiles(tiles((0.5 * w, 0, w, 0.04 * h), size), size)
        for wd in sorted(words, key=lambda x: -x.center[0]):
            m = re.search(r"(\d{1,3})\s*%", wd.text)
            if m:
                return nearest_choice(float(m.group(1)), view.choices, 0.5)
        return None
    found = windows(img)
    m = re.search(r'what is "(.+?)" set to', q)
    if m and found:
        box = tuple(v / s for v in found[0])
        words = yield from read_tiles(tiles(box, size), size)
        line = line_matching(words, m.group(1), 80.0)
        if line is None:
            return None
        nums = [re.search(r"\d+", wd.text) for wd in line]
        vals = [float(n.group(0)) for n in nums if n]
        return nearest_choice(vals[-1], view.choices, 0.5) if vals else None
    if "About" in q:
        boxes = [tuple(v / s for v in b) for b in found[1:3]]
        tiled = [t for b in boxes for t in tiles(b, size)][:6]
        if not tiled:
            return None
        words = yield from read_tiles(tiled, size)
        for wd in words:
            v = re.search(r"\d+\.\d+\.\d+", wd.text)
            if v and v.group(0) in view.choices:
                return v.group(0)
        return None
    m = re.search(r"badge on the (.+?) icon", q)
    if m:
        return (yield from _read_badge(view, m.group(1)))
    return None


BADGE_RED: tuple[int, int, int] = (255, 59, 48)
"""Colour of an unread badge (the scenes paint badges in the platform's red)."""


def _read_badge(view: EpisodeView, app: str) -> Plan:
    """Crop the dock in tiles, find red badges, read each one's digits locally, pair with names."""
    img = view.images[0]
    s = view.view_scale(0)
    size = full_size(view, 0)
    w, h = size
    band = saturated_mask(img[int(0.8 * img.shape[0]):])
    cols = np.nonzero(band.any(axis=0))[0]
    x0, x1 = (cols.min() / s - 20, cols.max() / s + 20) if cols.size else (0.15 * w, 0.85 * w)
    boxes = tiles((x0, 0.82 * h, x1, float(h)), size)
    out = yield [crop_call(0, hv.to_bbox1000(b, w, h), tile_zoom(b)) for b in boxes]
    shots = [(im, crop_pixels(str(rec.get("result_text", ""))))
             for im, rec in zip(out.images, out.calls)]
    shots = [(im, px) for im, px in shots if im is not None and px is not None]
    if not shots:
        return None
    words = [wd for ws, (im, px) in zip(read_words_batch([im for im, _ in shots]), shots)
             for wd in to_source(ws, im, px)]
    names = [wd for wd in words if fuzz.ratio(wd.text.lower(), app.lower()) >= 80]
    if not names:
        return None
    nx, ny = names[0].center
    hgt = names[0].box[3] - names[0].box[1]
    patches, centres = [], []
    for im, px in shots:
        k = im.shape[1] / max(px[2] - px[0], 1)
        for blob in hv.color_blobs(im, BADGE_RED, tol=60.0, close=1, min_area=20):
            bw, bh = blob.size
            if not (0.6 <= bw / max(bh, 1) <= 3.0 and bh >= 8):
                continue
            cx, cy = px[0] + blob.center[0] / k, px[1] + blob.center[1] / k
            if not (-hgt <= cx - nx <= 6 * hgt and cy < ny - 2 * hgt):
                continue
            x_0, y_0, x_1, y_1 = blob.box
            white = cv2.inRange(im[y_0:y_1, x_0:x_1], (200, 200, 200), (255, 255, 255))
            patch = cv2.resize(255 - white, None, fx=4, fy=4, interpolation=cv2.INTER_CUBIC)
            patches.append(cv2.copyMakeBorder(patch, 20, 20, 20, 20, cv2.BORDER_CONSTANT,
                                              value=255))
            centres.append(abs(cx - nx - 2.5 * hgt))
    if not patches:
        return None
    reads = read_words_batch(patches, enhance=False, psm=7)
    found = [(d, "".join(ch for ch in " ".join(x.text for x in ws) if ch.isdigit()))
             for d, ws in zip(centres, reads)]
    found = [(d, t) for d, t in found if t]
    return nearest_choice(float(min(found)[1]), view.choices, 0.5) if found else None
