"""Level-2 families: short multi-step visual chains on text and small objects.

* ``price_sum`` — two parallel crops of far-apart price tags (→ two autocontrasts when faded);
* ``region_count`` — crop a dashed region of a dim photo → autocontrast → count one colour.

The dial families (``clock_reading``, ``compare_labels``) live in :mod:`l2_dials`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import cv2
import numpy as np

from m3gym.scoring.checkpoints import evidence_checkpoints
from m3gym.tasks import render
from m3gym.tasks.families import l2_common as c2
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.spec import AnswerSpec, RefCall, Task


def _freeze(img: np.ndarray) -> np.ndarray:
    return render.freeze(img)


# --------------------------------------------------------------------------------------------
# price_sum

_SHELF_SCENES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("supermarket_shelf", ("wood", "gradient", "noise")),
    ("market_stall", ("fabric", "wood", "brick")),
    ("receipt_board", ("paper", "gradient", "brick")),
)


def _price_text(rng: np.random.Generator) -> tuple[int, str]:
    """Return a random price in cents (50–4999) and its tag text."""
    cents = int(rng.integers(50, 5000))
    if rng.random() < 0.5:
        cents = cents // 10 * 10 + int(rng.choice([9, 5, 0, 9]))
    return cents, f"${cents // 100}.{cents % 100:02d}"


def _money(cents: int) -> str:
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
class PriceSum(FamilyConfig):
    """Add the prices of two small, far-apart tags (parallel crops, then arithmetic).

    Each tag carries a coloured dot (visible at view size, named in the question) and a price in
    8–11 px glyphs, 3–5 px at view size: the prices need a zoomed crop each. The tags sit in
    opposite halves of the image, so one crop cannot show both legibly; the two crops are
    independent and belong in one parallel step. With probability ``faint_prob`` the prices are
    faded (thermal paper) and each crop also needs an autocontrast (4 calls, 2 hops).
    """

    name: ClassVar[str] = "price_sum"
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Finance",)
    description: ClassVar[str] = "crop two tiny price tags in parallel and add the prices"

    glyph_range: tuple[float, float] = (8.0, 11.0)
    faint_prob: float = 0.4
    contrast_range: tuple[float, float] = (9.0, 15.0)
    tags: tuple[int, int] = (5, 8)

    def validate(self) -> None:
        """Check glyph sizes, faintness, tag counts and probabilities."""
        c2.check_range("glyph_range", *self.glyph_range, 7.0, 19.0)
        c2.check_range("contrast_range", *self.contrast_range, 4.0, 20.0)
        c2.check_range("tags", *self.tags, 2, 10)
        if not 0.0 <= self.faint_prob <= 1.0:
            raise ValueError("faint_prob must lie in [0, 1]")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        scene_name, kinds = _SHELF_SCENES[int(rng.integers(len(_SHELF_SCENES)))]
        w, h = c2.scene_size(rng, (1700, 2200))
        img = render.background(rng, h, w, kind=c2.pick(rng, kinds))
        for _ in range(int(rng.integers(2, 5))):  # shelf edges
            y = int(rng.integers(h // 8, h - h // 8))
            col = render.rand_color(rng, 40, 200)
            cv2.rectangle(img, (0, y), (w - 1, y + int(rng.integers(10, 30))), col, -1)
        faint = bool(rng.random() < self.faint_prob)
        n_tags = int(rng.integers(self.tags[0], self.tags[1] + 1))
        colors = [c2.TAB_COLORS[int(i)] for i in rng.permutation(len(c2.TAB_COLORS))[:n_tags]]
        halves = [(40, 40, w // 2 - 60, h - 40), (w // 2 + 60, 40, w - 40, h - 40)]
        if rng.random() < 0.5:
            halves.reverse()
        words = (*render.DISTRACTOR_WORDS, "BUY 2", "PER KG", "NEW PRICE", "FRESH")
        decoration = c2.decorate(img, rng, (8, 15), (3, 6), texts=words)
        occupied: list[tuple[int, int, int, int]] = []
        tags: list[tuple[c2.PlacedLabel, int]] = []
        for i, color in enumerate(colors):
            cents, text = _price_text(rng)
            glyph = float(rng.uniform(*self.glyph_range))
            face, _ = render.random_font(rng)
            patch = c2.text_patch(text, glyph, face, 1)
            pad = int(max(9, round(glyph * 0.8)))
            dot = int(max(10, round(glyph * 1.1)))
            pw, ph = patch.size
            size = (dot + 8 + pw + 2 * pad, ph + 2 * pad)
            bounds = halves[i] if i < 2 else (40, 40, w - 40, h - 40)
            spot = c2.place(rng, size, bounds, occupied, decoration, margin=30)
            if spot is None:
                if i < 2:  # pragma: no cover - half a 1700 px scene always has room
                    raise RuntimeError("no room for a target tag")
                continue
            plate = render.jitter_color(
                rng, c2.PLATE_COLORS[c2.pick(rng, ("white", "cream", "pale yellow"))], 6)
            is_faint = faint if i < 2 else bool(rng.random() < 0.5)
            ink = (render.faded_color(plate, float(rng.uniform(*self.contrast_range)))
                   if is_faint else render.ink_for(plate))
            label = c2.draw_label(img, patch, spot, pad, plate, ink, extra_left=dot + 8)
            x0, y0, _, y1 = label.plate_box
            cv2.circle(img, (x0 + pad // 2 + dot // 2 + 2, (y0 + y1) // 2), dot // 2,
                       render.NAMED_COLORS[color], -1, cv2.LINE_AA)
            occupied.append(label.plate_box)
            tags.append((label, cents))
        img = c2.degrade(img, rng)

        (la, a), (lb, b) = tags[0], tags[1]
        ev = (la.evidence("price_a"), lb.evidence("price_b"))
        calls = tuple(c2.crop_call(f"c{i + 1}", 0, render.grow_box(lab.ink_box, 2, w, h), w, h,
                                   lab.glyph_height) for i, lab in enumerate((la, lb)))
        steps: list[tuple[RefCall, ...]] = [calls]
        if faint:
            steps.append(tuple(RefCall(f"c{i + 3}", "autocontrast",
                                       {"image_index": i + 1, "cutoff": 1.0}, (f"c{i + 1}",))
                               for i in range(2)))
        else:
            rng.random()  # an unused draw, kept so every seed's scene and choices stay the same
        checkpoints = c2.chain_checkpoints(ev, steps)
        total = a + b
        question = (f"What is the total of the prices on the tag with the {colors[0]} dot and "
                    f"the tag with the {colors[1]} dot? Answer with the number only.")
        return Task(
            task_id="", family=self.name, level=2, domain="Finance", images=(_freeze(img),),
            question=question,
            answer=AnswerSpec(_money(total), (f"${_money(total)}",), "numeric", 0.005),
            reference=tuple(steps), evidence=ev, checkpoints=checkpoints,
            choices=_sum_choices(rng, a, b, [c for _, c in tags[2:]]),
            capabilities=("visual_grounding", "parallelism", *(("multi_hop",) if faint else ())),
            metadata=c2.l2_metadata(self.name, "Finance", scene_name, ev, img, faint=faint,
                               prices=[_money(a), _money(b)]),
        )


# --------------------------------------------------------------------------------------------
# region_count

_CONFUSABLE: dict[str, frozenset[str]] = {
    "red": frozenset({"orange", "pink"}), "orange": frozenset({"red", "yellow", "pink"}),
    "yellow": frozenset({"orange", "white"}), "pink": frozenset({"red", "orange", "purple"}),
    "blue": frozenset({"purple", "cyan"}), "purple": frozenset({"blue", "pink"}),
    "cyan": frozenset({"blue", "green", "white"}), "green": frozenset({"cyan"}),
    "white": frozenset({"yellow", "cyan"}),
}

DIM_CONTRAST: float = 14.0
"""Largest target-vs-ground contrast (gray levels) of ``region_count``'s dim photo."""

