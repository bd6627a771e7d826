"""Reading printed text: stickers, labels on tabs, rotated documents, faded photos.

The plans for ``tiny_text``, ``rotated_text``, ``faint_text`` and ``tiny_faint_text`` and the
fallback :func:`plan_generic`; the reading helpers (:func:`pick_code`, :func:`best_of`,
:func:`flatten_lighting`) and the tab/dot markers that point at a label
(:func:`marker_candidates`) serve the other plans too.

A plan is ``plan(view) -> Generator[calls, StepOutcome, answer]``: it yields a list of tool-call
dicts (one step; several calls run in parallel), receives the
:class:`~m3gym.agents.heuristic.view.StepOutcome`, and finally returns the answer text (or
``None`` to fall back to ``view.guess``). Plans only use what the agent sees;
:mod:`m3gym.agents.heuristic.table` picks one from the question's wording.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import cv2
import numpy as np
from rapidfuzz import fuzz

from m3gym.agents.heuristic import vision as hv
from m3gym.agents.heuristic.calls import crop_call, op_call
from m3gym.agents.heuristic.text import (
    asked_label,
    asked_position,
    best_choice,
    named_colors_in,
    value_after_label,
)
from m3gym.agents.heuristic.view import EpisodeView, Plan
from m3gym.agents.ocr import (
    OcrWord,
    mean_confidence,
    read_words,
    read_words_batch,
    words_text,
)


def pick_code(words: Sequence[OcrWord], choices: Sequence[str],
              label: str | None = None) -> tuple[str | None, float]:
    """Return the choice best read in ``words``, preferring text right after ``label``."""
    glob, gscore = best_choice([words_text(words)], choices)
    if label:
        near = value_after_label(words, label)
        if near:
            loc, lscore = best_choice(near, choices)
            if loc is not None and lscore >= gscore - 8:
                return loc, lscore
    return glob, gscore


def best_of(readings: Sequence[Sequence[OcrWord]], choices: Sequence[str],
            label: str | None = None) -> tuple[str | None, float]:
    """Return the best :func:`pick_code` result over several readings."""
    best: tuple[str | None, float] = (None, -1.0)
    for words in readings:
        c, s = pick_code(words, choices, label)
        if c is not None and s > best[1]:
            best = (c, s)
    return best


def plan_tiny_text(view: EpisodeView) -> Plan:
    """Find the sticker of the asked colour near the asked position, crop-zoom it, read it."""
    img = view.images[0]
    s = view.view_scale(0)
    colors = named_colors_in(view.question, list(hv.COLORS))
    where = asked_position(view.question)
    cands = sticker_candidates(img, colors[0] if colors else None, where)
    if not cands:
        cands = [hv.grow(_cell_box(img.shape, where), 0, 0, img.shape[1], img.shape[0])]
    calls = []
    for box in cands[:2]:
        bw, bh = box[2] - box[0], box[3] - box[1]
        grown = hv.grow(box, 0.15 * bw + 2, 0.5 * bh + 2, img.shape[1], img.shape[0])
        calls.append(crop_call(0, hv.to_bbox1000(grown, img.shape[1], img.shape[0]),
                               hv.zoom_for(grown, s, 3.4)))
    out = yield calls
    crops = [im for im in out.images if im is not None]
    readings = read_words_batch(crops, both_polarities=True) if crops else []
    choice, _ = best_of(readings, view.choices)
    return choice


def _cell_box(shape: tuple[int, ...], where: str | None) -> hv.Box:
    """Return the pixel box of the 3x3 grid cell a phrase names."""
    h, w = shape[:2]
    x0, y0, x1, y1 = hv.position_region(where)
    return int(x0 * w), int(y0 * h), int(x1 * w), int(y1 * h)


def sticker_candidates(img: np.ndarray, color: str | None, where: str | None,
                       min_aspect: float = 1.6, max_aspect: float = 9.0) -> list[hv.Box]:
    """Return boxes of small label-shaped blobs of ``color``, the best placed first."""
    if color is None:
        return []
    blobs = hv.color_blobs(img, hv.COLORS[color], tol=55.0, close=3)
    return hv.nearest_first([b for b in blobs if 4 <= b.size[1] <= 60 and 10 <= b.size[0] <= 200
                             and min_aspect <= b.size[0] / b.size[1] <= max_aspect],
                            img.shape, where)


def plan_rotated_text(view: EpisodeView) -> Plan:
    """Find the small document, crop-zoom it, read it as it lies (orientation found locally).

    The document is the largest bright paper-like region of the view; one zoomed crop shows its
    rows legibly. The agent reads the crop in the orientations a turned or mirrored page can
    have (its own reading, no tool: a rotation adds no information) and keeps the reading that
    looks most like upright text.
    """
    img = view.images[0]
    h, w = img.shape[:2]
    s = view.view_scale(0)
    doc = hv.bright_region(img, min_fraction=0.002) or (0, 0, w, h)
    dw, dh = doc[2] - doc[0], doc[3] - doc[1]
    grown = hv.grow(doc, 0.06 * dw + 2, 0.06 * dh + 2, w, h)
    out = yield [crop_call(0, hv.to_bbox1000(grown, w, h), hv.zoom_for(grown, s, 4.0))]
    if not out.images or out.images[0] is None:
        return None
    crop = out.images[0]
    gray = cv2.cvtColor(crop, cv2.COLOR_RGB2GRAY)
    page = hv.bright_region(crop, min_fraction=0.1)
    region = gray[page[1]:page[3], page[0]:page[2]] if page else gray
    fixes: list[tuple[str, object] | None]
    if hv.text_lines_horizontal(region):
        fixes = [None, ("rotate", 180), ("flip", "horizontal"), ("flip", "vertical")]
    else:
        fixes = [("rotate", -90), ("rotate", 90)]
    probes = [crop if f is None else hv.apply_fix(crop, f) for f in fixes]
    label = asked_label(view.question)
    ranked = []
    for probe, words in zip(probes, read_words_batch(probes)):
        rows = row_after_label(words, label) if label else []
        choice, score = best_choice([t for t, _ in rows], view.choices) if rows else (None, -1.0)
        if rows:  # read the value's strip again, enlarged, as one line
            x0, y0, x1, y1 = rows[0][1]
            pad = (y1 - y0) // 2 + 2
            strip = probe[max(0, y0 - pad):y1 + pad, max(0, x0 - pad):x1 + pad]
            again, sc2 = best_choice([words_text(read_words(strip, scale=2.0, psm=7))],
                                     view.choices)
            if again is not None and sc2 > score:
                choice, score = again, sc2
        if choice is None:
            choice, score = pick_code(words, view.choices, label)
        ranked.append((bool(rows), score, mean_confidence(words), choice))
    return max(ranked, key=lambda r: r[:3])[3]


def row_after_label(words: Sequence[OcrWord], label: str
                    ) -> list[tuple[str, tuple[int, int, int, int]]]:
    """Return the text read right of ``label`` on its row and its box, by geometry.

    Words are matched to ``label`` (fuzzy) one to three at a time (in reading order); the text
    and the joint box of the words whose vertical centre lies within the label's height and that
    start right of it are returned (best label match first). A form's value may be read as a
    separate line from its label, which
    :func:`~m3gym.agents.heuristic.text.value_after_label` misses.
    """
    target = "".join(ch for ch in label.lower() if ch.isalnum())
    order = sorted(words, key=lambda w: (w.box[1] // max(1, w.box[3] - w.box[1]), w.box[0]))
    spans = []
    for i in range(len(order)):
        for n in (1, 2, 3):
            group = order[i:i + n]
            joined = "".join(ch for w in group for ch in w.text.lower() if ch.isalnum())
            if joined and len(group) == n:
                spans.append((fuzz.ratio(joined, target), group))
    out = []
    for ratio, group in sorted(spans, key=lambda t: -t[0]):
        if ratio < 75:
            break
        y0, y1 = min(w.box[1] for w in group), max(w.box[3] for w in group)
        right = max(w.box[2] for w in group)
        row = sorted((w for w in words if w.box[0] >= right - 2
                      and y0 <= (w.box[1] + w.box[3]) / 2 <= y1), key=lambda w: w.box[0])
        if row:
            box = (min(w.box[0] for w in row), min(w.box[1] for w in row),
                   max(w.box[2] for w in row), max(w.box[3] for w in row))
            out.append((" ".join(w.text for w in row), box))
    return out


def _reading_quality(words: Sequence[OcrWord], choices: Sequence[str]) -> float:
    """Return how well a reading looks like upright text: confidence plus choice agreement."""
    _, score = best_choice([words_text(words)], choices) if choices else (None, 0.0)
    return mean_confidence(words) + 0.5 * score + 0.5 * min(len(words), 20)


def plan_faint_text(view: EpisodeView) -> Plan:
    """Stretch the contrast of the whole photo (autocontrast), even its lighting, read the field.

    The stretched photo still carries the page's uneven lighting (a shading several times the
    ink's depth), so no global threshold separates ink from paper; the agent flattens the
    tool's output (ink depth below a local paper level, :func:`flatten_lighting`) and reads
    that, falling back to the output as returned.
    """
    out = yield [op_call("autocontrast", 0, cutoff=1.0)]
    if not out.images or out.images[0] is None:
        return None
    stretched = out.images[0]
    label = asked_label(view.question)
    readings = read_words_batch([ink_binary(stretched), flatten_lighting(stretched), stretched])
    choice, _ = best_of(readings, view.choices, label)
    return choice


def ink_depth(image: np.ndarray, glyph_px: float = 24.0) -> np.ndarray:
    """Return how many levels each pixel of ``image`` (gray) lies under its local paper level.

    The paper level is a gray closing (removes dark strokes thinner than ``glyph_px``) smoothed
    by a box blur.
    """
    gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image
    k = max(3, int(glyph_px) | 1)
    paper = cv2.morphologyEx(gray, cv2.MORPH_CLOSE,
                             cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (k, k)))
    return cv2.subtract(cv2.blur(paper, (k, k)), gray)


def ink_binary(image: np.ndarray, glyph_px: float = 24.0, min_depth: int = 12) -> np.ndarray:
    """Return ``image`` as black ink on white: every pixel ``min_depth`` levels under its paper.

    The paper level is :func:`flatten_lighting`'s (a gray closing smoothed by a box blur). Pale
    print (a value restored by a stretch at a third of the labels' contrast) comes out as black
    as the labels, so one Otsu threshold in the reader does not drop it.
    """
    return np.where(ink_depth(image, glyph_px) >= min_depth, 0, 255).astype(np.uint8)


def digit_on_card(image: np.ndarray, min_depth: int = 15) -> tuple[np.ndarray, np.ndarray] | None:
    """Return the ink on the brightest card of ``image`` cut tight: (black-on-white, gray).

    The card is the largest region within 3 levels of the image's lightest level; its ink is
    every pixel inside it ``min_depth`` levels darker. ``None`` when the card holds no ink.
    """
    gray = cv2.cvtColor(image, cv2.COLOR_RGB2GRAY) if image.ndim == 3 else image
    top = int(gray.max())
    n, _, stats, _ = cv2.connectedComponentsWithStats((gray >= top - 3).astype(np.uint8))
    if n < 2:
        return None
    i = 1 + int(np.argmax(stats[1:, cv2.CC_STAT_AREA]))
    x, y, w, h = (int(v) for v in stats[i, :4])
    inner = gray[y + 2:y + h - 2, x + 2:x + w - 2]
    ys, xs = np.nonzero(inner < top - min_depth)
    if xs.size == 0:
        return None
    a, b, c, d = int(xs.min()), int(ys.min()), int(xs.max()) + 1, int(ys.max()) + 1
    pad = max(3, (d - b) // 2)
    ink = np.where(inner[b:d, a:c] < top - min_depth, 0, 255).astype(np.uint8)
    return (np.pad(ink, pad, constant_values=255),
            np.pad(inner[b:d, a:c], pad, constant_values=255))


def plan_faint_digit(view: EpisodeView) -> Plan:
    """Stretch the washed-out card (autocontrast of the photo), cut the digit out, read it.

    ``glyph_faint``: the digit is not in the reset view at all; the stretched photo's view shows
    it on the card. The digit is cut tight, enlarged 4x and read as one text block.
    """
    out = yield [op_call("autocontrast", 0, cutoff=1.0)]
    if not out.images or out.images[0] is None:
        return None
    cut = digit_on_card(out.images[0])
    if cut is None:
        return None
    big = [cv2.resize(im, None, fx=4, fy=4, interpolation=cv2.INTER_CUBIC) for im in cut]
    images = [big[0], np.pad(big[0], 24, constant_values=255), big[1]]
    texts = [words_text(words) for words in read_words_batch(images, psm=6)]
    choice, score = best_choice(texts, view.choices)
    return choice if score > 0 else None


def flatten_lighting(image: np.ndarray, glyph_px: float = 24.0) -> np.ndarray:
    """Return ``image`` (gray) as ink depth below the local paper level: even lighting.

    The paper level is a gray closing (removes dark strokes thinner than ``glyph_px``)
    smoothed by a box blur; the depth is stretched so the darkest 0.5 % of ink reach black.
    """
    depth = ink_depth(image, glyph_px)
    top = float(np.percentile(depth, 99.5))
    gain = 255.0 / max(top, 1.0)
    return cv2.convertScaleAbs(depth, alpha=-gain, beta=255.0)


def marker_crop(img: np.ndarray, marker: hv.Box, scale: float) -> tuple[list[int], float]:
    """Return the crop (0-1000 box, zoom) of the plate right of a tab/dot marker.

    The plate is found by flood-filling its (nearly uniform) colour from just right of the
    marker; the crop keeps the plate's inside only, so an autocontrast of the crop stretches
    just plate and ink.
    """
    mh = marker[3] - marker[1]
    seed = (marker[2] + 2, (marker[1] + marker[3]) // 2)
    plate = hv.flood_region(img, seed)
    if plate is not None and plate[2] - plate[0] >= 4 and plate[3] - plate[1] >= 3:
        box = (max(plate[0], marker[2]) + 1, plate[1] + 1, plate[2] - 1, plate[3] - 1)
    else:
        box = (marker[0] - 0.3 * mh, marker[1] - 0.4 * mh, marker[0] + 4.2 * max(mh, 12),
               marker[3] + 0.4 * mh)
    grown = hv.grow(box, 0, 0, img.shape[1], img.shape[0])
    return hv.to_bbox1000(grown, img.shape[1], img.shape[0]), hv.zoom_for(grown, scale, 3.2)


def marker_candidates(img: np.ndarray, color: str, where: str | None, round_: bool,
                      tag_shaped: bool = False) -> list[hv.Box]:
    """Return boxes of small tabs (tall bars) or dots of ``color``, best placed first.

    With ``tag_shaped`` a marker whose plate is not shaped like a tag (wider than tall, at most
    a few markers high: :func:`_tag_shaped_plate`) ranks after every marker whose plate is.
    """
    blobs = hv.color_blobs(img, hv.COLORS[color], tol=55.0, close=2, min_area=4)
    scored = []
    for b in blobs:
        w, h = b.size
        if not (3 <= w <= 40 and 3 <= h <= 120):
            continue
        if round_ and not (0.6 <= w / h <= 1.6 and b.fill >= 0.5):
            continue
        if not round_ and not (h >= 0.9 * w and b.fill >= 0.6):
            continue
        plate_ok = 0 if _has_plate(img, b.box) else 1
        if tag_shaped and not _tag_shaped_plate(img, b.box):
            plate_ok = 2
        scored.append((plate_ok, round(hv.position_distance(b.center, img.shape, where), 2),
                       -b.area, b.box))
    scored.sort()
    return [item[-1] for item in scored]


def _has_plate(img: np.ndarray, marker: hv.Box) -> bool:
    """Return whether a light plate at least two marker-widths wide lies right of ``marker``."""
    seed = (marker[2] + 2, (marker[1] + marker[3]) // 2)
    plate = hv.flood_region(img, seed)
    if plate is None:
        return False
    x = min(max(seed[0], 0), img.shape[1] - 1)
    light = float(img[seed[1], x].astype(np.float32).mean())
    return light >= 150 and plate[2] - plate[0] >= 2 * (marker[2] - marker[0])


def _tag_shaped_plate(img: np.ndarray, marker: hv.Box) -> bool:
    """Return whether the plate right of ``marker`` is tag-shaped: wider than tall, low."""
    plate = hv.flood_region(img, (marker[2] + 2, (marker[1] + marker[3]) // 2))
    if plate is None:
        return False
    pw, ph = plate[2] - plate[0], plate[3] - plate[1]
    return pw >= ph and ph <= 4.5 * max(marker[3] - marker[1], 4)


def _upright_reading(images: Sequence[np.ndarray], choices: Sequence[str]
                     ) -> tuple[list[list[OcrWord]], list[int]]:
    """Return the best reading of each image over the four quarter turns, and that turn (deg)."""
    turns = (0, 90, 180, -90)
    probes = [im if t == 0 else hv.apply_fix(im, ("rotate", t)) for im in images for t in turns]
    readings = read_words_batch(probes, both_polarities=True)
    best_words: list[list[OcrWord]] = []
    best_turns: list[int] = []
    for i in range(len(images)):
        group = readings[i * 4:(i + 1) * 4]
        k = max(range(4), key=lambda j: _reading_quality(group[j], choices))
        best_words.append(group[k])
        best_turns.append(turns[k])
    return best_words, best_turns


def plan_tiny_faint_text(view: EpisodeView) -> Plan:
    """Find the tab of the asked colour, crop the label (zoomed) and read it.

    The zoomed crop shows the faded ink legibly as it is (the family's reference is that one
    crop); only when nothing is read from it does the plan stretch the crop's contrast and read
    again, over the four quarter turns.
    """
    img = view.images[0]
    colors = named_colors_in(view.question, list(hv.COLORS))
    where = asked_position(view.question)
    cands = marker_candidates(img, colors[0], where, round_=False) if colors else []
    if not cands:
        return (yield from plan_generic(view))
    bbox, zoom = marker_crop(img, cands[0], view.view_scale(0))
    out = yield [crop_call(0, bbox, zoom)]
    idx = out.indices[0] if out.indices else None
    if idx is None or not out.images or out.images[0] is None:
        return None
    # the label's other rows print other choices: prefer the text after the asked field name
    asked = re.search(r"What is the (\w+) code", view.question)
    field = asked.group(1) if asked else None
    words = read_words(out.images[0], scale=3.0, both_polarities=True)  # small look-alikes
    choice, score = pick_code(words, view.choices, field)
    beside = words_right_of(words, field) if field else []
    if beside:
        near, near_score = best_choice(beside, view.choices)
        if near is not None and near_score >= 60:
            choice, score = near, near_score
    if choice is not None and score >= 60:
        return choice
    view.guess = choice or view.guess
    out = yield [op_call("autocontrast", idx, cutoff=1.0)]
    if not out.images or out.images[0] is None:
        return view.guess
    words, _ = _upright_reading([out.images[0]], view.choices)
    return pick_code(words[0], view.choices, field)[0] or view.guess


def words_right_of(words: Sequence[OcrWord], label: str) -> list[str]:
    """Return, for each word read as ``label``, the nearest word to its right on its row.

    Sparse-text reading (page mode 11) gives every word its own line, so the value printed
    after a field name is found by its box: it starts right of the name and its vertical centre
    lies within the name's height.
    """
    target = re.sub(r"[^a-z0-9]", "", label.lower())
    out: list[str] = []
    for w in words:
        if fuzz.ratio(re.sub(r"[^a-z0-9]", "", w.text.lower()), target) < 80:
            continue
        x0, y0, x1, y1 = w.box
        row = [v for v in words if v is not w and v.box[0] >= x1 - 2
               and y0 - 0.2 * (y1 - y0) <= (v.box[1] + v.box[3]) / 2 <= y1 + 0.2 * (y1 - y0)]
        if row:
            out.append(min(row, key=lambda v: v.box[0]).text)
    return out


def plan_generic(view: EpisodeView) -> Plan:
    """Autocontrast every input image and answer the choice best matching what is read."""
    n = len(view.images)
    out = yield [op_call("autocontrast", i, cutoff=1.0) for i in range(min(n, 3))]
    crops = [im for im in out.images if im is not None]
    choice, score = best_of(read_words_batch(crops), view.choices) if crops else (None, 0.0)
    return choice if score >= 60 else None
