"""compare_labels: which of two small labelled gauges reads higher (parallel crops)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.spec import AnswerSpec, Evidence, RefCall, Task
from m3gym.tasks import render
from m3gym.tasks.families import _scene_common as c2
from m3gym.tasks.registry import FamilyConfig, register_family

GAUGE_SWEEP: float = 270.0
"""Degrees of arc a gauge scale spans (0 at -135°, 100 at +135° clockwise from 12)."""

LABEL_FACES: tuple[str, ...] = ("sans-bold", "condensed-bold", "mono-bold", "serif-bold")
"""TrueType faces of the gauge names."""

GAUGE_NAMES: tuple[str, ...] = (
    "PUMP A", "PUMP B", "TANK 1", "TANK 2", "LINE 3", "BOILER", "VALVE 7", "MIXER", "CHILLER",
    "FAN 2", "HEATER", "INLET", "OUTLET", "COOLANT", "REACTOR", "STEAM", "BYPASS", "DRYER",
)
"""Gauge labels (distinct, readable at view size when printed large)."""

_GAUGE_SCENES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "Diagram": ("panel_diagram", ("gradient", "paper"), "gauges drawn on the panel diagram"),
    "Science": ("lab_instruments", ("noise", "fabric", "wood"), "gauges on the lab bench"),
}


def gauge_theta(value: float) -> float:
    """Return the dial position (degrees clockwise from 12) of a gauge reading 0–100."""
    return -GAUGE_SWEEP / 2 + GAUGE_SWEEP * value / 100.0


def gauge_strokes(value: float, radius: float, ink: tuple[int, int, int],
                  needle: tuple[int, int, int]) -> list[c2.Stroke]:
    """Return the 5-unit ticks and the needle of a gauge reading ``value``."""
    strokes = [c2.Stroke(gauge_theta(5.0 * k), 0.66 if k % 2 == 0 else 0.76, 0.92,
                         max(1.0, radius / (14 if k % 2 == 0 else 22)), ink) for k in range(21)]
    strokes.append(c2.Stroke(gauge_theta(value), -0.15, 0.84, max(1.2, radius / 16), needle))
    return strokes


@register_family
@dataclass
class CompareLabelsFamily(FamilyConfig):
    """Say which of two small, labelled gauges reads higher (parallel crops, then compare).

    Scene:
        A panel diagram or lab bench (``scene_long``: 2400–2800 px) with clutter, distractor
        labels and ``gauges`` small round gauges (0–100 over 270°, 5-unit ticks, a thin needle),
        each with a large printed name under it.
    Question:
        "Among the small gauges ..., which reads higher: the one labelled <A> or the one labelled
        <B>?" — the two labels are the choices.
    Why a tool is needed:
        The gauges are ``radius_range`` px in radius in a photo 3.1–3.6 times the 768 px view,
        so at view size a dial is 6–9 px across its radius and its 5-unit ticks (4–6 px apart)
        merge into the rim; the two readings differ by only ``diff_range`` units, which the
        downscaled image cannot resolve (an unexplained share of about 0.55 per gauge, ``m3gym
        audit-tools``). The labels (40–48 px) stay readable at view size, so the agent can
        locate both gauges and crop them in one parallel step. With probability ``faint_prob``
        both gauges are printed pale (``contrast_range`` gray levels): still legible in the
        zoomed crop, so no contrast op follows it (a stretch after a crop adds nothing).
    Reference trajectory:
        One parallel step of two zoomed crops, one per gauge.
    Checkpoints:
        Per gauge: an S checkpoint for its crop, a ``v_tool`` on it and a ``v_true`` (an
        artifact shows the needle and ticks legibly).
    Difficulty:
        ``radius_range`` (28–32 px at 0 → 19–22 px at 1), ``diff_range`` (10–18 → 1–3 units:
        how close the readings are), ``faint_prob`` (0 → 0.7) and ``gauges`` (2–3 → 7–8
        look-alike gauges).
    Config:
        ``radius_range`` (px, within 18–34), ``diff_range`` (units, within 1–20),
        ``faint_prob`` ([0, 1]), ``contrast_range`` (gray levels, within 36–120), ``gauges``
        (within 2–8), ``scene_long`` (the image's long side, px, within 1400–3200).
    """

    name: ClassVar[str] = "compare_labels"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Diagram", "Science")
    description: ClassVar[str] = "crop two small gauges in parallel and compare their readings"

    radius_range: tuple[float, float] = (22.0, 30.0)
    diff_range: tuple[int, int] = (2, 7)
    faint_prob: float = 0.3
    contrast_range: tuple[float, float] = (75.0, 105.0)
    gauges: tuple[int, int] = (3, 6)
    scene_long: tuple[int, int] = (2400, 2800)

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return dial size, reading gap, faintness and gauge count for ``difficulty``."""
        return {
            "radius_range": c2.lerp_range(difficulty, (28.0, 32.0), (19.0, 22.0)),
            "diff_range": c2.lerp_range(difficulty, (10, 18), (1, 3), integer=True),
            "faint_prob": c2.lerp(difficulty, 0.0, 0.7),
            "gauges": c2.lerp_range(difficulty, (2, 3), (7, 8), integer=True),
        }

    def validate(self) -> None:
        """Check dial sizes, reading differences, faintness and gauge counts."""
        c2.check_range("radius_range", *self.radius_range, 18.0, 34.0)
        c2.check_range("diff_range", *self.diff_range, 1, 20)
        c2.check_range("contrast_range", *self.contrast_range, 36.0, 120.0)
        c2.check_range("scene_long", *self.scene_long, 1400, 3200)
        c2.check_range("gauges", *self.gauges, 2, 8)
        if not 0.0 <= self.faint_prob <= 1.0:
            raise ValueError("faint_prob must lie in [0, 1]")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        domain = c2.pick(rng, self.domains)
        scene_name, kinds, where = _GAUGE_SCENES[domain]
        w, h = c2.scene_size(rng, self.scene_long)
        img = render.surface(rng, h, w, kind=c2.pick(rng, kinds))
        faint = bool(rng.random() < self.faint_prob)
        n = int(rng.integers(self.gauges[0], self.gauges[1] + 1))
        names = [GAUGE_NAMES[int(i)] for i in rng.permutation(len(GAUGE_NAMES))[:n]]
        va = float(rng.integers(8, 93))
        diff = int(rng.integers(self.diff_range[0], self.diff_range[1] + 1))
        vb = va + diff if (rng.random() < 0.5 and va + diff <= 97) or va - diff < 3 else va - diff
        values = [va, vb, *(float(rng.integers(3, 98)) for _ in range(n - 2))]
        decoration = c2.decorate(img, rng, (6, 11), (2, 4))
        occupied: list[tuple[int, int, int, int]] = []
        placed: list[tuple[str, float, Evidence | None, tuple[int, int, int, int]]] = []
        label_glyph = float(rng.uniform(40.0, 48.0))
        for i, (label, value) in enumerate(zip(names, values)):
            radius = float(rng.uniform(*self.radius_range))
            pad = 9
            size = 2 * math.ceil(radius) + 2 * pad
            name_patch = render.truetype_text(label, label_glyph,
                                              render.pick_font(rng, LABEL_FACES))
            nw, nh = name_patch.size
            block = (max(size, nw), size + 10 + nh)
            spot = c2.place(rng, block, (40, 40, w - 40, h - 40), occupied, decoration,
                            margin=50)
            if spot is None:
                if i < 2:  # pragma: no cover - a 1700 px scene has room for 8 gauges
                    raise RuntimeError("no room for a target gauge")
                continue
            bx, by = spot
            gx = bx + (block[0] - size) // 2
            plate = render.jitter_color(rng, c2.PLATE_COLORS[c2.pick(
                rng, ("white", "cream", "light grey", "pale blue"))], 6)
            is_faint = faint if i < 2 else bool(rng.random() < 0.3)
            strong = render.rand_color(rng, 0, 60)
            ink = render.faded_color(plate, float(rng.uniform(*self.contrast_range))) \
                if is_faint else strong
            needle = ink if is_faint else c2.pick(rng, ("red", "black"))  # type: ignore[assignment]
            needle_col = needle if isinstance(needle, tuple) else (
                render.NAMED_COLORS["red"] if needle == "red" else (15, 15, 18))
            face = None if is_faint else render.jitter_color(rng, (248, 248, 244), 4)
            rim = ink if is_faint else render.rand_color(rng, 20, 160)
            # a printed (faint) gauge stays flat: shading would lend it contrast
            bezel = 0.0 if is_faint else float(rng.uniform(0.3, 0.45))

            def draw(ink_c: tuple[int, int, int], needle_c: tuple[int, int, int],
                     rim_c: tuple[int, int, int], value: float = value,
                     radius: float = radius, size: int = size,
                     face: tuple[int, int, int] | None = face,
                     plate: tuple[int, int, int] = plate,
                     bezel: float = bezel) -> c2.DialRender:
                return c2.render_dial(size, radius, face, rim_c, max(1.5, radius / 12),
                                      gauge_strokes(value, radius, ink_c, needle_c), 0.0, plate,
                                      cap=needle_c, bezel=bezel)

            dial = draw(ink, needle_col, rim)
            if not is_faint:  # an instrument stands off the panel: its shadow first
                img = c2.local_soft_shadow(img, rng, (gx, by, gx + size, by + size), 0.5)
            c2.paste_patch(img, dial.rgb, (gx, by))
            if not is_faint:  # a panel instrument: screwed to the board at its corners
                c2.draw_screws(img, (gx, by, gx + size, by + size), 3.5, max(1.6, size / 36),
                               rng)
            clean_dial = dial if not is_faint else draw(strong, strong, strong)
            render.paste_text(img, name_patch, bx + (block[0] - nw) // 2, by + size + 10,
                              render.ink_for(tuple(int(v) for v in img[by + size + 4, bx])))
            occupied.append((bx, by, bx + block[0], by + block[1]))
            ev = None
            if i < 2:
                r = math.ceil(radius) + 1
                c = size // 2
                sub = (c - r, c - r, c + r, c + r)
                box = (gx + sub[0], by + sub[1], gx + sub[2], by + sub[3])
                detail = c2.TICK_RADIUS * radius * math.radians(GAUGE_SWEEP / 20)
                ev = render.region_evidence(
                    "gauge_a" if i == 0 else "gauge_b",
                    clean_dial.clean[sub[1]:sub[3], sub[0]:sub[2]], box,
                    clean_dial.mask[sub[1]:sub[3], sub[0]:sub[2]], text=None,
                    glyph_height=detail, clean_is_region=True)
            placed.append((label, value, ev, (gx, by, gx + size, by + size)))
        img = c2.degrade(img, rng)

        (na, _, ea, _), (nb, _, eb, _) = placed[0], placed[1]
        assert ea is not None and eb is not None
        ev = (ea, eb)
        calls = tuple(c2.crop_call(f"c{i + 1}", 0, render.grow_box(e.box, 2, w, h), w, h,
                                   e.glyph_height) for i, e in enumerate(ev))
        steps: list[tuple[RefCall, ...]] = [calls]
        checkpoints = c2.chain_checkpoints(ev, steps)
        answer = na if va > vb else nb
        # the labels are named in a random order: the edge rule that draws vb makes the first
        # gauge read higher slightly more often than not
        first, second = c2.shuffled(rng, [na, nb])
        question = (f"Among the small {where}, which reads higher: the one labelled {first} or "
                    f"the one labelled {second}? Answer with the label.")
        return Task(
            task_id="", family=self.name, level=2, domain=domain, images=(render.freeze(img),),
            question=question, answer=AnswerSpec(answer), reference=tuple(steps), evidence=ev,
            checkpoints=checkpoints, choices=c2.shuffled(rng, [na, nb]),
            capabilities=("visual_grounding", "parallelism"),
            metadata=c2.l2_metadata(self.name, domain, scene_name, ev, img, faint=faint,
                               readings=[va, vb]),
        )


# CompareLabels: the class's name before every family class was called <Name>Family
__getattr__ = renamed_names(
    __name__, {"CompareLabels": ("CompareLabelsFamily", lambda: CompareLabelsFamily)})
