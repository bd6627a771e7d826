"""Counting a team's players in the goal areas (the ``knowledge_count`` plan).

The plan searches the team the question names, reads its kit colour from the page's prose
(:func:`~m3gym.agents.heuristic.lookup.kit_colour_in`), finds the pitch in the view, places the
two goal areas from the football markings' proportions (:func:`goal_areas`), crops both in
parallel with a zoom and counts the shirts of the kit colour in each
(:func:`~m3gym.agents.heuristic.counting.count_mask_peaks`: players stand shoulder to shoulder,
so neighbouring shirts are split at the peaks of the kit mask's distance transform).
"""

from __future__ import annotations

import re

import cv2
import numpy as np
from rapidfuzz import fuzz

from m3gym.agents.heuristic import vision as hv
from m3gym.agents.heuristic.calls import crop_call, crop_pixels, full_size
from m3gym.agents.heuristic.counting import count_mask_peaks
from m3gym.agents.heuristic.lookup import kit_colour_in, kit_mask, pitch_box
from m3gym.agents.heuristic.view import EpisodeView, Plan
from m3gym.agents.heuristic.web import page_body, result_urls

RUN_OFF_PX: float = 12.0
"""Full-resolution pixels between the pitch's surface box and the run-off box the view shows."""
AREA_MARGIN_PX: float = 24.0
"""Full-resolution pixels a goal area's crop reaches beyond the area (no one stands there)."""


def team_in_question(question: str) -> str | None:
    """Return the team a goal-area counting question names, or None."""
    for pat in (r"players of the (.+?) are inside", r"Count the (.+?) players",
                r"kit of\s+the (.+?)\?", r"players of the (.+?) are on", r"of the (.+?)\?"):
        m = re.search(pat, question)
        if m:
            return m.group(1).strip()
    return None


def goal_areas(pitch: hv.Box) -> list[hv.Box]:
    """Return the two goal areas (full-resolution pixels) of a pitch whose run-off is ``pitch``.

    The surface lies :data:`RUN_OFF_PX` inside the run-off, the touchlines 3.5 % of the
    surface's width inside it (105 m x 68 m), and each goal area is 5.5 m deep and 18.32 m wide
    in front of its goal line.
    """
    x0, y0, x1, y1 = (v + d for v, d in zip(pitch, (RUN_OFF_PX, RUN_OFF_PX, -RUN_OFF_PX,
                                                    -RUN_OFF_PX)))
    inset = 0.035 * (x1 - x0)
    tx0, ty0, tx1, ty1 = x0 + inset, y0 + inset, x1 - inset, y1 - inset
    sx, sy = (tx1 - tx0) / 105.0, (ty1 - ty0) / 68.0
    my = (ty0 + ty1) / 2
    return [(tx0, my - 9.16 * sy, tx0 + 5.5 * sx, my + 9.16 * sy),
            (tx1 - 5.5 * sx, my - 9.16 * sy, tx1, my + 9.16 * sy)]


def shirt_count(mask: np.ndarray, scale: float) -> int:
    """Return how many shirts a kit-colour ``mask`` of a crop zoomed ``scale`` times holds.

    An opening of 2 full-resolution pixels drops what is thinner than a shirt (shorts, hair, a
    sock); components longer than 40 px (a line of the markings in the kit's colour) are
    dropped; shirts side by side are split at the peaks of the distance transform.
    """
    o = max(2, int(round(2.0 * scale)))
    mask = cv2.morphologyEx(mask, cv2.MORPH_OPEN, np.ones((o, o), np.uint8))
    n, labels, stats, _ = cv2.connectedComponentsWithStats(mask, connectivity=8)
    long_side = np.maximum(stats[:, 2], stats[:, 3])
    drop = np.flatnonzero(long_side > 40 * scale)
    mask[np.isin(labels, drop[drop > 0])] = 0
    return count_mask_peaks(mask, scale, aspect=2.5, min_depth=0.6)


def plan_knowledge_count(view: EpisodeView) -> Plan:
    """Search the team, read its kit colour, crop both goal areas in parallel, count shirts."""
    team = team_in_question(view.question)
    if team is None:
        return None
    out = yield [{"name": "web_search", "arguments": {"query": f"{team} team"}}]
    results = result_urls(out.text)
    if not results:
        return None
    results.sort(key=lambda r: -fuzz.ratio(team.lower(), r[1].split(" - ")[0].lower()))
    colour = None
    for url, _ in results[:2]:
        page = yield [{"name": "fetch_webpage", "arguments": {"url": url}}]
        colour = kit_colour_in(page_body(page.text))
        if colour:
            break
    if colour is None:
        return None
    img = view.images[0]
    s = view.view_scale(0)
    size = full_size(view, 0)
    pitch = pitch_box(img) or (0, 0, img.shape[1], img.shape[0])
    boxes = []
    for a in goal_areas(tuple(v / s for v in pitch)):
        boxes.append((max(0.0, a[0] - AREA_MARGIN_PX), max(0.0, a[1] - AREA_MARGIN_PX),
                      min(float(size[0]), a[2] + AREA_MARGIN_PX),
                      min(float(size[1]), a[3] + AREA_MARGIN_PX)))
    calls = []
    for b in boxes:
        zoom = float(np.clip(np.floor(740 / max(b[2] - b[0], b[3] - b[1]) * 2) / 2, 1.0, 5.0))
        calls.append(crop_call(0, hv.to_bbox1000(b, size[0], size[1]), zoom))
    out = yield calls
    total = 0
    for im, rec, box in zip(out.images, out.calls, boxes):
        if im is None:
            continue
        px = crop_pixels(str(rec.get("result_text", "")))
        width = (px[2] - px[0]) if px else (box[2] - box[0])
        k = im.shape[1] / max(width, 1)
        h, w = im.shape[:2]
        surface = np.median(im[h // 4:3 * h // 4, w // 4:3 * w // 4].reshape(-1, 3), axis=0)
        total += shirt_count(kit_mask(im, colour, others=[surface]), k)
    return str(total)
