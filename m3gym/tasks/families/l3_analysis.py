"""Level-3 families: cross-image reasoning, knowledge + counting, global CV analysis.

* ``cross_image`` — a district map with a pin (image 0) and a street photo with a shaded
  signpost (image 1): crop the pin's district label and the signpost in parallel, make the label
  upright (when written vertically) and the shaded signs legible (``autocontrast``), read the venue
  listed for the marked district, then ``web_search`` → ``fetch_webpage`` to answer a fact.
* ``knowledge_count`` — a sports pitch with many small players in several kit colours; the
  question names a fictional team: search its page, read its kit colour, then crop the two halves
  of the pitch (in parallel) to count the players of that colour.
* ``grid_period`` — a very faint repetitive pattern (well plate, dot-array calibration slide,
  tiled facade) spread over the whole image: a global contrast stretch plus a threshold reveals
  the rows and columns; no crop holds the evidence.

Every task that searches records the offline world it was built from in
``metadata["world"] = {"seed": ..., "split": ...}`` so the env hands the same world to the tools.

**Checkpoints and calls.** The scorer's exclusivity is per axis group (one call satisfies at most
one S and at most one ``v_tool`` checkpoint; ``v_true`` is judged on artifacts), so every
reference call carries one S checkpoint, every evidence one ``v_tool`` (on its decisive tool) and
one ``v_true``, and ``search_hit`` asks for the target ranked first. The oracle scores S = V = 1.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.scoring.checkpoints import (
    evidence_checkpoints,
    fetch_checkpoint,
    search_hit_checkpoint,
    v_tool_checkpoint,
    v_true_checkpoint,
)
from m3gym.tasks import render as R
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.spec import AnswerSpec, Checkpoint, Evidence, RefCall, Task
from m3gym.web.logos import PALETTE
from m3gym.web.names import make_word
from m3gym.web.world import World, build_world

MIN_VIEW_HEIGHT: float = Evidence.min_view_height
"""Glyph height (view pixels) the scorer needs to call evidence legible."""

"""Tools that count as a contrast operation."""

SEARCH_MAX_RANK: int = 1
"""The expected page must rank first for ``search_hit``: a query for a near-duplicate entity
lists the target at ranks 2–5, which must not count as finding it."""

GLOBAL_TOOLS: tuple[str, ...] = ("autocontrast", "equalize")
"""Global histogram operations accepted by ``grid_period``'s ``global_op`` checkpoint."""

SPLITS: tuple[str, ...] = ("train", "test")


def _check_world_config(split: str, world_seed: int) -> None:
    """Raise ``ValueError`` for an unknown split or a negative world seed."""
    if split not in SPLITS:
        raise ValueError(f"split must be one of {SPLITS}, got {split!r}")
    if not isinstance(world_seed, int) or world_seed < 0:
        raise ValueError(f"world_seed must be a non-negative int, got {world_seed!r}")


def _meta(family: FamilyConfig, domain: str, scene: str, images: tuple[np.ndarray, ...],
          evidence: tuple[Evidence, ...], **extra: Any) -> dict[str, Any]:
    """Return the task metadata shared by every family of this module."""
    total = sum(float(im.shape[0] * im.shape[1]) for im in images)
    return {
        "level": 3, "family": family.name, "domain": domain, "scene": scene,
        "evidence_area_fraction": sum(e.area for e in evidence) / total,
        "view_size": R.VIEW_SIZE, "image_sizes": [[im.shape[1], im.shape[0]] for im in images],
        **extra,
    }


def _crop_call(call_id: str, index: int, box: R.Box, image: np.ndarray, glyph: float,
               depends_on: tuple[str, ...] = ()) -> RefCall:
    """Return a reference crop of pixel ``box`` zoomed so glyphs of ``glyph`` px read at view."""
    h, w = image.shape[:2]
    bbox = R.box_to_bbox1000(box, w, h)
    px = R.bbox1000_to_box(bbox, w, h)
    zoom = R.crop_zoom_for((px[2] - px[0], px[3] - px[1]), glyph, MIN_VIEW_HEIGHT)
    if zoom is None:
        raise ValueError(f"crop box {box} is too large for glyphs of {glyph:.1f} px")
    return RefCall(call_id, "crop", {"image_index": index, "bbox_2d": bbox, "zoom_scale": zoom},
                   depends_on)


def _fact_choices(rng: np.random.Generator, world: World, entity: Any, attribute: str,
                  count: int = 6) -> tuple[str, ...]:
    """Return ``count`` shuffled distinct values of ``attribute`` including the entity's.

    The other options are the near-duplicates' values first, then random same-kind entities'.
    """
    answer = entity.fact(attribute).value
    options = [answer]
    for other in world.distractors(entity):
        v = other.attributes.get(attribute)
        if v is not None and v not in options and len(options) < count:
            options.append(v)
    pool = world.entities_of_kind(entity.kind)
    for _ in range(400):
        if len(options) >= count:
            break
        v = pool[int(rng.integers(len(pool)))].attributes.get(attribute)
        if v is not None and v not in options:
            options.append(v)
    return R.shuffled(rng, options)


def _count_choices(rng: np.random.Generator, answer: int, hints: list[int],
                   count: int = 6) -> tuple[str, ...]:
    """Return ``count`` shuffled distinct non-negative counts near ``answer``.

    Built around a hidden pivot (:func:`R.pivot_choices`) so the answer is not the median;
    ``hints`` (other teams' counts) is kept for the signature and unused.
    """
    def near(v: int) -> list[int]:
        return [v + d for d in (-3, -2, -1, 1, 2, 3) if v + d >= 0]

    return R.pivot_choices(rng, answer, near, count)


