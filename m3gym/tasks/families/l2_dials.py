"""Level-2 dial families: read a tilted analog clock, compare two small gauges.

* ``clock_reading`` — crop (zoom) → rotate a small, tilted wall clock, read the time;
* ``compare_labels`` — two parallel crops of small gauges (→ two autocontrasts when faded),
  answer which one reads higher.

Dial evidence is not text: its ``glyph_height`` is the size of the smallest decisive detail,
the spacing of adjacent scale ticks (minute ticks of a clock, 5-unit ticks of a gauge), measured
along the tick circle; ``clean``/``mask`` are the undegraded render and the decisive strokes
(hands or needle and the ticks they are read against).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import ClassVar

import cv2
import numpy as np

from m3gym.scoring.checkpoints import evidence_checkpoints
from m3gym.tasks import render
from m3gym.tasks.families import l2_common as c2
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.spec import AnswerSpec, Evidence, RefCall, Task

TICK_RADIUS: float = 0.85
"""Radius (fraction of the dial radius) at which tick spacing is measured."""


def disk_alpha(size: int, radius: float) -> np.ndarray:
    """Return the ``float32`` anti-aliased coverage (0..1) of a centred disk in a square patch."""
    ss = c2.SUPERSAMPLE
    big = np.zeros((size * ss, size * ss), np.uint8)
    c = size * ss / 2.0
    cv2.circle(big, (int(round(c * 16)), int(round(c * 16))), int(round(radius * ss * 16)), 255,
               -1, cv2.LINE_AA, 4)
    return cv2.resize(big, (size, size), interpolation=cv2.INTER_AREA).astype(np.float32) / 255.0


# --------------------------------------------------------------------------------------------
# clock_reading


def format_time(hour: int, minute: int) -> str:
    """Return ``"H:MM"`` (hour 1–12)."""
    return f"{hour}:{minute:02d}"


def time_variants(hour: int, minute: int) -> tuple[str, ...]:
    """Return accepted spellings of a 12-hour clock time besides ``H:MM``."""
    out = [f"{hour:02d}:{minute:02d}", f"{hour % 12 + 12}:{minute:02d}"]
    if hour == 12:
        out += [f"0:{minute:02d}", f"00:{minute:02d}"]
    return tuple(dict.fromkeys(v for v in out if v != format_time(hour, minute)))


def time_choices(rng: np.random.Generator, hour: int, minute: int,
                 count: int = 6) -> tuple[str, ...]:
    """Return ``count`` shuffled times: the true one and typical misreadings.

    Misreadings of a time: a minute tick off, five or ten minutes off, the hour off by one (the
    hour hand near the next hour), and the hands swapped. The distractors are misreadings of a
    hidden pivot that is itself a misreading of the true time (:func:`render.pivot_choices`), so
    the true time is not the centre of the options.
    """
    def wrap(h: int, m: int) -> tuple[int, int]:
        h += m // 60
        return (h - 1) % 12 + 1, m % 60

    def misreadings(t: tuple[int, int]) -> list[tuple[int, int]]:
        h, m = t
        swapped = ((m // 5) % 12 or 12, ((h % 12) * 5 + m // 12) % 60)
        return [wrap(h, m + d) for d in (1, -1, 2, -2, 5, -5, 10, -10)] + [
            wrap(h + 1, m), wrap(h - 1, m), swapped]

    return render.pivot_choices(rng, (hour, minute), misreadings, count,
                                fmt=lambda t: format_time(*t))


def clock_strokes(hour: int, minute: int, radius: float, ink: tuple[int, int, int],
                  hand: tuple[int, int, int]) -> list[c2.Stroke]:
    """Return the ticks and hands of a clock showing ``hour:minute`` (dial radius ``radius``)."""
    strokes = []
    for k in range(60):
        major = k % 5 == 0
        strokes.append(c2.Stroke(6.0 * k, 0.72 if major else 0.80, 0.92,
                                 max(1.0, radius / (14 if major else 30)), ink))
    strokes.append(c2.Stroke(30.0 * (hour % 12) + 0.5 * minute, -0.10, 0.50,
                             max(2.0, radius / 9), hand))
    strokes.append(c2.Stroke(6.0 * minute, -0.12, 0.86, max(1.5, radius / 16), hand))
    return strokes


_CLOCK_SCENES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "Life": ("kitchen_wall", ("brick", "paper", "wood", "fabric"), "wall clock"),
    "Science": ("lab_wall", ("noise", "gradient", "paper"), "lab clock"),
}


@register_family
@dataclass
class ClockReading(FamilyConfig):
    """Read the time on a small, tilted analog clock (crop with zoom → rotate upright).

    The dial is 66–88 px across in a 1400–2000 px scene; its minute ticks are 3–4 px apart,
    1–2 px at the agent's view size (longest side 768), so the exact minute cannot be read
    without a zoomed crop. The clock hangs tilted by 25–155° (or a quarter/half turn), so the
    zoomed crop must be rotated upright (the 12 o'clock is marked by a triangle) before the
    reading counts as seen; the answer is exact to the minute.
    """

    name: ClassVar[str] = "clock_reading"
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Life", "Science")
    description: ClassVar[str] = "zoom into a small tilted clock, rotate it upright, read it"

    radius_range: tuple[float, float] = (33.0, 44.0)
    tilt_range: tuple[float, float] = (25.0, 155.0)

    def validate(self) -> None:
        """Check the dial size (zoom 5 must resolve minute ticks) and the tilt range."""
        c2.check_range("radius_range", *self.radius_range, 32.0, 44.0)
        c2.check_range("tilt_range", *self.tilt_range, 15.0, 180.0)

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        domain = c2.pick(rng, self.domains)
        scene_name, kinds, noun = _CLOCK_SCENES[domain]
        w, h = c2.scene_size(rng)
        img = render.background(rng, h, w, kind=c2.pick(rng, kinds))
        hour, minute = int(rng.integers(1, 13)), int(rng.integers(60))
        if rng.random() < 0.3:
            angle = float(rng.choice([90.0, 180.0, -90.0]))
        else:
            angle = float(rng.uniform(*self.tilt_range)) * (1.0 if rng.random() < 0.5 else -1.0)
        radius = float(rng.uniform(*self.radius_range))
        size = 2 * math.ceil(radius) + 6
        decoration = c2.decorate(img, rng, (8, 15), (2, 5))
        spot = c2.place(rng, (size, size), (80, 80, w - 80, h - 80), [], decoration)
        assert spot is not None
        x, y = spot
        box = (x, y, x + size, y + size)
        wall = tuple(int(v) for v in img[y:y + size, x:x + size].reshape(-1, 3).mean(0))
        face = render.jitter_color(rng, c2.PLATE_COLORS[c2.pick(
            rng, ("white", "cream", "pale yellow", "light grey", "pale blue"))], 6)
        ink = render.rand_color(rng, 10, 70)
        hand = render.rand_color(rng, 0, 60)
        rim = render.rand_color(rng, 20, 200)
        dial = c2.render_dial(size, radius, face, rim, max(2.0, radius / 10),
                              clock_strokes(hour, minute, radius, ink, hand), angle,
                              wall, marker=(0.0, render.NAMED_COLORS["red"]), cap=hand)
        a = disk_alpha(size, radius)[..., None]
        region = img[y:y + size, x:x + size].astype(np.float32)
        img[y:y + size, x:x + size] = (region * (1 - a) + dial.rgb.astype(np.float32) * a
                                       + 0.5).astype(np.uint8)
        clean = img[y:y + size, x:x + size].copy()
        img = c2.degrade(img, rng)

        detail = 2.0 * math.pi * TICK_RADIUS * radius / 60.0
        ev = render.region_evidence("clock", clean, box, dial.mask, text=None,
                                    glyph_height=detail, clean_is_region=True)
        ev = Evidence(id=ev.id, image=0, box=ev.box, glyph_height=ev.glyph_height,
                      clean=ev.clean, mask=ev.mask, angle=c2.normalized_angle(angle))
        undo = c2.normalized_angle(-angle)
        steps = (
            (c2.crop_call("c1", 0, box, w, h, detail, rotate_deg=undo),),
            (RefCall("c2", "rotate", {"image_index": 1, "angle": undo}, ("c1",)),),
        )
        checkpoints = evidence_checkpoints("clock", [c for step in steps for c in step])
        pos = render.position_phrase(box, w, h)
        question = (f"What time does the small {noun} in the {pos} part of the image show? "
                    "It may hang tilted; a red triangle marks its 12 o'clock. "
                    "Answer as H:MM (12-hour).")
        return Task(
            task_id="", family=self.name, level=2, domain=domain, images=(render.freeze(img),),
            question=question,
            answer=AnswerSpec(format_time(hour, minute), time_variants(hour, minute)),
            reference=steps, evidence=(ev,), checkpoints=checkpoints,
            choices=time_choices(rng, hour, minute),
            capabilities=("visual_grounding", "multi_hop"),
            metadata=c2.l2_metadata(self.name, domain, scene_name, (ev,), img, tilt=angle,
                               radius=radius),
        )


# --------------------------------------------------------------------------------------------
# compare_labels

GAUGE_SWEEP: float = 270.0
"""Degrees of arc a gauge scale spans (0 at -135°, 100 at +135° clockwise from 12)."""

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
class CompareLabels(FamilyConfig):
    """Say which of two small, labelled gauges reads higher (parallel crops, then compare).

    The gauges are 44–60 px across with 5-unit ticks 4–6 px apart (2–4 px at view size) and a
    thin needle; the two readings differ by only 2–7 units (5–19° of needle angle), which the
    downscaled full image cannot resolve. Their labels are printed large (readable at view
    size), so the agent can locate both and crop them in one parallel step. With probability
    ``faint_prob`` the gauges are faded (low-contrast print), so each crop also needs an
    autocontrast.
    """

    name: ClassVar[str] = "compare_labels"
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Diagram", "Science")
    description: ClassVar[str] = "crop two small gauges in parallel and compare their readings"

    radius_range: tuple[float, float] = (22.0, 30.0)
    diff_range: tuple[int, int] = (2, 7)
    faint_prob: float = 0.3
    contrast_range: tuple[float, float] = (9.0, 15.0)
    gauges: tuple[int, int] = (3, 6)

    def validate(self) -> None:
        """Check dial sizes, reading differences, faintness and gauge counts."""
        c2.check_range("radius_range", *self.radius_range, 18.0, 34.0)
        c2.check_range("diff_range", *self.diff_range, 1, 20)
        c2.check_range("contrast_range", *self.contrast_range, 4.0, 20.0)
        c2.check_range("gauges", *self.gauges, 2, 8)
        if not 0.0 <= self.faint_prob <= 1.0:
            raise ValueError("faint_prob must lie in [0, 1]")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        domain = c2.pick(rng, self.domains)
        scene_name, kinds, where = _GAUGE_SCENES[domain]
        w, h = c2.scene_size(rng)
        img = render.background(rng, h, w, kind=c2.pick(rng, kinds))
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
        label_glyph = float(rng.uniform(20.0, 28.0))
        for i, (label, value) in enumerate(zip(names, values)):
            radius = float(rng.uniform(*self.radius_range))
            pad = 9
            size = 2 * math.ceil(radius) + 2 * pad
            face_, italic = render.random_font(rng)
            name_patch = render.render_text(label, label_glyph, face_, 2, italic)
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

            def draw(ink_c: tuple[int, int, int], needle_c: tuple[int, int, int],
                     rim_c: tuple[int, int, int], value: float = value,
                     radius: float = radius, size: int = size,
                     face: tuple[int, int, int] | None = face,
                     plate: tuple[int, int, int] = plate) -> c2.DialRender:
                return c2.render_dial(size, radius, face, rim_c, max(1.5, radius / 12),
                                      gauge_strokes(value, radius, ink_c, needle_c), 0.0, plate,
                                      cap=needle_c)

            dial = draw(ink, needle_col, rim)
            c2.paste_patch(img, dial.rgb, (gx, by))
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
                detail = TICK_RADIUS * radius * math.radians(GAUGE_SWEEP / 20)
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
        if faint:
            steps.append(tuple(RefCall(f"c{i + 3}", "autocontrast",
                                       {"image_index": i + 1, "cutoff": 1.0}, (f"c{i + 1}",))
                               for i in range(2)))
        else:
            rng.random()  # an unused draw, kept so every seed's scene and choices stay the same
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
            capabilities=("visual_grounding", "parallelism", *(("multi_hop",) if faint else ())),
            metadata=c2.l2_metadata(self.name, domain, scene_name, ev, img, faint=faint,
                               readings=[va, vb]),
        )