_COUNT_SCENES: dict[str, dict[str, object]] = {
    "Science": {"scene": "petri_dish", "kinds": ("paper", "noise", "fabric"),
                "object": "colonies", "region": "dashed rectangle drawn on the plate"},
    "Society": {"scene": "parking_lot", "kinds": ("asphalt", "noise"),
                "object": "cars", "region": "dashed parking zone"},
}


@register_family
@dataclass
class RegionCount(FamilyConfig):
    """Count objects of one colour inside a dashed region of a dim photo (crop → autocontrast).

    Objects are 6–9 px across (2–5 px at view size) and the whole photo is dim: its dynamic
    range is compressed so the target-vs-ground contrast is at most :data:`DIM_CONTRAST` gray
    levels (less still once the view's downscale averages a 2–5 px object with its ground). A
    zoomed crop of the region makes the objects large enough but leaves them too faint to tell
    colours apart; autocontrast of the crop restores them. The same colour also occurs outside the
    region, and other colours inside it, so only the grounded count is right.
    """

    name: ClassVar[str] = "region_count"
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Science", "Society")
    description: ClassVar[str] = "crop a marked region of a dim photo, autocontrast, count"

    size_range: tuple[int, int] = (6, 9)
    count_range: tuple[int, int] = (3, 12)

    def validate(self) -> None:
        """Check object sizes and counts."""
        c2.check_range("size_range", *self.size_range, 5, 12)
        c2.check_range("count_range", *self.count_range, 0, 12)

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        domain = c2.pick(rng, self.domains)
        spec = _COUNT_SCENES[domain]
        w, h = c2.scene_size(rng)
        img = render.background(rng, h, w, kind=c2.pick(rng, spec["kinds"]),  # type: ignore[arg-type]
                                lighting=float(rng.uniform(0.0, 0.15)), vignette=0.1)
        bg_lum = float(render.to_gray(img[::16, ::16]).mean())
        d = int(rng.integers(self.size_range[0], self.size_range[1] + 1))
        cars = domain == "Society"
        targets = [n for n in render.NAMED_COLORS
                   if abs(render.luminance(render.NAMED_COLORS[n]) - bg_lum) >= 72]
        target = c2.pick(rng, targets)
        others = [n for n in render.NAMED_COLORS if n != target and n not in _CONFUSABLE[target]
                  and abs(render.luminance(render.NAMED_COLORS[n]) - bg_lum) >= 30] or [
            n for n in render.NAMED_COLORS if n != target and n not in _CONFUSABLE[target]]

        frame_w = int(rng.integers(3, 5))
        max_side = int(render.VIEW_SIZE * d / (c2.LEGIBILITY_MARGIN * c2.MIN_VIEW_HEIGHT + 0.5)
                       ) - 2 * frame_w - 16
        rw = int(rng.integers(200, max_side + 1))
        rh = int(rng.integers(200, max_side + 1))
        rx = int(rng.integers(60, w - rw - 60))
        ry = int(rng.integers(60, h - rh - 60))
        inner = (rx, ry, rx + rw, ry + rh)
        frame_col = c2.pick(rng, tuple(c for c in ("white", "yellow", "cyan", "orange")
                                       if c != target))
        shape = (int(round(d * 1.7)), d) if cars else (d, d)

        def draw_obj(x: int, y: int, color: tuple[int, int, int], mask: np.ndarray | None,
                     ) -> None:
            ow, oh = shape
            if cars:
                cv2.rectangle(img, (x, y), (x + ow - 1, y + oh - 1), color, -1, cv2.LINE_AA)
                if mask is not None:
                    mask[y - ry:y - ry + oh, x - rx:x - rx + ow] = True
            else:
                cv2.circle(img, (x * 16 + ow * 8, y * 16 + oh * 8), d * 8, color, -1,
                           cv2.LINE_AA, 4)
                if mask is not None:
                    cv2.circle(mask_u8, ((x - rx) * 16 + ow * 8, (y - ry) * 16 + oh * 8),
                               d * 8 - 4, 1, -1, cv2.LINE_8, 4)

        # the options are drawn first (consecutive counts inside the feasible range) and the
        # answer is a uniformly random member: no statistic of the options can single it out
        window = render.value_window(rng, self.count_range[0], self.count_range[1], 6)
        n = int(render.pick(rng, window))
        n_other = int(rng.integers(3, 9))
        mask_u8 = np.zeros((rh, rw), np.uint8)
        mask = np.zeros((rh, rw), bool)
        occupied: list[tuple[int, int, int, int]] = []
        placed = 0
        inside_bounds = (rx + d + 2, ry + d + 2, rx + rw - d - 2, ry + rh - d - 2)
        for k in range(n + n_other):
            is_target = k < n
            ow, oh = shape
            spot = render.find_free_spot(rng, (ow, oh), inside_bounds, occupied,
                                         margin=max(3, d // 2), tries=80)
            if spot is None:
                if is_target:  # pragma: no cover - the region has room for 18 tiny objects
                    raise RuntimeError("no room for a target object")
                continue
            name = target if is_target else c2.pick(rng, others)
            col = render.jitter_color(rng, render.NAMED_COLORS[name], 10)
            draw_obj(spot[0], spot[1], col, mask if is_target else None)
            occupied.append((spot[0], spot[1], spot[0] + ow, spot[1] + oh))
            placed += is_target
        outside = [render.grow_box(inner, 3 * d + frame_w, w, h)]
        for _ in range(int(rng.integers(25, 60))):
            ow, oh = shape
            spot = render.find_free_spot(rng, (ow, oh), (10, 10, w - 10, h - 10), outside,
                                         margin=max(3, d // 2), tries=10)
            if spot is None:
                continue
            name = target if rng.random() < 0.45 else c2.pick(rng, others)
            draw_obj(spot[0], spot[1], render.jitter_color(rng, render.NAMED_COLORS[name], 10),
                     None)
            outside.append((spot[0], spot[1], spot[0] + ow, spot[1] + oh))
        mask |= mask_u8.astype(bool)
        # the dashed frame, just outside the inner box
        dash = int(rng.integers(10, 22))
        fc = render.NAMED_COLORS[frame_col]
        x0, y0, x1, y1 = rx - frame_w, ry - frame_w, rx + rw, ry + rh
        for sx in range(x0, x1, 2 * dash):
            cv2.rectangle(img, (sx, y0), (min(x1 + frame_w, sx + dash) - 1, y0 + frame_w - 1),
                          fc, -1)
            cv2.rectangle(img, (sx, y1), (min(x1 + frame_w, sx + dash) - 1, y1 + frame_w - 1),
                          fc, -1)
        for sy in range(y0, y1, 2 * dash):
            cv2.rectangle(img, (x0, sy), (x0 + frame_w - 1, min(y1 + frame_w, sy + dash) - 1),
                          fc, -1)
            cv2.rectangle(img, (x1, sy), (x1 + frame_w - 1, min(y1 + frame_w, sy + dash) - 1),
                          fc, -1)
        clean_region = render.to_gray(img[ry:ry + rh, rx:rx + rw])
        contrast = max(render.ink_contrast(clean_region, mask), 1.0)
        span = float(np.clip(DIM_CONTRAST * 255.0 / contrast, 16.0, 40.0))
        low = float(rng.uniform(10.0, 200.0 - span))
        offsets = [low + float(rng.uniform(-8, 8)) for _ in range(3)]
        # noise first, then the dim exposure: the stretch of the crop restores both alike
        img = render.compress_dynamic_range(c2.degrade(img, rng, (1.0, 2.5)), offsets, span)

        ev = render.region_evidence("region", clean_region, inner, mask, text=None,
                                    glyph_height=float(d), clean_is_region=True)
        crop_box = render.grow_box(inner, frame_w + 4, w, h)
        steps = (
            (c2.crop_call("c1", 0, crop_box, w, h, float(d)),),
            (RefCall("c2", "autocontrast", {"image_index": 1, "cutoff": 0.0}, ("c1",)),),
        )
        checkpoints = evidence_checkpoints("region", [c for step in steps for c in step])
        question = (f"How many {target} {spec['object']} are inside the {frame_col} "
                    f"{spec['region']}? Answer with a number.")
        return Task(
            task_id="", family=self.name, level=2, domain=domain, images=(_freeze(img),),
            question=question, answer=AnswerSpec(str(placed)),
            reference=steps, evidence=(ev,), checkpoints=checkpoints,
            choices=render.shuffled(rng, [str(v) for v in window]),
            capabilities=("visual_grounding", "multi_hop"),
            metadata=c2.l2_metadata(self.name, domain, str(spec["scene"]), (ev,), img,
                               object_size=d, span=span, target=target),
        )