def _grid_neighbours(rc: tuple[int, int]) -> list[tuple[int, int]]:
    """Return the grids one row and/or column off ``rc`` (and the transposed grid)."""
    r, c = rc
    out = [(r + dr, c + dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)]
    out.append((c, r))
    return [(a, b) for a, b in out if a >= 1 and b >= 1 and (a, b) != rc]


# ============================================================================================
# cross_image


FACT_QUESTIONS: dict[str, str] = {
    "opened": "In which year did that venue open?",
    "capacity": "What is the capacity of that venue?",
    "height_m": "How tall is that venue, in metres?",
    "city": "In which town does that venue stand?",
    "architect": "Who designed that venue?",
    "owner": "Which company owns that venue?",
}
"""Question per building attribute that ``cross_image`` may ask about."""

SIGN_SEPARATORS: tuple[str, ...] = (" > ", " - ", ": ", "  ", " / ")
MAP_PALETTE: tuple[R.Color, ...] = (
    (236, 226, 200), (214, 232, 206), (230, 214, 226), (210, 224, 238), (240, 232, 196),
    (226, 226, 226), (244, 220, 204), (206, 230, 226),
)
PLATE_COLORS: tuple[R.Color, ...] = ((24, 96, 56), (28, 60, 130), (110, 60, 30), (40, 40, 44),
                                     (150, 30, 30), (232, 232, 226))


def _paste_alpha(img: np.ndarray, alpha: np.ndarray, x: int, y: int, color: R.Color) -> None:
    """Composite coverage ``alpha`` in ``color`` into ``img`` at top-left ``(x, y)`` (in place)."""
    h, w = alpha.shape
    region = img[y:y + h, x:x + w]
    a = alpha.astype(np.float32)[..., None] * (1.0 / 255.0)
    region[:] = (region * (1.0 - a) + np.asarray(color, np.float32) * a + 0.5).astype(np.uint8)


