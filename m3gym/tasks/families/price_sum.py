"""price_sum: add the prices on two tiny shelf-edge tags of a photographed supermarket shelf."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.spec import AnswerSpec, RefCall, Task
from m3gym.tasks import render
from m3gym.tasks.families import _scene_common as c2
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.render import lookup_scenes as LS
from m3gym.tasks.render import shelf as SH
from m3gym.tasks.verify import first_verified

PRICE_FACES: tuple[str, ...] = ("sans-bold", "condensed-bold", "mono-bold", "serif-bold", "sans",
                                "condensed")
"""TrueType faces a price is printed in."""


def _price_text(rng: np.random.Generator) -> tuple[int, str]:
    """Return a random price in cents (50–4999) and its tag text."""
    cents = int(rng.integers(50, 5000))
    if rng.random() < 0.5:
        cents = cents // 10 * 10 + int(rng.choice([9, 5, 0, 9]))
    return cents, f"${cents // 100}.{cents % 100:02d}"


def _money(cents: int) -> str:
    """Return ``cents`` as a plain decimal amount (``"12.05"``)."""
    return f"{cents // 100}.{cents % 100:02d}"


def _sum_choices(rng: np.random.Generator, a: int, b: int, others: list[int],
                 count: int = 6) -> tuple[str, ...]:
    """Return ``count`` shuffled sums (in cents): the true one and digit-slip misreadings.

    The distractors are slips of a hidden pivot that is itself a slip of the true sum
    (:func:`render.pivot_choices`), so the true sum is not the median of the options.
    ``others`` (decoy prices) is kept for the signature and unused.
    """
    def slips(v: int) -> list[int]:
        return [v + d for d in (100, -100, 10, -10, 90, -90, 1000, -1000, 9, -9, 1, -1)
                if v + d > 0]

    return render.pivot_choices(rng, a + b, slips, count, fmt=_money)


@register_family
@dataclass
class PriceSumFamily(FamilyConfig):
    """Add the prices on two small shelf-edge tags far apart on a supermarket shelf.

    Scene:
        A photographed supermarket shelf unit (1700–2200 px): a light metal back with peg
        holes, uprights and a dark plinth, two or three shelves whose dark price rails cast a
        soft shadow on the back below them, and on each shelf two or more product groups of
        ``tags`` in all, each a row of identical shaded 3-D packages (cartons, cans, bottles,
        jars, stacked up to three high; Faker brand and product printed in TrueType, colours
        kept clear of the dot colours). Under every group a shelf-edge price tag clips into
        the rail: a store-colour stripe, the product's name in small type, the price in
        ``glyph_range`` px TrueType glyphs, a tiny barcode and a coloured dot sticker (large
        enough to see at view size; eight dot colours at most). ``talkers`` promotional shelf
        talkers hang from the rails away from the tags. The photo is taken
        through a slightly rolled, off-axis camera (a whole-image homography; the tags are
        clipped on upright after it, at their rail's place, so their print is not resampled)
        and the camera pipeline (uneven light, a cast shadow, blur outside the target tags,
        sensor noise, JPEG), both at a strength drawn from ``camera_range``.
        It stays flat with ``scenes="photo"``: the shelf unit fills the frame, with no surface
        around it for a photograph to replace (``flat_scene_reason``).
    Question:
        "What is the total of the prices on the shelf tag with the <colour> dot and the shelf
        tag with the <colour> dot?" — six sums to choose from (digit-slip misreadings of a
        hidden pivot, so the true sum is not their centre).
    Why a tool is needed:
        The prices are 3–6 px tall at view size (longest side 768): illegible. The two target
        tags sit in opposite halves of the photo, so one crop cannot show both legibly. With
        probability ``faint_prob`` both tags are pale thermal prints (``contrast_range`` gray
        levels of ink): still legible in the zoomed crop (a contrast stretch after a crop shows
        nothing the crop did not), while the view's downscale blurs their thin strokes into the
        paper. No contrast op is in the reference: the family trains locating two tags by their
        dot and cropping both in one parallel step.
    Reference trajectory:
        One parallel step of two zoomed crops (one per target price); the prices are added.
    Checkpoints:
        Per tag: an S checkpoint for its crop, a ``v_tool`` on the crop and a ``v_true`` (an
        artifact shows the price legibly).
    Difficulty:
        ``glyph_range`` (12–14 px at 0 → 7.5–9 px at 1: smaller prices need more zoom and are
        harder to place), ``faint_prob`` (0 → 0.8), ``contrast_range`` (80–100 → 40–50 gray
        levels), ``tags`` (4–5 → 9–10 product groups and tags: more look-alike tags to tell
        apart by their dot), ``talkers`` (0–1 → 3–4 shelf talkers: clutter) and ``camera_range``
        (0–0.15 → 0.4–0.6: tilt, blur, noise and JPEG).
    Config:
        ``glyph_range`` (px, within 7–19), ``faint_prob`` ([0, 1]), ``contrast_range`` (gray
        levels, within 36–120), ``tags`` (product groups with a tag, within 4–12; at most 8 get
        a dot), ``talkers`` (shelf talkers, within 0–6), ``camera_range`` (camera strength,
        within 0–1).
    """

    name: ClassVar[str] = "price_sum"
    flat_scene_reason: ClassVar[str] = (
        "A store shelf photographed head-on fills the whole frame (back panel to frame edge): "
        "there is no surface around it for a photograph to replace.")
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Finance",)
    description: ClassVar[str] = "crop two tiny shelf-edge price tags in parallel, add the prices"

    glyph_range: tuple[float, float] = (8.0, 11.0)
    faint_prob: float = 0.3
    contrast_range: tuple[float, float] = (45.0, 70.0)
    tags: tuple[int, int] = (5, 8)
    talkers: tuple[int, int] = (1, 3)
    camera_range: tuple[float, float] = (0.2, 0.5)

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return glyph size, faintness, tag and talker counts and camera strength for ``d``."""
        return {
            "glyph_range": c2.lerp_range(difficulty, (12.0, 14.0), (7.5, 9.0)),
            "faint_prob": c2.lerp(difficulty, 0.0, 0.8),
            "contrast_range": c2.lerp_range(difficulty, (80.0, 100.0), (40.0, 50.0)),
            "tags": c2.lerp_range(difficulty, (4, 5), (9, 10), integer=True),
            "talkers": c2.lerp_range(difficulty, (0, 1), (3, 4), integer=True),
            "camera_range": c2.lerp_range(difficulty, (0.0, 0.15), (0.4, 0.6)),
        }

    def validate(self) -> None:
        """Check glyph sizes, contrast, tag and talker counts, camera strength, probability."""
        c2.check_range("glyph_range", *self.glyph_range, 7.0, 19.0)
        c2.check_range("contrast_range", *self.contrast_range, 36.0, 120.0)
        c2.check_range("tags", *self.tags, 4, 12)
        c2.check_range("talkers", *self.talkers, 0, 6)
        c2.check_range("camera_range", *self.camera_range, 0.0, 1.0)
        if not 0.0 <= self.faint_prob <= 1.0:
            raise ValueError("faint_prob must lie in [0, 1]")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task: the first draw whose reference passes every checkpoint."""
        return first_verified(lambda: self.draw(rng), defer_camera=True)

    def draw(self, rng: np.random.Generator) -> Task:
        """Draw one scene and its task (unverified; :meth:`generate` checks the reference)."""
        w, h = c2.scene_size(rng, (1700, 2200))
        strength = float(rng.uniform(*self.camera_range))
        margin = int(0.03 * max(w, h))
        cw, ch = w + 2 * margin, h + 2 * margin
        n_tags = int(rng.integers(self.tags[0], self.tags[1] + 1))
        n_shelves = min(int(rng.integers(2, 4)), n_tags // 2)
        per_shelf = [2] * n_shelves
        for k in rng.integers(0, n_shelves, n_tags - 2 * n_shelves):
            per_shelf[int(k)] += 1
        faint = bool(rng.random() < self.faint_prob)
        # every group: its product, price and tag; the targets are picked once the layout is known
        groups: list[tuple[str, int, SH.TagSpec]] = []
        for _ in range(n_tags):
            product = SH.product_name(rng)
            cents, text = _price_text(rng)
            glyph = float(rng.uniform(*self.glyph_range))
            spec = SH.tag_spec(rng, product, text, glyph, render.pick_font(rng, PRICE_FACES), None)
            groups.append((product, cents, spec))
        contrast = [float(rng.uniform(*self.contrast_range)) for _ in range(n_tags)]
        faint_other = [bool(rng.random() < 0.5) for _ in range(n_tags)]
        rail_h = max(SH.tag_layout(g[2]).size[0] for g in groups) + 12
        rows = SH.shelf_rows(ch, n_shelves, rail_h, int(ch * rng.uniform(0.04, 0.09)))
        canvas = np.empty((ch, cw, 3), np.uint8)
        SH.draw_back_panel(canvas, rng, rows)
        lo, hi = 2 * margin + cw // 60 + 8, cw - 2 * margin - cw // 60 - 8  # inside the photo
        spans: list[tuple[int, tuple[int, int]]] = []  # (shelf, columns) of every group
        for s, count in enumerate(per_shelf):
            shares = 1.0 + rng.uniform(0.0, 0.6, count)
            edges = np.round(lo + np.concatenate([[0], np.cumsum(shares)]) / shares.sum()
                             * (hi - lo)).astype(int)
            spans += [(s, (int(edges[i]), int(edges[i + 1]))) for i in range(count)]
        for (s, span), (product, *_rest) in zip(spans, groups):
            kind = c2.pick(rng, SH.PACKAGE_KINDS)
            room = rows[s].base - rows[s].top - 10
            look = SH.package_look(rng, kind, room, product, float(np.clip(room / 430, 0.8, 1.8)),
                                   span[1] - span[0])
            stack = 1 if kind == "bottle" else min(3, room // (look.size[1] + 2))
            SH.fill_facings(canvas, rng, look, span, rows[s].base, max(1, stack))
        rail_color = c2.pick(rng, SH.RAIL_COLORS)
        for row in rows:
            SH.draw_rail(canvas, row, rail_color)
        # the tags: targets in opposite halves, each tag a distinct dot colour (eight at most)
        centre = [(a + b) / 2 for _, (a, b) in spans]
        left = [i for i, x in enumerate(centre) if x < cw / 2 - 0.12 * (hi - lo)]
        right = [i for i, x in enumerate(centre) if x > cw / 2 + 0.12 * (hi - lo)]
        targets = [left[int(rng.integers(len(left)))], right[int(rng.integers(len(right)))]]
        if rng.random() < 0.5:
            targets.reverse()
        others = [i for i in rng.permutation(n_tags).tolist() if i not in targets]
        palette = [c2.TAB_COLORS[int(i)] for i in rng.permutation(len(c2.TAB_COLORS))]
        dot_of = dict(zip([*targets, *others], palette))
        tags: list[tuple[SH.TagPatch, SH.TagPatch | None, render.Box]] = []
        for i, ((s, (a, b)), (_, _, plain)) in enumerate(zip(spans, groups)):
            colour = dot_of.get(i)
            spec = replace(plain, dot=render.NAMED_COLORS[colour] if colour else None)
            is_faint = faint if i in targets else faint_other[i]
            ink = render.faded_color(spec.paper, contrast[i]) if is_faint else (24, 24, 28)
            tag = SH.tag_patch(spec, ink)
            th, tw = tag.rgb.shape[:2]
            y0 = rows[s].rail[0] + (rail_h - th) // 2
            x0 = int(np.clip((a + b) / 2 - tw / 2 + rng.uniform(-0.2, 0.2) * (b - a - tw),
                             lo, hi - tw))
            strong = SH.tag_patch(spec, render.ink_for(spec.paper)) if i in targets else None
            tags.append((tag, strong, (x0, y0, x0 + tw, y0 + th)))
        self._talkers(canvas, rng, rows, [t[2] for t in tags], (lo, hi),
                      int(rng.integers(self.talkers[0], self.talkers[1] + 1)))
        hom = SH.camera_tilt(rng, w, h, margin, strength)
        img = SH.warp_photo(canvas, hom, (w, h))
        # the tags go on after the tilt, upright at their rail's place: print stays unresampled
        boxes = [SH.paste_tag(img, rng, tag.rgb, SH.warp_point(hom, box)) for tag, _, box in tags]
        clean = img.copy()
        placed = []
        for i in targets:
            (tag, strong, _), (x0, y0, x1, y1) = tags[i], boxes[i]
            assert strong is not None
            clean[y0:y1, x0:x1] = strong.rgb
            pb = tag.price_box
            placed.append(((x0 + pb[0], y0 + pb[1], x0 + pb[2], y0 + pb[3]), tag.price_mask,
                           tag.glyph, boxes[i]))
        img = render.camera_pipeline(img, rng, strength, [p[3] for p in placed])

        ev = tuple(render.region_evidence(f"price_{'ab'[k]}", clean, p[0], p[1],
                                          text=groups[i][2].price, glyph_height=p[2])
                   for k, (i, p) in enumerate(zip(targets, placed)))
        calls = tuple(c2.crop_call(f"c{k + 1}", 0, render.grow_box(p[0], 2, w, h), w, h, p[2])
                      for k, p in enumerate(placed))
        steps: list[tuple[RefCall, ...]] = [calls]
        checkpoints = c2.chain_checkpoints(ev, steps)
        a, b = groups[targets[0]][1], groups[targets[1]][1]
        colors = [dot_of[i] for i in targets]
        question = (f"What is the total of the prices on the shelf tag with the {colors[0]} dot "
                    f"and the shelf tag with the {colors[1]} dot? Answer with the number only.")
        return Task(
            task_id="", family=self.name, level=2, domain="Finance", images=(render.freeze(img),),
            question=question,
            answer=AnswerSpec(_money(a + b), (f"${_money(a + b)}",), "numeric", 0.005),
            reference=tuple(steps), evidence=ev, checkpoints=checkpoints,
            choices=_sum_choices(rng, a, b, [g[1] for i, g in enumerate(groups)
                                             if i not in targets]),
            capabilities=("visual_grounding", "parallelism"),
            metadata=c2.l2_metadata(self.name, "Finance", "supermarket_shelf", ev, img,
                                    faint=faint, prices=[_money(a), _money(b)],
                                    shelves=n_shelves, tags=n_tags),
        )

    @staticmethod
    def _talkers(canvas: np.ndarray, rng: np.random.Generator, rows: list[SH.ShelfRow],
                 tags: list[render.Box], columns: tuple[int, int], count: int) -> None:
        """Hang ``count`` shelf talkers under the rails, clear of every tag (in place)."""
        ch, cw = canvas.shape[:2]
        avoid = [render.grow_box(t, 16, cw, ch) for t in tags]
        for _ in range(count):
            card = SH.talker_card(rng, float(rng.uniform(22.0, 34.0)))
            kh, kw = card.shape[:2]
            row = rows[int(rng.integers(len(rows)))]
            if columns[1] - columns[0] <= kw + 20:
                continue
            x = int(rng.integers(columns[0], columns[1] - kw - 20))
            at = (x, row.rail[1] - 6)
            box = (x, at[1], x + kw + 20, at[1] + kh + 20)
            if box[3] >= ch or any(render.boxes_overlap(box, t, 0) for t in avoid):
                continue
            canvas = c2.local_soft_shadow(canvas, rng, box, 0.5)
            done = LS.place_patch(canvas, rng, card, None, at, float(rng.uniform(0.04, 0.12)),
                                  shadow=0.0)
            if done is not None:
                avoid.append(render.grow_box(done[0], 10, cw, ch))


# PriceSum: the class's name before every family class was called <Name>Family
__getattr__ = renamed_names(
    __name__, {"PriceSum": ("PriceSumFamily", lambda: PriceSumFamily)})
