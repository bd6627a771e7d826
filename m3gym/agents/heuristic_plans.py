"""Plans of the heuristic agent: one generator per kind of question.

A plan is ``plan(view) -> Generator[calls, StepOutcome, answer]``: it yields a list of tool-call
dicts (one step; several calls run in parallel), receives the :class:`StepOutcome`, and finally
returns the answer text (or ``None`` to fall back to ``view.guess``). Plans only use what the
agent sees; :func:`planner_for` picks one from the family name in the reset info and, failing
that, from the question's wording.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Generator, Sequence
from typing import TYPE_CHECKING, Any

import cv2
import numpy as np
from rapidfuzz import fuzz

from m3gym.agents import heuristic_vision as hv
from m3gym.agents.heuristic_text import (
    asked_label,
    asked_position,
    best_choice,
    choice_in_text,
    named_colors_in,
    norm_code,
    value_after_label,
)
from m3gym.agents.ocr import (
    OcrWord,
    mean_confidence,
    read_words,
    read_words_batch,
    words_text,
)

if TYPE_CHECKING:
    from m3gym.agents.heuristic import EpisodeView, StepOutcome

Plan = Generator[list[dict[str, Any]], "StepOutcome", "str | None"]


# --------------------------------------------------------------------------------------------
# call builders


def crop_call(index: int, bbox: Sequence[int], zoom: float) -> dict[str, Any]:
    """Return a ``crop`` call dict."""
    return {"name": "crop", "arguments": {"image_index": int(index), "bbox_2d": list(bbox),
                                          "zoom_scale": round(float(zoom), 2)}}


def op_call(name: str, index: int, **kwargs: Any) -> dict[str, Any]:
    """Return a call dict of an image tool ``name`` on image ``index`` with ``kwargs``."""
    return {"name": name, "arguments": {"image_index": int(index), **kwargs}}


def fix_call(index: int, fix: tuple[str, object]) -> dict[str, Any]:
    """Return the rotate/flip call that applies ``fix`` (see :func:`hv.apply_fix`)."""
    op, arg = fix
    if op == "rotate":
        return op_call("rotate", index, angle=int(arg), expand=True)  # type: ignore[call-overload]
    return op_call("flip", index, direction=str(arg))


# --------------------------------------------------------------------------------------------
# reading helpers


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


# --------------------------------------------------------------------------------------------
# L1


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
    scored = []
    for b in blobs:
        w, h = b.size
        if not (4 <= h <= 60 and 10 <= w <= 200 and min_aspect <= w / h <= max_aspect):
            continue
        dist = hv.position_distance(b.center, img.shape, where)
        scored.append((round(dist, 2), -b.fill, b.box))
    scored.sort()
    return [box for _, _, box in scored]


def plan_rotated_text(view: EpisodeView) -> Plan:
    """Find the document's orientation locally, fix it with rotate/flip, read the field."""
    img = view.images[0]
    gray = cv2.cvtColor(img, cv2.COLOR_RGB2GRAY)
    doc = hv.bright_region(img) or (0, 0, img.shape[1], img.shape[0])
    region = gray[doc[1]:doc[3], doc[0]:doc[2]]
    fixes: list[tuple[str, object]]
    if hv.text_lines_horizontal(region):
        fixes = [("rotate", 180), ("flip", "horizontal"), ("flip", "vertical")]
    else:
        fixes = [("rotate", -90), ("rotate", 90)]
    label = asked_label(view.question)
    probes = [hv.apply_fix(region, f) for f in fixes]
    probes = [p[:max(8, p.shape[0] * 11 // 20)] for p in probes]  # the upper half suffices
    readings = read_words_batch(probes, scale=0.8)
    ranked = sorted(range(len(fixes)), key=lambda k: -_reading_quality(readings[k],
                                                                          view.choices))
    best = fixes[ranked[0]]
    view.guess = pick_code(readings[ranked[0]], view.choices, label)[0]
    out = yield [fix_call(0, best)]
    if out.images and out.images[0] is not None:
        fixed = out.images[0]
        page = hv.bright_region(fixed) or (0, 0, fixed.shape[1], fixed.shape[0])
        page_img = fixed[page[1]:page[3], page[0]:page[2]]
        choice, _ = pick_code(read_words(page_img), view.choices, label)
        return choice or view.guess
    return view.guess


def _reading_quality(words: Sequence[OcrWord], choices: Sequence[str]) -> float:
    """Return how well a reading looks like upright text: confidence plus choice agreement."""
    _, score = best_choice([words_text(words)], choices) if choices else (None, 0.0)
    return mean_confidence(words) + 0.5 * score + 0.5 * min(len(words), 20)


def plan_faint_text(view: EpisodeView) -> Plan:
    """Stretch the contrast of the whole photo (autocontrast) and read the named field."""
    out = yield [op_call("autocontrast", 0, cutoff=1.0)]
    if not out.images or out.images[0] is None:
        return None
    choice, _ = pick_code(read_words(out.images[0]), view.choices, asked_label(view.question))
    return choice


# --------------------------------------------------------------------------------------------
# L2: labels found by a coloured tab or dot


def _marker_crop(img: np.ndarray, marker: hv.Box, scale: float) -> tuple[list[int], float]:
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


def marker_candidates(img: np.ndarray, color: str, where: str | None, round_: bool) -> list[hv.Box]:
    """Return boxes of small tabs (tall bars) or dots of ``color``, best placed first."""
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
    """Find the tab of the asked colour, crop the label, autocontrast it, turn it upright, read."""
    img = view.images[0]
    colors = named_colors_in(view.question, list(hv.COLORS))
    where = asked_position(view.question)
    cands = marker_candidates(img, colors[0], where, round_=False) if colors else []
    if not cands:
        return (yield from plan_generic(view))
    bbox, zoom = _marker_crop(img, cands[0], view.view_scale(0))
    out = yield [crop_call(0, bbox, zoom)]
    idx = out.indices[0] if out.indices else None
    if idx is None:
        return None
    out = yield [op_call("autocontrast", idx, cutoff=1.0)]
    if not out.images or out.images[0] is None:
        return None
    words, turns = _upright_reading([out.images[0]], view.choices)
    view.guess = pick_code(words[0], view.choices)[0]
    if turns[0] != 0 and out.indices[0] is not None:
        out = yield [op_call("rotate", int(out.indices[0]), angle=turns[0], expand=True)]
        if out.images and out.images[0] is not None:
            return pick_code(read_words(out.images[0], both_polarities=True), view.choices)[0]
    return view.guess


def plan_price_sum(view: EpisodeView) -> Plan:
    """Find the two dotted tags, crop both in parallel, autocontrast both, add the prices."""
    img = view.images[0]
    colors = named_colors_in(view.question, list(hv.COLORS))[:2]
    boxes = []
    for c in colors:
        cands = marker_candidates(img, c, None, round_=True)
        if cands:
            boxes.append(cands[0])
    if len(boxes) < 2:
        return None
    calls = [crop_call(0, *_marker_crop(img, b, view.view_scale(0))) for b in boxes]
    out = yield calls
    idx = [i for i in out.indices if i is not None]
    if len(idx) < 2:
        return None
    out = yield [op_call("autocontrast", i, cutoff=1.0) for i in idx]
    imgs = [im for im in out.images if im is not None]
    prices = [_price_in(ws) for ws in read_words_batch(imgs, both_polarities=True)]
    if len(prices) < 2 or any(p is None for p in prices):
        return None
    total = sum(p for p in prices if p is not None)
    return _nearest_number(total, view.choices)


def _price_in(words: Sequence[OcrWord]) -> float | None:
    """Return the price a tag reading shows ("$12.50" -> 12.5), None when none is read."""
    text = " ".join(w.text for w in words).replace(",", ".")
    m = re.search(r"(\d{1,3})\s*[.:]\s*(\d{2})", text)
    if m:
        return float(f"{m.group(1)}.{m.group(2)}")
    m = re.search(r"(\d{1,2})(\d{2})(?!\d)", text)  # the decimal point was not read
    return float(f"{m.group(1)}.{m.group(2)}") if m else None


def _nearest_number(value: float, choices: Sequence[str]) -> str | None:
    """Return the numeric choice closest to ``value`` (or the value itself without choices)."""
    nums = []
    for c in choices:
        try:
            nums.append((abs(float(c) - value), c))
        except ValueError:
            continue
    return min(nums)[1] if nums else f"{value:.2f}"


# --------------------------------------------------------------------------------------------
# L3: read a code, search it, follow pages


CODE_RE = re.compile(r"[A-Z0-9]{1,3}-[A-Z0-9]{2,4}")


def tag_candidates(img: np.ndarray, where: str | None) -> list[hv.Box]:
    """Return small flat light plates (tags) in the named grid cell, the most tag-like first."""
    scored = []
    for b in hv.plain_plates(img):
        w, h = b.size
        if not (12 <= w <= 90 and 5 <= h <= 30 and 1.5 <= w / h <= 7 and b.fill >= 0.7):
            continue
        dist = hv.position_distance(b.center, img.shape, where)
        scored.append((round(dist, 2), -b.fill, b.box))
    scored.sort()
    return [box for _, _, box in scored]


def plan_code_lookup(view: EpisodeView) -> Plan:
    """Find faint tags in the named cell, crop + autocontrast them, read a code, search it."""
    img = view.images[0]
    scale = view.view_scale(0)
    tags = tag_candidates(img, asked_position(view.question))[:2]
    if not tags:
        return None
    calls = []
    for t in tags:
        grown = (t[0] + 1, t[1] + 1, t[2] - 1, t[3] - 1)  # inside the plate's frame
        calls.append(crop_call(0, hv.to_bbox1000(grown, img.shape[1], img.shape[0]),
                               hv.zoom_for(grown, scale, 3.4)))
    out = yield calls
    idx = [i for i in out.indices if i is not None]
    if not idx:
        return None
    out = yield [op_call("autocontrast", i) for i in idx]
    imgs = [im for im in out.images if im is not None]
    codes = [(w.conf, m) for ws in read_words_batch(imgs, both_polarities=True) for w in ws
             for m in CODE_RE.findall(w.text.upper())]
    if not codes:
        return None
    code = max(codes)[1]
    return (yield from follow_search(view, {"name": "web_search",
                                            "arguments": {"query": code}}, code))


def follow_search(view: EpisodeView, search: dict[str, Any], key: str | None = None) -> Plan:
    """Run a search, fetch the best result, and follow links until a page names one choice."""
    out = yield [search]
    results = _results(out.text)
    if key:
        results.sort(key=lambda r: -fuzz.partial_ratio(norm_code(key), norm_code(r[1])))
    queue = [url for url, _ in results[:2]]
    seen: set[str] = set()
    while queue and view.calls_used < view.budget - 1:
        url = queue.pop(0)
        if url in seen:
            continue
        seen.add(url)
        page = yield [{"name": "fetch_webpage", "arguments": {"url": url}}]
        body, links = _page_parts(page.text)
        hits = {c for _, c in choice_in_text(body, view.choices)}
        if len(hits) == 1:
            return hits.pop()
        queue = links + queue
    return None


def _results(text: str) -> list[tuple[str, str]]:
    """Return ``(url, snippet)`` pairs of a search result text, in rank order."""
    out = []
    lines = text.splitlines()
    for i, line in enumerate(lines):
        m = re.match(r"\s*(https?://\S+)\s*$", line)
        if m:
            snippet = " ".join(lines[max(0, i - 1):i + 2])
            out.append((m.group(1), snippet))
    return out


def _page_parts(text: str) -> tuple[str, list[str]]:
    """Return a fetched page's body (without its header line and links) and its link URLs."""
    body, _, links = text.partition("\nLinks:")
    body_lines = body.splitlines()[2:]
    urls = re.findall(r"(https?://\S+)\s*$", links, flags=re.MULTILINE)
    return "\n".join(body_lines), urls


# --------------------------------------------------------------------------------------------
# fallback


def plan_generic(view: EpisodeView) -> Plan:
    """Autocontrast every input image and answer the choice best matching what is read."""
    n = len(view.images)
    out = yield [op_call("autocontrast", i, cutoff=1.0) for i in range(min(n, 3))]
    crops = [im for im in out.images if im is not None]
    choice, score = best_of(read_words_batch(crops), view.choices) if crops else (None, 0.0)
    return choice if score >= 60 else None


PLANS: dict[str, Callable[[EpisodeView], Plan]] = {
    "tiny_text": plan_tiny_text,
    "rotated_text": plan_rotated_text,
    "faint_text": plan_faint_text,
    "tiny_faint_text": plan_tiny_faint_text,
    "price_sum": plan_price_sum,
    "code_lookup": plan_code_lookup,
}
"""Plan per family name (the reset info's ``family``)."""


def planner_for(view: EpisodeView) -> Callable[[EpisodeView], Plan]:
    """Return the plan for the episode: by family name, else by the question's wording."""
    if view.family in PLANS:
        return PLANS[view.family]
    q = view.question.lower()
    if "sticker" in q:
        return plan_tiny_text
    if "faded" in q and "what is the" in q:
        return plan_faint_text
    if "what is the" in q and "exactly as printed" in q:
        return plan_rotated_text
    return plan_generic