def _draw_pin(img: np.ndarray, cx: int, cy: int, r: int, color: R.Color) -> R.Box:
    """Draw a map pin whose tip is at ``(cx, cy)``; return its box."""
    head = (cx, cy - 2 * r)
    tri = np.array([[cx - r + 2, cy - 2 * r + r // 2], [cx + r - 2, cy - 2 * r + r // 2],
                    [cx, cy]], np.int32)
    cv2.fillPoly(img, [tri], color, cv2.LINE_AA)
    cv2.circle(img, head, r, color, -1, cv2.LINE_AA)
    cv2.circle(img, head, max(2, r // 3), (250, 250, 250), -1, cv2.LINE_AA)
    return (cx - r - 1, cy - 3 * r - 1, cx + r + 2, cy + 2)


@dataclass(frozen=True)
class _MapLabel:
    """A district label drawn on the map."""

    name: str
    box: R.Box
    mask: np.ndarray
    angle: float
    glyph: float


def _render_map(rng: np.random.Generator, names: list[str], target: int, rotated: bool,
                ) -> tuple[np.ndarray, np.ndarray, _MapLabel, R.Box, int, int]:
    """Draw the district map.

    Returns (image, clean gray label region, target label, crop box, block count, number).

    Districts are jittered grid blocks separated by streets; each shows a legible number and a
    small name (vertical when ``rotated``). The pin stands next to the target district's name.
    """
    w, h = int(rng.integers(1500, 1801)), int(rng.integers(1050, 1251))
    cols, rows = int(rng.integers(3, 5)), int(rng.integers(2, 4))
    img = R.background(rng, h, w, kind=R.pick(rng, ("paper", "noise", "gradient")),
                       lighting=float(rng.uniform(0, 0.15)), vignette=float(rng.uniform(0, 0.2)))
    top = int(rng.integers(60, 110))
    xs = np.linspace(30, w - 30, cols + 1)
    ys = np.linspace(top, h - 30, rows + 1)
    xs[1:-1] += rng.uniform(-0.12, 0.12, cols - 1) * (w / cols)
    ys[1:-1] += rng.uniform(-0.12, 0.12, rows - 1) * (h / rows)
    street = R.jitter_color(rng, (252, 250, 244), 4)
    casing = R.jitter_color(rng, (170, 164, 150), 15)
    sw = int(rng.integers(14, 24))
    face, italic = R.random_font(rng)
    glyph = float(rng.uniform(7.5, 9.5))
    ink = R.jitter_color(rng, (40, 40, 48), 12)
    palette_order = rng.permutation(len(MAP_PALETTE))
    R.draw_text(img, R.pick(rng, ("CITY MAP", "DISTRICTS", "TOWN PLAN", "MUNICIPAL MAP")),
                (40, top // 2 - 12), float(rng.uniform(20, 28)), ink,
                R.pick(rng, R.READABLE_FACES), 2)
    target_label: _MapLabel | None = None
    crop_box: R.Box | None = None
    number = 0
    for r in range(rows):
        for c in range(cols):
            k = r * cols + c
            bx0, by0 = int(xs[c]) + sw // 2 + 2, int(ys[r]) + sw // 2 + 2
            bx1, by1 = int(xs[c + 1]) - sw // 2 - 2, int(ys[r + 1]) - sw // 2 - 2
            fill = R.jitter_color(rng, MAP_PALETTE[int(palette_order[k % len(MAP_PALETTE)])], 8)
            cv2.rectangle(img, (bx0, by0), (bx1, by1), fill, -1)
            occupied: list[R.Box] = []
            num_patch = R.render_text(str(k + 1), float(rng.uniform(24, 34)),
                                      R.pick(rng, R.READABLE_FACES), 2)
            nx, ny = bx0 + 10, by0 + 10
            R.paste_text(img, num_patch, nx, ny, R.jitter_color(rng, (90, 90, 100), 20))
            occupied.append((nx - 4, ny - 4, nx + num_patch.size[0] + 4,
                             ny + num_patch.size[1] + 4))
            if rng.random() < 0.5:  # a park or pond as map furniture
                pw, ph = int((bx1 - bx0) * rng.uniform(0.15, 0.3)), int((by1 - by0) *
                                                                       rng.uniform(0.15, 0.3))
                spot = R.find_free_spot(rng, (pw, ph), (bx0, by0, bx1, by1), occupied, 10, 10)
                if spot is not None:
                    col = R.pick(rng, ((150, 200, 140), (150, 190, 230)))
                    cv2.ellipse(img, (spot[0] + pw // 2, spot[1] + ph // 2), (pw // 2, ph // 2),
                                0, 0, 360, col, -1, cv2.LINE_AA)
                    occupied.append((spot[0], spot[1], spot[0] + pw, spot[1] + ph))
            patch = R.render_text(names[k], glyph, face, 1, italic)
            alpha = patch.alpha
            angle = 0.0
            if rotated:
                turn = 1 if rng.random() < 0.5 else -1
                alpha = np.ascontiguousarray(np.rot90(alpha, turn))
                angle = 90.0 * turn
            lh, lw = alpha.shape
            pin_room = 34 if k == target else 0
            spot = R.find_free_spot(rng, (lw + pin_room, lh + pin_room), (bx0 + 6, by0 + 6,
                                    bx1 - 6, by1 - 6), occupied, 6, 60)
            if spot is None:  # the block is always large enough for this fallback position
                spot = (bx0 + 8, by1 - lh - pin_room - 8)
            lx, ly = spot[0] + (pin_room if k == target else 0), spot[1] + pin_room
            _paste_alpha(img, alpha, lx, ly, ink)
            label = _MapLabel(names[k], (lx, ly, lx + lw, ly + lh), alpha >= 128, angle,
                              patch.glyph_height)
            if k == target:
                target_label = label
                number = k + 1
                pin = _draw_pin(img, lx - 14, ly - 2, int(rng.integers(9, 12)),
                                R.jitter_color(rng, (214, 36, 36), 15))
                crop_box = R.grow_box((min(pin[0], lx), min(pin[1], ly), max(pin[2], lx + lw),
                                       max(pin[3], ly + lh)), 10, w, h)
    for x in xs:
        cv2.line(img, (int(x), top - 10), (int(x), h - 20), casing, sw + 4)
        cv2.line(img, (int(x), top - 10), (int(x), h - 20), street, sw)
    for y in ys:
        cv2.line(img, (20, int(y)), (w - 20, int(y)), casing, sw + 4)
        cv2.line(img, (20, int(y)), (w - 20, int(y)), street, sw)
    assert target_label is not None and crop_box is not None
    lx0, ly0, lx1, ly1 = target_label.box
    clean = R.to_gray(img[ly0:ly1, lx0:lx1]).copy()
    img = R.add_sensor_noise(img, rng, float(rng.uniform(1.0, 2.5)))
    return img, clean, target_label, crop_box, rows * cols, number


def _render_street(rng: np.random.Generator, lines: list[str], target: int,
                   ) -> tuple[np.ndarray, np.ndarray, R.PlacedText, R.Box]:
    """Draw the street photo with a signpost in deep shade.

    Returns (image, clean gray region of the target sign, target sign, signpost crop box).
    """
    w, h = int(rng.integers(1500, 1801)), int(rng.integers(1000, 1201))
    horizon = int(h * rng.uniform(0.35, 0.5))
    img = np.empty((h, w, 3), np.uint8)
    img[:horizon] = R.background(rng, horizon, w, kind="sky")
    img[horizon:] = R.background(rng, h - horizon, w, kind=R.pick(rng, ("asphalt", "brick",
                                                                        "noise")))
    # buildings along the horizon
    x = int(rng.integers(-60, 0))
    while x < w:
        bw, bh = int(rng.integers(140, 320)), int(rng.integers(150, int(horizon * 0.95)))
        col = R.rand_color(rng, 70, 220)
        cv2.rectangle(img, (x, horizon - bh), (x + bw, horizon + 20), col, -1)
        win = R.jitter_color(rng, (60, 80, 110), 30)
        step = int(rng.integers(28, 44))
        for wy in range(horizon - bh + 14, horizon - 20, step):
            for wx in range(x + 12, x + bw - 20, step):
                cv2.rectangle(img, (wx, wy), (wx + step // 2, wy + step // 2), win, -1)
        x += bw + int(rng.integers(0, 30))
    face, italic = R.random_font(rng)
    glyph = float(rng.uniform(7.5, 9.5))
    thickness = 1
    patches = [R.render_text(s, glyph, face, thickness, italic) for s in lines]
    pad = int(rng.integers(4, 8))
    plate_w = max(p.size[0] for p in patches) + 2 * pad
    plate_h = max(p.size[1] for p in patches) + 2 * pad
    gap = int(rng.integers(3, 8))
    stack_h = len(lines) * (plate_h + gap)
    pole_h = stack_h + int(rng.integers(120, 260))
    px = int(rng.integers(80, w - plate_w - 120))
    base = int(rng.integers(horizon + pole_h - 40, h - 30)) if horizon + pole_h - 40 < h - 30 \
        else h - 30
    top = base - pole_h
    pole_col = R.jitter_color(rng, (80, 84, 88), 15)
    cv2.rectangle(img, (px - 5, top), (px + 5, base), pole_col, -1)
    plate = R.pick(rng, PLATE_COLORS)
    ink = R.ink_for(plate)
    signs_box = [px - 8, top + 10, px + plate_w + 2, top + 10 + stack_h]
    placed: list[R.PlacedText] = []
    for i, patch in enumerate(patches):
        y0 = top + 10 + i * (plate_h + gap)
        cv2.rectangle(img, (px, y0), (px + plate_w, y0 + plate_h), plate, -1)
        placed.append(R.paste_text(img, patch, px + pad, y0 + pad, ink))
    crop_box = R.grow_box(signs_box, 12, w, h)
    # distractor shop signs and clutter away from the signpost
    shade = R.grow_box(crop_box, 40, w, h)
    R.add_distractor_labels(img, rng, int(rng.integers(3, 7)), avoid=[shade],
                            glyph_range=(18.0, 34.0))
    R.add_clutter(img, rng, int(rng.integers(3, 7)), avoid=[shade], size_range=(0.03, 0.08),
                  bounds=(0, horizon, w, h))
    tx0, ty0, tx1, ty1 = placed[target].box
    clean = R.to_gray(img[ty0:ty1, tx0:tx1]).copy()
    # deep shade: compress the dynamic range around the signpost (feathered edge)
    sx0, sy0, sx1, sy1 = shade
    span = float(rng.uniform(26.0, 36.0))
    low = float(rng.uniform(20.0, 60.0))
    region = img[sy0:sy1, sx0:sx1]
    dark = R.compress_dynamic_range(region, [low + float(rng.uniform(-4, 4)) for _ in range(3)],
                                    span)
    m = np.zeros(region.shape[:2], np.float32)
    cx0, cy0, cx1, cy1 = (crop_box[0] - sx0, crop_box[1] - sy0, crop_box[2] - sx0,
                          crop_box[3] - sy0)
    m[max(0, cy0 - 8):cy1 + 8, max(0, cx0 - 8):cx1 + 8] = 1.0
    m = np.maximum(cv2.GaussianBlur(m, (0, 0), 10.0), 0.0)
    m[max(0, cy0 - 4):cy1 + 4, max(0, cx0 - 4):cx1 + 4] = 1.0
    m3 = m[..., None]
    region[:] = (dark * m3 + region * (1.0 - m3) + 0.5).astype(np.uint8)
    img = R.add_sensor_noise(img, rng, float(rng.uniform(0.8, 1.6)))
    return img, clean, placed[target], crop_box


@register_family
@dataclass
class CrossImage(FamilyConfig):
    """Read a district off a map, find its venue on a street sign, then look the venue up.

    Image 0 is a district map with a red pin; the pinned district's name is printed at 7.5–9.5 px
    (about 4 px at view size 768 — illegible), sometimes vertically (read it after ``rotate``).
    Image 1 is a street photo whose signpost lists, for several districts, a venue; the signs
    are tiny *and* in deep shade (ink contrast under 28 levels), so they need a zoomed ``crop``
    and ``autocontrast``. The venue is fictional, so the asked fact must come from its page:
    ``web_search`` the venue name, ``fetch_webpage`` the hit. Nothing here can be answered from
    the full images at view resolution nor from prior knowledge.
    """

    name: ClassVar[str] = "cross_image"
    level: ClassVar[int] = 3
    domains: ClassVar[tuple[str, ...]] = ("Society", "Diagram")
    description: ClassVar[str] = (
        "Map pin → district name (crop, rotate) ∥ shaded signpost → venue (crop, autocontrast) "
        "→ web_search → fetch_webpage → fact.")

    split: str = "train"
    world_seed: int = 0
    rotated_prob: float = 0.5
    num_signs: tuple[int, int] = (4, 6)

    def validate(self) -> None:
        """Check the world and the layout parameters."""
        _check_world_config(self.split, self.world_seed)
        if not 0.0 <= self.rotated_prob <= 1.0:
            raise ValueError("rotated_prob must lie in [0, 1]")
        if not 3 <= self.num_signs[0] <= self.num_signs[1] <= 6:
            raise ValueError("num_signs must satisfy 3 <= low <= high <= 6")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        world = build_world(self.world_seed, self.split)
        domain = R.pick(rng, self.domains)
        venue = world.pick(rng, kind="building")
        attribute = R.pick(rng, [a for a in FACT_QUESTIONS if a in venue.attributes])
        fact = venue.fact(attribute)
        n_blocks_max = 12
        names: list[str] = []
        while len(names) < n_blocks_max:
            word = make_word(rng, self.split, (2, 3)).upper()
            if word not in names and len(word) <= 9:
                names.append(word)
        rotated = bool(rng.random() < self.rotated_prob)
        # the map decides how many districts exist; draw it first with a provisional target
        target_block = int(rng.integers(6))  # every map has at least 6 blocks
        map_img, map_clean, label, map_box, n_blocks, number = _render_map(
            rng, names, target_block, rotated)
        district = names[target_block]
        # signs: the target district and others of the map, each with a venue
        n_signs = int(rng.integers(self.num_signs[0], self.num_signs[1] + 1))
        others = [int(i) for i in rng.permutation(n_blocks) if int(i) != target_block]
        sign_blocks = [target_block, *others[:n_signs - 1]]
        order = rng.permutation(n_signs)
        sign_blocks = [sign_blocks[int(i)] for i in order]
        target_sign = sign_blocks.index(target_block)
        venues = [venue]
        near = world.distractors(venue)
        if near:
            venues.append(near[0])
        pool = world.entities_of_kind("building")
        while len(venues) < n_signs:
            cand = pool[int(rng.integers(len(pool)))]
            if cand not in venues:
                venues.append(cand)
        rest = [venues[int(i)] for i in rng.permutation(np.arange(1, n_signs))]
        sep = R.pick(rng, SIGN_SEPARATORS)
        sign_venues, k = [], 0
        for b in sign_blocks:
            if b == target_block:
                sign_venues.append(venue)
            else:
                sign_venues.append(rest[k])
                k += 1
        lines = [f"{names[b]}{sep}{v.name}" for b, v in zip(sign_blocks, sign_venues)]
        street_img, street_clean, sign, sign_box = _render_street(rng, lines, target_sign)

        ev_map = R.region_evidence("district", map_clean, label.box, label.mask, text=district,
                                   glyph_height=label.glyph, image=0, clean_is_region=True)
        if rotated:
            ev_map = replace(ev_map, angle=label.angle)
        ev_sign = R.region_evidence("sign", street_clean, sign.box, sign.mask,
                                    text=lines[target_sign], glyph_height=sign.glyph_height,
                                    image=1, clean_is_region=True)
        crop_map = _crop_call("crop_map", 0, map_box, map_img, label.glyph)
        crop_sign = _crop_call("crop_sign", 1, sign_box, street_img, sign.glyph_height)
        steps: list[tuple[RefCall, ...]] = [(crop_map, crop_sign)]
        if rotated:
            rot = RefCall("upright_map", "rotate", {"image_index": 2, "angle": -label.angle},
                          ("crop_map",))
            enh = RefCall("enhance_sign", "autocontrast", {"image_index": 3, "cutoff": 0.5},
                          ("crop_sign",))
            steps.append((rot, enh))
        else:
            enh = RefCall("enhance_sign", "autocontrast", {"image_index": 3, "cutoff": 0.5},
                          ("crop_sign",))
            steps.append((enh,))
        deps = ("upright_map", "enhance_sign") if rotated else ("crop_map", "enhance_sign")
        query = world.good_query(venue)
        steps.append((RefCall("search", "web_search", {"query": query, "top_k": 5}, deps),))
        steps.append((RefCall("fetch", "fetch_webpage", {"url": venue.url}, ("search",)),))
        # per visual call an S checkpoint, per evidence a v_tool on its repair and a v_true; the
        # search must rank the venue first (a neighbouring district's venue query lists it 2nd-5th)
        checkpoints = [
            *evidence_checkpoints("district", [crop_map, *([rot] if rotated else [])]),
            *evidence_checkpoints("sign", [crop_sign, enh]),
            search_hit_checkpoint("web_search", venue.url, "s_search", SEARCH_MAX_RANK,
                                  "search the venue; its page ranks first"),
            fetch_checkpoint(venue.url, "s_fetch", "open the venue's page"),
        ]
        question = (
            "Image 0 is a district map; a red pin marks one district. Image 1 is a street photo "
            "whose signpost names a venue for several districts. Find the venue listed for the "
            f"pinned district. {FACT_QUESTIONS[attribute]}")
        images = (R.freeze(map_img), R.freeze(street_img))
        evidence = (ev_map, ev_sign)
        return Task(
            task_id=f"{self.name}/0", family=self.name, level=3, domain=domain, images=images,
            question=question, answer=AnswerSpec(fact.value), reference=tuple(steps),
            evidence=evidence, checkpoints=tuple(checkpoints),
            choices=_fact_choices(rng, world, venue, attribute),
            capabilities=("visual_grounding", "multi_hop", "parallelism", "knowledge"),
            metadata=_meta(self, domain, "map+street", images, evidence,
                           world={"seed": self.world_seed, "split": self.split},
                           entity=venue.key, attribute=attribute, district=district,
                           district_number=number, rotated=rotated, query=query,
                           distractor_query=world.distractor_query(venue)),
        )


# ============================================================================================
# knowledge_count


SURFACES: dict[str, R.Color] = {
    "grass": (62, 128, 58), "court": (196, 150, 98), "ice": (222, 232, 240),
    "clay": (176, 90, 60), "turf_blue": (40, 90, 150),
}
"""Pitch surfaces and their base colour."""
SKIN: tuple[R.Color, ...] = ((236, 196, 160), (198, 150, 110), (140, 96, 64), (96, 64, 44))


def _colour_distance(a: R.Color, b: R.Color) -> float:
    """Return the Euclidean RGB distance of two colours."""
    return float(math.dist(a, b))


def _draw_player(img: np.ndarray, x: int, y: int, size: int, kit: R.Color,
                 rng: np.random.Generator) -> None:
    """Draw a tiny player (head, shirt, shorts, legs) with the top-left of its box at (x, y)."""
    bw = max(6, int(size * 0.5))
    cx = x + bw // 2
    head_r = max(2, int(size * 0.13))
    shirt_top, shirt_bot = y + 2 * head_r, y + int(size * 0.62)
    shorts = (30, 30, 34) if R.luminance(kit) > 90 else (236, 236, 236)
    cv2.line(img, (cx - bw // 5, shirt_bot), (cx - bw // 5, y + size - 1), (44, 40, 38),
             max(1, size // 9))
    cv2.line(img, (cx + bw // 5, shirt_bot), (cx + bw // 5, y + size - 1), (44, 40, 38),
             max(1, size // 9))
    cv2.rectangle(img, (cx - bw // 3, shirt_bot - 1), (cx + bw // 3, shirt_bot + size // 7),
                  shorts, -1)
    cv2.rectangle(img, (x, shirt_top), (x + bw - 1, shirt_bot), kit, -1)
    cv2.circle(img, (cx, y + head_r), head_r, R.pick(rng, SKIN), -1, cv2.LINE_AA)


@register_family
@dataclass
class KnowledgeCount(FamilyConfig):
    """Count the players of a named (fictional) team on a crowded pitch.

    The question names a team but not its colours; its kit colour is stated only in the prose of
    its page in the offline world, so the agent must ``web_search`` the team and
    ``fetch_webpage`` the hit. The players are 19–25 px figures on a pitch about 2400 px wide, so
    at view size 768 they are 6–8 px blobs whose kit colours and outlines merge; the two halves of
    the pitch, cropped in parallel, show them at 13 px or more. Several other kit colours
    (including, when it exists, the colour of the near-duplicate team) are on the pitch.
    """

    name: ClassVar[str] = "knowledge_count"
    level: ClassVar[int] = 3
    domains: ClassVar[tuple[str, ...]] = ("Culture", "Life")
    description: ClassVar[str] = (
        "web_search team → fetch_webpage (kit colour) → crop both pitch halves ∥ → count.")

    split: str = "train"
    world_seed: int = 0
    other_teams: tuple[int, int] = (2, 3)
    players_per_team: tuple[int, int] = (3, 10)

    def validate(self) -> None:
        """Check the world and the crowd parameters."""
        _check_world_config(self.split, self.world_seed)
        if not 1 <= self.other_teams[0] <= self.other_teams[1] <= 4:
            raise ValueError("other_teams must satisfy 1 <= low <= high <= 4")
        if not 1 <= self.players_per_team[0] <= self.players_per_team[1] <= 12:
            raise ValueError("players_per_team must satisfy 1 <= low <= high <= 12")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        world = build_world(self.world_seed, self.split)
        domain = R.pick(rng, self.domains)
        team = world.pick(rng, kind="team")
        kit_name = team.fact("kit_colour").value
        colours = [kit_name]
        for other in world.distractors(team):
            c = other.attributes.get("kit_colour")
            if c is not None and c not in colours:
                colours.append(c)
        n_other = int(rng.integers(self.other_teams[0], self.other_teams[1] + 1))
        kit_pool = [c for c in PALETTE if c in ("red", "blue", "green", "yellow", "orange",
                                                  "purple", "black", "white")]
        for i in rng.permutation(len(kit_pool)):
            if len(colours) >= 1 + n_other:
                break
            if kit_pool[int(i)] not in colours:
                colours.append(kit_pool[int(i)])
        colours = colours[:1 + n_other]
        rgb = [PALETTE[c] for c in colours]
        surfaces = [s for s, col in SURFACES.items()
                    if all(_colour_distance(col, k) >= 95 for k in rgb)]
        surface = R.pick(rng, surfaces or ["court"])

        w = int(rng.integers(2200, 2601))
        h = int(w * rng.uniform(0.6, 0.68))
        img = R.background(rng, h, w, kind=R.pick(rng, ("noise", "fabric", "asphalt")),
                           lighting=float(rng.uniform(0, 0.2)))
        # spectators in the stands: coloured dots everywhere outside the pitch
        n_dots = int(rng.integers(300, 600))
        pts = np.stack([rng.integers(0, w, n_dots), rng.integers(0, h, n_dots)], 1)
        radii = rng.integers(3, 7, n_dots).tolist()
        for (px, py), col, rad in zip(pts.tolist(), rng.integers(30, 240, (n_dots, 3)).tolist(),
                                      radii):
            cv2.circle(img, (px, py), rad, col, -1)
        fw = int(w * rng.uniform(0.8, 0.88))
        fh = int(h * rng.uniform(0.68, 0.76))
        fx0 = int(rng.integers(int(w * 0.04), w - fw - int(w * 0.04)))
        fy0 = int(rng.integers(int(h * 0.08), h - fh - int(h * 0.06)))
        fx1, fy1 = fx0 + fw, fy0 + fh
        mid = (fx0 + fx1) // 2
        base = R.jitter_color(rng, SURFACES[surface], 10)
        cv2.rectangle(img, (fx0, fy0), (fx1 - 1, fy1 - 1), base, -1)  # 20x faster than a slice fill
        bands = int(rng.integers(8, 16))
        darker = tuple(int(v * 0.93) for v in base)
        for b in range(1, bands, 2):  # mowing stripes
            cv2.rectangle(img, (fx0 + b * fw // bands, fy0),
                          (fx0 + (b + 1) * fw // bands - 1, fy1 - 1), darker, -1)
        line = (240, 240, 236) if surface != "ice" else (200, 40, 40)
        lw = int(rng.integers(3, 6))
        cv2.rectangle(img, (fx0 + 10, fy0 + 10), (fx1 - 10, fy1 - 10), line, lw)
        cv2.line(img, (mid, fy0 + 10), (mid, fy1 - 10), line, lw)
        cv2.circle(img, (mid, (fy0 + fy1) // 2), int(fh * 0.14), line, lw)
        for gx in (fx0 + 10, fx1 - 10):
            d = int(fw * 0.07) * (1 if gx == fx0 + 10 else -1)
            cv2.rectangle(img, (gx, fy0 + int(fh * 0.3)), (gx + d, fy1 - int(fh * 0.3)), line, lw)

        half_long = max(fw / 2, fh)
        p_lo = 1.5 * MIN_VIEW_HEIGHT * half_long / R.VIEW_SIZE + 0.5
        p_hi = 0.8 * MIN_VIEW_HEIGHT * w / R.VIEW_SIZE
        size = int(rng.integers(math.ceil(p_lo), max(math.ceil(p_lo), int(p_hi)) + 1))
        band = size + 12
        halves = ((fx0 + 16, fy0 + 16, mid - band, fy1 - 16),
                  (mid + band, fy0 + 16, fx1 - 16, fy1 - 16))
        occupied: list[R.Box] = []
        counts = [0] * len(colours)
        bw = max(6, int(size * 0.5))
        for t, _ in enumerate(colours):
            n = int(rng.integers(self.players_per_team[0], self.players_per_team[1] + 1))
            for _ in range(n):
                spot = R.find_free_spot(rng, (bw, size), halves[int(rng.integers(2))], occupied,
                                        margin=6, tries=30)
                if spot is None:
                    continue
                _draw_player(img, spot[0], spot[1], size, rgb[t], rng)
                occupied.append((spot[0], spot[1], spot[0] + bw, spot[1] + size))
                counts[t] += 1
        if rng.random() < 0.7:  # the ball
            spot = R.find_free_spot(rng, (8, 8), halves[int(rng.integers(2))], occupied, 4, 10)
            if spot is not None:
                cv2.circle(img, (spot[0] + 4, spot[1] + 4), max(3, size // 6), (250, 250, 250),
                           -1, cv2.LINE_AA)
        img = R.add_sensor_noise(img, rng, float(rng.uniform(1.0, 3.0)))
        answer = counts[0]

        ev_left = Evidence("left_half", 0, (float(fx0), float(fy0), float(mid), float(fy1)),
                           text=None, glyph_height=float(size))
        ev_right = Evidence("right_half", 0, (float(mid), float(fy0), float(fx1), float(fy1)),
                            text=None, glyph_height=float(size))
        query = world.good_query(team)
        steps = (
            (RefCall("search", "web_search", {"query": query, "top_k": 5}),),
            (RefCall("fetch", "fetch_webpage", {"url": team.url}, ("search",)),),
            (_crop_call("crop_left", 0, (fx0, fy0, mid, fy1), img, size, ("fetch",)),
             _crop_call("crop_right", 0, (mid, fy0, fx1, fy1), img, size, ("fetch",))),
        )
        # the search must rank the team first; each half: crop, v_tool (crop kept it), v_true
        checkpoints = (
            search_hit_checkpoint("web_search", team.url, "s_search", SEARCH_MAX_RANK,
                                  "search the team; its page ranks first"),
            fetch_checkpoint(team.url, "s_fetch", "open the team's page (kit colour)"),
            *evidence_checkpoints("left_half", [steps[2][0]]),
            *evidence_checkpoints("right_half", [steps[2][1]]),
        )
        question = R.pick(rng, (
            "How many players of the {team} are on the pitch in this photo?",
            "Count the {team} players visible on the field.",
            "In this match photo, how many players wear the kit of the {team}?",
        )).format(team=team.name)
        images = (R.freeze(img),)
        evidence = (ev_left, ev_right)
        return Task(
            task_id=f"{self.name}/0", family=self.name, level=3, domain=domain, images=images,
            question=question, answer=AnswerSpec(str(answer), match="numeric"),
            reference=steps, evidence=evidence, checkpoints=checkpoints,
            choices=_count_choices(rng, answer, counts[1:]),
            capabilities=("visual_grounding", "multi_hop", "parallelism", "knowledge"),
            metadata=_meta(self, domain, f"pitch:{surface}", images, evidence,
                           world={"seed": self.world_seed, "split": self.split},
                           entity=team.key, kit_colour=kit_name, colours=colours,
                           counts=counts, player_height=size, query=query,
                           distractor_query=world.distractor_query(team)),
        )


# ============================================================================================
# grid_period


PATTERNS: dict[str, tuple[str, str]] = {
    "well_plate": ("a microplate photographed under very weak light", "wells"),
    "dot_slide": ("a microscope calibration slide with a dot array, badly underexposed",
                  "dots"),
    "facade": ("a tiled building facade in dense fog", "windows"),
}
"""Pattern kind → (scene phrase for the question, what is counted)."""


@register_family
@dataclass
class GridPeriod(FamilyConfig):
    """Count the rows and columns of a barely visible repetitive pattern.

    The pattern (well plate, dot-array slide, facade windows) covers the whole image but its
    objects differ from the background by only 4–9 gray levels under sensor noise — under the
    28-level visibility threshold at any zoom — so no crop helps: the evidence is global. A
    global ``autocontrast`` (or ``equalize``) of the full image stretches the contrast, and a
    ``threshold`` at the level between objects and background yields a clean binary pattern in
    which rows and columns can be counted. ``glyph_height`` of the evidence is the smaller grid
    pitch (the spacing that must be resolved to tell neighbouring rows/columns apart).
    """

    name: ClassVar[str] = "grid_period"
    level: ClassVar[int] = 3
    domains: ClassVar[tuple[str, ...]] = ("Science", "Diagram")
    description: ClassVar[str] = (
        "Faint whole-image grid: autocontrast (global) → threshold → count rows x columns.")

    rows: tuple[int, int] = (3, 10)
    cols: tuple[int, int] = (4, 14)
    total_prob: float = 0.3

    def validate(self) -> None:
        """Check the grid size ranges."""
        if not 2 <= self.rows[0] <= self.rows[1] <= 16:
            raise ValueError("rows must satisfy 2 <= low <= high <= 16")
        if not 2 <= self.cols[0] <= self.cols[1] <= 20:
            raise ValueError("cols must satisfy 2 <= low <= high <= 20")
        if not 0.0 <= self.total_prob <= 1.0:
            raise ValueError("total_prob must lie in [0, 1]")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        domain = R.pick(rng, self.domains)
        kind = R.pick(rng, tuple(PATTERNS))
        n_rows = int(rng.integers(self.rows[0], self.rows[1] + 1))
        n_cols = int(rng.integers(self.cols[0], self.cols[1] + 1))
        w = int(rng.integers(1400, 1801))
        h = int(rng.integers(1000, 1301))
        mx, my = int(w * rng.uniform(0.04, 0.1)), int(h * rng.uniform(0.04, 0.1))
        pitch_x = (w - 2 * mx) / n_cols
        pitch_y = (h - 2 * my) / n_rows
        fill = float(rng.uniform(0.4, 0.7))
        bg = int(rng.uniform(150, 200))
        light = R.lighting_field(rng, max(2, h // 16), max(2, w // 16), 0.08)
        shade = cv2.resize(((1.0 - light) * bg * 0.5).astype(np.uint8), (w, h),
                           interpolation=cv2.INTER_LINEAR)
        clean_gray = cv2.subtract(np.full((h, w), bg, np.uint8), shade)
        mask = np.zeros((h, w), np.uint8)
        xs = mx + (np.arange(n_cols) + 0.5) * pitch_x + rng.uniform(-0.03, 0.03, n_cols) * pitch_x
        ys = my + (np.arange(n_rows) + 0.5) * pitch_y + rng.uniform(-0.03, 0.03, n_rows) * pitch_y
        rx, ry = fill * pitch_x / 2, fill * pitch_y / 2
        for cy in ys:
            for cx in xs:
                if kind == "facade":
                    cv2.rectangle(mask, (int(cx - rx), int(cy - ry)), (int(cx + rx), int(cy + ry)),
                                  1, -1)
                elif kind == "well_plate":
                    cv2.circle(mask, (int(cx), int(cy)), int(min(rx, ry)), 1, -1, cv2.LINE_8)
                else:
                    r = int(min(rx, ry) * 0.8)
                    cv2.rectangle(mask, (int(cx) - r, int(cy) - r), (int(cx) + r, int(cy) + r), 1,
                                  -1)
        dark_objects = bool(rng.random() < 0.6)
        delta = np.full((h, w), int(rng.uniform(70, 100)), np.uint8)
        if dark_objects:
            cv2.subtract(clean_gray, delta, dst=clean_gray, mask=mask)
        else:
            cv2.add(clean_gray, delta, dst=clean_gray, mask=mask)
        # tint and washed-out exposure in one per-channel lookup table
        tint = np.asarray(R.jitter_color(rng, (128, 128, 128), 40), np.float32) / 128.0
        span = float(rng.uniform(16.0, 24.0))
        low = np.array([float(rng.uniform(40, 150)) for _ in range(3)], np.float32)
        levels = np.arange(256, dtype=np.float32)[:, None]
        lut = np.clip(np.clip(levels * tint, 0, 255) * (span / 255.0) + low + 0.5, 0, 255)
        lut8 = lut.astype(np.uint8)
        img = cv2.merge([cv2.LUT(clean_gray, lut8[:, c]) for c in range(3)])  # = a 3-channel LUT
        img = R.add_sensor_noise(img, rng, float(rng.uniform(1.0, 1.8)))

        # the reference's threshold: midway between objects and background after autocontrast
        from m3gym.tools.visual import autocontrast_luts, channel_histograms

        cutoff = 0.5
        sub = np.ascontiguousarray(img[::2, ::2])  # one copy (calcHist copied it per channel)
        luts = autocontrast_luts(channel_histograms(sub), cutoff).astype(np.float64)
        sub_mask = np.ascontiguousarray(mask[::2, ::2])
        ring = cv2.dilate(sub_mask, np.ones((5, 5), np.uint8))
        ink_mean = cv2.mean(sub, mask=sub_mask)[:3]
        bg_mean = cv2.mean(sub, mask=cv2.bitwise_not(ring * 255))[:3]
        weights = (0.299, 0.587, 0.114)

        def stretched_gray(rgb: tuple[float, ...]) -> float:
            return sum(wt * float(np.interp(v, np.arange(256), luts[c]))
                       for c, (wt, v) in enumerate(zip(weights, rgb)))

        thr = int(round((stretched_gray(ink_mean) + stretched_gray(bg_mean)) / 2))
        ink = mask.astype(bool)
        ys0, xs0 = np.flatnonzero(ink.any(axis=1)), np.flatnonzero(ink.any(axis=0))
        box = (int(xs0[0]), int(ys0[0]), int(xs0[-1]) + 1, int(ys0[-1]) + 1)
        pitch = float(min(pitch_x, pitch_y))
        ev = R.region_evidence("grid", clean_gray, box, ink[box[1]:box[3], box[0]:box[2]],
                               text=None, glyph_height=pitch, image=0)
        steps = (
            (RefCall("stretch", "autocontrast", {"image_index": 0, "cutoff": cutoff}),),
            (RefCall("binarize", "threshold", {"image_index": 1, "value": thr,
                                               "mode": "binary"}, ("stretch",)),),
        )
        checkpoints = (
            Checkpoint("s_global", "S", "global_op", {"tools": list(GLOBAL_TOOLS)},
                       "stretch the contrast of the whole image"),
            Checkpoint("s_binarize", "S", "global_op", {"tools": ["threshold"]},
                       "binarize the whole (stretched) image"),
            v_tool_checkpoint("grid", ["threshold"], "v_tool_grid",
                              "threshold an image holding the whole pattern"),
            v_true_checkpoint("grid", "v_true_grid",
                              "an artifact shows the whole pattern with visible contrast"),
        )
        scene, things = PATTERNS[kind]
        if rng.random() < self.total_prob:
            total = n_rows * n_cols
            question = (f"This image shows {scene}. How many {things} does the pattern have in "
                        "total?")
            answer = AnswerSpec(str(total), match="numeric")
            choices = R.pivot_choices(
                rng, (n_rows, n_cols), _grid_neighbours, 6, fmt=lambda rc: str(rc[0] * rc[1]))
        else:
            rc = f"{n_rows}x{n_cols}"
            question = (f"This image shows {scene}. How many rows and columns of {things} does "
                        "the pattern have? Answer as ROWSxCOLUMNS, e.g. 3x5.")
            answer = AnswerSpec(rc, variants=(f"{n_rows} x {n_cols}", f"{n_rows} by {n_cols}",
                                              f"{n_rows}×{n_cols}",
                                              f"{n_rows} rows and {n_cols} columns"))
            choices = R.pivot_choices(rng, (n_rows, n_cols), _grid_neighbours, 6,
                                      fmt=lambda rc: f"{rc[0]}x{rc[1]}")
        images = (R.freeze(img),)
        evidence = (ev,)
        return Task(
            task_id=f"{self.name}/0", family=self.name, level=3, domain=domain, images=images,
            question=question, answer=answer, reference=steps, evidence=evidence,
            checkpoints=checkpoints, choices=choices, capabilities=("global_cv",),
            metadata=_meta(self, domain, kind, images, evidence, rows=n_rows, cols=n_cols,
                           pitch=pitch, threshold=thr, dark_objects=dark_objects),
        )
