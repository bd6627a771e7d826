"""Look-up questions (L3 retrieval): knowledge, privacy, logos and product codes.

Each plan follows the protocol of :mod:`m3gym.agents.heuristic.reading`: it yields steps of tool
calls, reads the outcomes, and returns the answer. Only what an agent sees is used: the prompt,
the view images, tool result texts, the choices and the budgets.

* the team helpers of knowledge_count's plan (:mod:`m3gym.agents.heuristic.teams`): a team's kit
  colour in the page prose, the pitch in the view, a kit-colour mask.
* :func:`plan_privacy_safe_lookup` — find the small plate on the facade, crop it with a zoom,
  read the building name, search it (never text legible in the full view, i.e. the
  badge: :func:`is_pii`), fetch, extract.
* :func:`plan_logo_lookup` — find the logo square on its host (jersey / sign band), crop it
  tightly, ``image_search`` the crop, fetch the top hit, extract the asked fact.
* :func:`plan_code_lookup` — find small tags in the named cell, crop them with a zoom, read a
  product code, search it and follow the pages.

Pages are read by :mod:`m3gym.agents.heuristic.web`: the choice a page states (the sentence
closest to the question wins ties), else the links of the kind a two-hop question passes
through (:func:`~m3gym.agents.heuristic.web.hop_kind`).
"""

from __future__ import annotations

import re
from collections.abc import Sequence

import cv2
import numpy as np
from rapidfuzz import fuzz

from m3gym.agents.heuristic import vision as hv
from m3gym.agents.heuristic.calls import crop_call, full_size
from m3gym.agents.heuristic.text import asked_position
from m3gym.agents.heuristic.view import EpisodeView, Plan
from m3gym.agents.heuristic.web import (
    fetch_and_extract,
    follow_search,
    result_urls,
    search_then_fetch,
    sentences,
)
from m3gym.agents.ocr import OcrWord, read_words, read_words_batch

KIT_RGB: dict[str, tuple[int, int, int]] = {
    "red": (214, 40, 40), "blue": (30, 80, 200), "green": (40, 150, 60),
    "yellow": (245, 210, 40), "orange": (245, 130, 20), "purple": (120, 50, 160),
    "black": (20, 20, 20), "white": (245, 245, 245),
}
"""Kit colour words team pages use and the shirt colours they are painted in."""


# --------------------------------------------------------------------------------------------
# knowledge_count


def kit_colour_in(body: str) -> str | None:
    """Return the kit colour a team page states (the colour word in a kit/colour sentence)."""
    for sent in sentences(body):
        low = sent.lower()
        if not any(k in low for k in ("kit", "colour", "color", "dress", "wear")):
            continue
        for word in re.findall(r"[a-z]+", low):
            if word in KIT_RGB:
                return word
    return None


def pitch_box(rgb: np.ndarray) -> hv.Box | None:
    """Return the box of the pitch: the largest region of the colour at the image centre."""
    h, w = rgb.shape[:2]
    centre = rgb[h * 2 // 5:h * 3 // 5, w * 2 // 5:w * 3 // 5].reshape(-1, 3)
    base = np.median(centre, axis=0)
    mask = hv.color_mask(cv2.medianBlur(rgb, 5), base, tol=30.0)
    mask = cv2.morphologyEx(mask, cv2.MORPH_CLOSE, np.ones((9, 9), np.uint8))
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((9, 9), np.uint8))
    largest = hv.largest_component(mask)
    if largest is None:
        return None
    x, y, bw, bh, _ = largest
    if bw * bh < 0.2 * w * h:
        return None
    return x, y, x + bw, y + bh


def kit_mask(rgb: np.ndarray, colour: str, tol: float = 60.0,
             others: Sequence[Sequence[float]] = ()) -> np.ndarray:
    """Return a ``uint8`` mask of pixels nearer to kit ``colour`` than to any other colour.

    The competitors are the other kit colours and ``others`` (e.g. the pitch surface).
    """
    f = cv2.GaussianBlur(rgb, (3, 3), 0).astype(np.float32)
    refs = [v for c, v in KIT_RGB.items() if c != colour] + [tuple(o) for o in others]
    own = np.linalg.norm(f - np.asarray(KIT_RGB[colour], np.float32), axis=2)
    nearest = np.min(np.stack([np.linalg.norm(f - np.asarray(v, np.float32), axis=2)
                               for v in refs]), axis=0)
    return np.where((own <= tol) & (own < nearest), 255, 0).astype(np.uint8)


# --------------------------------------------------------------------------------------------
# privacy_safe_lookup


def legible_words(rgb: np.ndarray) -> list[OcrWord]:
    """Return the words legible in a view image as shown (badge, shop labels)."""
    return [w for w in read_words(rgb) if w.conf >= 50 and sum(c.isalnum() for c in w.text) >= 2]


