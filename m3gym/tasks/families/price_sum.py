"""price_sum: add the prices of two tiny, far-apart tags (two parallel crop chains)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

import cv2
import numpy as np

from m3gym.tasks import render
from m3gym.tasks.families import _l2_common as c2
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.spec import AnswerSpec, RefCall, Task
from m3gym.tasks.verify import first_verified

_SHELF_SCENES: tuple[tuple[str, tuple[str, ...]], ...] = (
    ("supermarket_shelf", ("wood", "gradient", "noise")),
    ("market_stall", ("fabric", "wood", "brick")),
    ("receipt_board", ("paper", "gradient", "brick")),
)


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
class PriceSum(FamilyConfig):
    """Add the prices of two small, far-apart tags (parallel crops, then arithmetic).

    Scene:
        A shop shelf, market stall or notice board (1700–2200 px) with shelf edges, clutter,
        distractor labels and ``tags`` price tags: light cards casting a soft shadow, each with a
        coloured dot (large enough to see at view size), the product's name in small print
        (faker) and a price in ``glyph_range`` px TrueType glyphs. The photo goes through the
        camera pipeline (uneven light, a cast shadow, blur outside the target tags, sensor
        noise, JPEG) at a strength drawn from ``camera_range``.
    Question:
        "What is the total of the prices on the tag with the <colour> dot and the tag with the
        <colour> dot?" — six sums to choose from (digit-slip misreadings of the true one).
    Why a tool is needed:
        The prices are 3–5 px tall at view size (longest side 768): illegible. The two target
        tags sit in opposite halves of the image, so one crop cannot show both legibly. With
        probability ``faint_prob`` both prices are faded (``contrast_range`` gray levels of
        ink, thermal paper), legible only after an autocontrast of each crop.
    Reference trajectory:
        One parallel step of two zoomed crops (one per tag); when faded, a second parallel step
        of two autocontrasts (4 calls, 2 hops).
    Checkpoints:
        Per tag: an S checkpoint per call, a ``v_tool`` on its decisive call (the crop, or the
        autocontrast when faded) and a ``v_true`` (an artifact shows the price legibly).
    Difficulty:
        ``glyph_range`` (12–14 px at 0 → 7.5–9 px at 1: smaller prices need more zoom and are
        harder to place), ``faint_prob`` (0 → 0.8), ``contrast_range`` (16–19 → 8–12 gray
        levels), ``tags`` (3–4 → 8 tags: more look-alike tags to tell apart by colour) and
        ``camera_range`` (0–0.15 → 0.4–0.6).
    Config:
        ``glyph_range`` (px, within 7–19), ``faint_prob`` ([0, 1]), ``contrast_range`` (gray
        levels, within 4–20), ``tags`` (number of tags, 2–10; at most 8 get a dot colour),
        ``camera_range`` (camera-pipeline strength, within 0–1).
    """

    name: ClassVar[str] = "price_sum"
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Finance",)
    description: ClassVar[str] = "crop two tiny price tags in parallel and add the prices"

    glyph_range: tuple[float, float] = (8.0, 11.0)
    faint_prob: float = 0.4
    contrast_range: tuple[float, float] = (9.0, 15.0)
    tags: tuple[int, int] = (5, 8)
    camera_range: tuple[float, float] = (0.2, 0.5)

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return glyph size, faintness and tag count for ``difficulty`` (0 easiest)."""
        return {
            "glyph_range": c2.lerp_range(difficulty, (12.0, 14.0), (7.5, 9.0)),
            "faint_prob": c2.lerp(difficulty, 0.0, 0.8),
            "contrast_range": c2.lerp_range(difficulty, (16.0, 19.0), (8.0, 12.0)),
            "tags": c2.lerp_range(difficulty, (3, 4), (8, 8), integer=True),
            "camera_range": c2.lerp_range(difficulty, (0.0, 0.15), (0.4, 0.6)),
        }

    def validate(self) -> None:
        """Check glyph sizes, faintness, tag counts and probabilities."""
        c2.check_range("glyph_range", *self.glyph_range, 7.0, 19.0)
        c2.check_range("contrast_range", *self.contrast_range, 4.0, 20.0)
        c2.check_range("tags", *self.tags, 2, 10)
        c2.check_range("camera_range", *self.camera_range, 0.0, 1.0)
        if not 0.0 <= self.faint_prob <= 1.0:
            raise ValueError("faint_prob must lie in [0, 1]")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task: the first draw whose reference passes every checkpoint."""
        return first_verified(lambda: self.draw(rng))

    def draw(self, rng: np.random.Generator) -> Task:
        """Draw one scene and its task (unverified; :meth:`generate` checks the reference)."""
        scene_name, kinds = _SHELF_SCENES[int(rng.integers(len(_SHELF_SCENES)))]
        w, h = c2.scene_size(rng, (1700, 2200))
        img = render.background(rng, h, w, kind=c2.pick(rng, kinds))
        for _ in range(int(rng.integers(2, 5))):  # shelf edges: lit lip, dark underside, shadow
            y = int(rng.integers(h // 8, h - h // 8))
            col = render.rand_color(rng, 40, 200)
            depth = int(rng.integers(10, 30))
            fall = min(h - 1, y + depth + int(rng.integers(8, 18)))  # the shadow under the lip
            ramp = np.linspace(0.55, 1.0, max(1, fall - y - depth), dtype=np.float32)
            band = img[y + depth:fall]
            band[:] = (band * ramp[:len(band), None, None] + 0.5).astype(np.uint8)
            cv2.rectangle(img, (0, y), (w - 1, y + depth), col, -1)
            cv2.rectangle(img, (0, y), (w - 1, y + 1), tuple(min(255, int(v * 1.25) + 12)
                                                           for v in col), -1)
            cv2.rectangle(img, (0, y + depth - 2), (w - 1, y + depth),
                          tuple(int(v * 0.6) for v in col), -1)
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
        keep: list[tuple[int, int, int, int]] = []
        for i, color in enumerate(colors):
            cents, text = _price_text(rng)
            glyph = float(rng.uniform(*self.glyph_range))
            patch = render.truetype_text(text, glyph, render.pick_font(rng, PRICE_FACES))
            # the product's name in small print above the price (decoration, never evidence)
            name = render.truetype_text(render.fake_product(rng, ascii_only=True),
                                        max(3.5, 0.5 * glyph),
                                        render.pick_font(rng, ("sans", "condensed")))
            pad = int(max(9, round(glyph * 0.8)))
            dot = int(max(10, round(glyph * 1.1)))
            pw, ph = patch.size
            nw, nh = name.size
            top = nh + max(3, pad // 2)
            right = max(0, nw - (dot + 8 + pw))
            size = (dot + 8 + pw + 2 * pad + right, top + ph + 2 * pad)
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
            # the card stands off the shelf: its soft shadow first, then the card on top
            tag_box = (spot[0], spot[1], spot[0] + size[0], spot[1] + size[1])
            img = c2.local_soft_shadow(img, rng, tag_box, float(rng.uniform(0.4, 0.8)))
            label = c2.draw_label(img, patch, spot, pad, plate, ink, extra_left=dot + 8,
                                  extra_top=top, extra_right=right)
            x0, y0, x1, y1 = label.plate_box
            cv2.rectangle(img, (x0, y0), (x1 - 1, y1 - 1), render.jitter_color(
                rng, tuple(int(v * 0.8) for v in plate), 4), 1)  # type: ignore[arg-type]
            render.paste_text(img, name, x0 + pad, y0 + max(3, pad // 2), ink)
            cy = (label.ink_box[1] + label.ink_box[3]) // 2
            cv2.circle(img, (x0 + pad // 2 + dot // 2 + 2, cy), dot // 2,
                       render.NAMED_COLORS[color], -1, cv2.LINE_AA)
            occupied.append(label.plate_box)
            tags.append((label, cents))
            if i < 2:
                keep.append(label.plate_box)
        img = render.camera_pipeline(img, rng, float(rng.uniform(*self.camera_range)), keep)

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
            task_id="", family=self.name, level=2, domain="Finance", images=(render.freeze(img),),
            question=question,
            answer=AnswerSpec(_money(total), (f"${_money(total)}",), "numeric", 0.005),
            reference=tuple(steps), evidence=ev, checkpoints=checkpoints,
            choices=_sum_choices(rng, a, b, [c for _, c in tags[2:]]),
            capabilities=("visual_grounding", "parallelism", *(("multi_hop",) if faint else ())),
            metadata=c2.l2_metadata(self.name, "Finance", scene_name, ev, img, faint=faint,
                               prices=[_money(a), _money(b)]),
        )