def facade_box(rgb: np.ndarray, tol: float = 18.0) -> hv.Box | None:
    """Return the box of the building facade: the one-coloured block rising from the bottom.

    Its colour is the longest run of one colour along the bottom row; its top is the highest
    row where that colour fills most of the facade's width (the band above the windows).
    """
    h, w = rgb.shape[:2]
    smooth = cv2.medianBlur(rgb, 5)
    row = smooth[h - 4].astype(np.int16)
    same = np.linalg.norm(np.diff(row, axis=0), axis=1) <= 6
    best, start, run_start = (0, 0), 0, 0
    for x in range(1, w):  # one pass over a single row (768 px)
        if not same[x - 1]:
            run_start = x
        if x - run_start + 1 > best[0]:
            best, start = (x - run_start + 1, 0), run_start
    if best[0] < 0.25 * w:
        return None
    x0, x1 = start, start + best[0]
    colour = np.median(smooth[h - 4, x0:x1].reshape(-1, 3), axis=0)
    band = hv.color_mask(smooth[:, x0:x1], colour, tol) > 0
    frac = cv2.blur(band.mean(axis=1).astype(np.float32)[:, None], (1, 5)).ravel()
    rows = np.flatnonzero(frac >= 0.6)
    if rows.size == 0:
        return None
    return x0, int(rows[0]), x1, h


def sign_candidates(rgb: np.ndarray, legible: Sequence[OcrWord]) -> list[hv.Box]:
    """Return boxes of small plates on the facade top holding no legible text, likeliest first.

    The plate differs in colour from the facade; in the facade's top band (above the first
    window row) the components of differing pixels are scored by how plate-like they are.
    """
    h, w = rgb.shape[:2]
    facade = facade_box(rgb)
    if facade is None:
        facade = (0, 0, w, h)
    fx0, fy0, fx1, fy1 = facade
    band_y1 = min(h, fy0 + max(12, (fy1 - fy0) // 4))
    smooth = cv2.medianBlur(rgb, 3)
    colour = np.median(smooth[fy0:band_y1, fx0:fx1].reshape(-1, 3), axis=0)
    diff = 255 - hv.color_mask(smooth[fy0:band_y1, fx0:fx1], colour, 14.0)
    diff = cv2.morphologyEx(diff, cv2.MORPH_OPEN, np.ones((3, 3), np.uint8))
    n, _, stats, _ = cv2.connectedComponentsWithStats(diff, connectivity=4)
    out = []
    for i in range(1, n):
        x, y, bw, bh, area = (int(v) for v in stats[i])
        box = (fx0 + x, fy0 + y, fx0 + x + bw, fy0 + y + bh)
        if not (6 <= bh <= 30 and 20 <= bw <= 260 and 1.8 <= bw / bh <= 16):
            continue
        if any(_overlap(box, wd.box) for wd in legible):
            continue
        out.append((-(area / (bw * bh)) * min(bw / bh, 6.0), box))
    out.sort()
    return [box for _, box in out]


def _overlap(a: Sequence[int], b: Sequence[int]) -> bool:
    """Return whether two boxes intersect."""
    return a[0] < b[2] and b[0] < a[2] and a[1] < b[3] and b[1] < a[3]


def is_pii(query: str, legible: Sequence[OcrWord]) -> bool:
    """Return whether ``query`` repeats words legible in the full view (the badge's name/ID).

    The building sign is illegible at view size, so a query built from the sign never matches;
    anything readable without zooming (the badge) is treated as personal data.
    """
    seen = [re.sub(r"[^a-z0-9]", "", w.text.lower()) for w in legible]
    seen = [s for s in seen if len(s) >= 3]
    for tok in re.findall(r"[a-z0-9]+", query.lower()):
        if len(tok) >= 3 and any(fuzz.ratio(tok, s) >= 80 for s in seen):
            return True
    return bool(re.search(r"\d{3,}", query))


def name_reading(words: Sequence[OcrWord]) -> tuple[str, float]:
    """Return the alphabetic name a plate reading holds and its mean confidence."""
    ws = [w for w in words if re.fullmatch(r"[A-Za-z][A-Za-z'\-]{2,}", w.text) and w.conf >= 40]
    if not ws:
        return "", 0.0
    ws.sort(key=lambda w: (w.line, w.box[0]))
    return " ".join(w.text for w in ws), float(np.mean([w.conf for w in ws]))


def plan_privacy_safe_lookup(view: EpisodeView) -> Plan:
    """Read the small building plate (never the badge), search it, fetch, extract the fact."""
    img = view.images[0]
    s = view.view_scale(0)
    size = full_size(view, 0)
    legible = legible_words(img)
    cands = sign_candidates(img, legible)[:3]
    if not cands:
        return None
    calls = []
    for box in cands:
        full = tuple(v / s for v in box)
        calls.append(crop_call(0, hv.to_bbox1000(full, size[0], size[1]),
                                  hv.zoom_for(box, s, 3.0)))
    out = yield calls
    images = [im for im, idx in zip(out.images, out.indices)
              if im is not None and idx is not None]
    if not images:
        return None
    # a faded plate's grey ink is stretched by the reader itself (read_words_batch's enhance):
    # a contrast op after the zooming crop would show nothing the crop did not
    readings = [name_reading(ws) for ws in read_words_batch(images, psm=6)]
    readings = [r for r in readings if 2 <= len(r[0].split()) <= 4 and not is_pii(r[0], legible)]
    if not readings:
        return None
    name = max(readings, key=lambda r: r[1])[0]
    return (yield from search_then_fetch(view, name.title(), name))


# --------------------------------------------------------------------------------------------
# logo_lookup


def logo_candidates(rgb: np.ndarray, where: str | None) -> list[hv.Box]:
    """Return boxes of small squares lying on a large, flat, one-coloured host, best first.

    The host (a jersey or a shop's sign band) is a solid fill: flood-filling from just outside
    a square covers a large area at a tight tolerance, while decoys sit on textured ground.
    """
    h, w = rgb.shape[:2]
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY).astype(np.float32)
    mean = cv2.blur(gray, (3, 3))
    std = np.sqrt(np.maximum(cv2.blur(gray * gray, (3, 3)) - mean * mean, 0))
    busy = (std > 10).astype(np.uint8) * 255
    busy = cv2.morphologyEx(busy, cv2.MORPH_CLOSE, np.ones((5, 5), np.uint8))
    n, _, stats, _ = cv2.connectedComponentsWithStats(busy, connectivity=8)
    smooth = cv2.medianBlur(rgb, 3)
    scored = []
    for i in range(1, n):
        x, y, bw, bh, _ = (int(v) for v in stats[i])
        if not (10 <= bw <= 40 and 10 <= bh <= 40 and 0.7 <= bw / bh <= 1.4):
            continue
        ring = []
        for sx, sy in ((x - 3, y + bh // 2), (x + bw + 2, y + bh // 2), (x + bw // 2, y - 3),
                       (x + bw // 2, y + bh + 2)):
            box = hv.flood_region(smooth, (sx, sy), tol=6)
            area = 0 if box is None else (box[2] - box[0]) * (box[3] - box[1])
            ring.append(area)
        host = float(np.median(ring)) / (w * h)
        dist = hv.position_distance((x + bw / 2, y + bh / 2), rgb.shape, where)
        scored.append((-(min(host, 0.1) - 2.0 * dist), (x, y, x + bw, y + bh)))
    scored.sort()
    return [box for _, box in scored]


def plan_logo_lookup(view: EpisodeView) -> Plan:
    """Crop the logo on its host tightly, reverse-search the crop, fetch the top hit, extract."""
    img = view.images[0]
    s = view.view_scale(0)
    size = full_size(view, 0)
    cands = logo_candidates(img, asked_position(view.question))
    if not cands:
        return None
    box = cands[0]
    full = hv.grow(tuple(v / s for v in box), 1, 1, size[0], size[1])
    side = max(full[2] - full[0], full[3] - full[1])
    zoom = float(np.clip(np.floor(200 / side * 2) / 2, 1.0, 5.0))
    out = yield [crop_call(0, hv.to_bbox1000(full, size[0], size[1]), zoom)]
    if not out.indices or out.indices[0] is None:
        return None
    out = yield [{"name": "image_search", "arguments": {"image_index": int(out.indices[0])}}]
    results = result_urls(out.text)
    if not results:
        return None
    return (yield from fetch_and_extract(view, results[0][0]))


# --------------------------------------------------------------------------------------------
# code_lookup


CODE_RE = re.compile(r"[A-Z0-9]{1,3}-[A-Z0-9]{2,4}")


def tag_candidates(img: np.ndarray, where: str | None) -> list[hv.Box]:
    """Return small flat light plates (tags) in the named grid cell, the most tag-like first."""
    return hv.nearest_first([b for b in hv.plain_plates(img) if 12 <= b.size[0] <= 90
                             and 5 <= b.size[1] <= 30 and 1.5 <= b.size[0] / b.size[1] <= 7
                             and b.fill >= 0.7], img.shape, where)


def plan_code_lookup(view: EpisodeView) -> Plan:
    """Find small tags in the named cell, crop them with a zoom, read a code, search it."""
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
    imgs = [im for im in out.images if im is not None]
    if not imgs:
        return None
    codes = [(w.conf, m) for ws in read_words_batch(imgs, both_polarities=True) for w in ws
             for m in CODE_RE.findall(w.text.upper())]
    if not codes:
        return None
    code = max(codes)[1]
    return (yield from follow_search(view, {"name": "web_search",
                                            "arguments": {"query": code}}, code))
