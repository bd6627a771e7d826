"""clock_reading: read a small, tilted analog clock (one zoomed crop, read as it hangs)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.spec import AnswerSpec, Evidence, Task
from m3gym.tasks import render
from m3gym.tasks.checkpoint_builders import evidence_checkpoints
from m3gym.tasks.families import _scene_common as c2
from m3gym.tasks.registry import FamilyConfig, register_family


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
    """Return the ticks and hands of a clock showing ``hour:minute`` (dial radius ``radius``).

    Fine strokes, so that the detail the time is read from is what the view merges: 60 long
    hairline minute ticks (0.74-0.92 r, ``radius / 36`` wide, 2.5-3 px apart), hour ticks
    ``radius / 14`` wide from 0.72 r, a hour hand ``radius / 14`` and a minute hand
    ``radius / 24`` wide (at least 1 px).
    """
    strokes = []
    for k in range(60):
        major = k % 5 == 0
        strokes.append(c2.Stroke(6.0 * k, 0.72 if major else 0.74, 0.92,
                                 max(1.0, radius / (14 if major else 36)), ink))
    strokes.append(c2.Stroke(30.0 * (hour % 12) + 0.5 * minute, -0.10, 0.50,
                             max(1.5, radius / 14), hand))
    strokes.append(c2.Stroke(6.0 * minute, -0.12, 0.86, max(1.0, radius / 24), hand))
    return strokes


_CLOCK_SCENES: dict[str, tuple[str, tuple[str, ...], str]] = {
    "Life": ("kitchen_wall", ("brick", "paper", "wood", "fabric"), "wall clock"),
    "Science": ("lab_wall", ("noise", "gradient", "paper"), "lab clock"),
}


@register_family
@dataclass
class ClockReadingFamily(FamilyConfig):
    """Read the time on a small, tilted analog clock (one zoomed crop; read as it hangs).

    Scene:
        A kitchen or lab wall (long side ``scene_long``, 1800-2048 px) with clutter and
        distractor labels, and one small wall clock (``radius_range`` px radius, 60 hairline
        minute ticks, thicker hour ticks, thin hour and minute hands, a red triangle at
        12 o'clock) hanging tilted.
    Question:
        "What time does the small <clock> in the <position> part of the image show? ... Answer
        as H:MM (12-hour)." — six times to choose from (typical misreadings: a tick off, five or
        ten minutes off, the hour off by one, the hands swapped).
    Why a tool is needed:
        The minute ticks are 2.5-3 px apart and ``radius / 36`` wide, the hands 1.4-3 px wide:
        at view size (longest side 768, a 0.375-0.43 shrink) ticks are about 1 px apart and
        merge into a grey ring, and the hands into faint smudges, so the exact minute cannot
        be read without a zoomed crop. Measured (``m3gym audit-tools``): the crop's share of
        detail the view lacks is about 0.42 (flat and photo), against 0.30 for the former
        thicker strokes.
    What it trains:
        Finding a small dial, zooming it, and reading it in its own frame: the red marker gives
        12 o'clock, whatever the tilt. A rotation adds no information (it only resamples
        pixels the crop already shows), so the reference has none and no checkpoint pays for
        one (``v_true`` counts the dial legible at any tilt; a policy that still turns it
        upright spends a call).
    Reference trajectory:
        One crop of the dial, zoomed so a minute tick spacing is legible (1 hop).
    Checkpoints:
        ``s_crop_clock`` (a crop contains and magnifies the dial), ``v_tool_clock`` (crop on a
        region holding it), ``v_true_clock`` (an artifact shows the dial legibly).
    Difficulty:
        ``radius_range`` (40–44 px at 0 → 32–35 px at 1), ``tilt_range`` (15–40° → 120–180°),
        ``quarter_prob`` (0.5 → 0: axis-aligned turns are the easiest) and ``clutter`` (2–5 →
        14–20 clutter shapes on the wall).
    Config:
        ``radius_range`` (px, within 32–44: zoom 5 must resolve the minute ticks),
        ``tilt_range`` (degrees, within 15–180), ``quarter_prob`` ([0, 1]), ``clutter``
        (shapes, within 0–30), ``scene_long`` (px, within 1400–2048).
    """

    name: ClassVar[str] = "clock_reading"
    photo_scenes: ClassVar[bool] = True
    level: ClassVar[int] = 2
    domains: ClassVar[tuple[str, ...]] = ("Life", "Science")
    description: ClassVar[str] = "zoom into a small tilted clock and read it as it hangs"

    radius_range: tuple[float, float] = (33.0, 44.0)
    tilt_range: tuple[float, float] = (25.0, 155.0)
    quarter_prob: float = 0.3
    clutter: tuple[int, int] = (8, 15)
    scene_long: tuple[int, int] = (1800, 2048)

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Return dial size, tilt and clutter for ``difficulty`` (0 easiest)."""
        return {
            "radius_range": c2.lerp_range(difficulty, (40.0, 44.0), (32.0, 35.0)),
            "tilt_range": c2.lerp_range(difficulty, (15.0, 40.0), (120.0, 180.0)),
            "quarter_prob": c2.lerp(difficulty, 0.5, 0.0),
            "clutter": c2.lerp_range(difficulty, (2, 5), (14, 20), integer=True),
        }

    def validate(self) -> None:
        """Check the dial size (zoom 5 must resolve minute ticks), tilt and clutter."""
        c2.check_range("radius_range", *self.radius_range, 32.0, 44.0)
        c2.check_range("tilt_range", *self.tilt_range, 15.0, 180.0)
        c2.check_range("clutter", *self.clutter, 0, 30)
        c2.check_range("scene_long", *self.scene_long, 1400, 2048)
        if not 0.0 <= self.quarter_prob <= 1.0:
            raise ValueError("quarter_prob must lie in [0, 1]")

    def generate(self, rng: np.random.Generator) -> Task:
        """Build one task."""
        domain = c2.pick(rng, self.domains)
        scene_name, kinds, noun = _CLOCK_SCENES[domain]
        w, h = c2.scene_size(rng, self.scene_long)
        img = render.surface(rng, h, w, kind=c2.pick(rng, kinds))
        hour, minute = int(rng.integers(1, 13)), int(rng.integers(60))
        if rng.random() < self.quarter_prob:
            angle = float(rng.choice([90.0, 180.0, -90.0]))
        else:
            angle = float(rng.uniform(*self.tilt_range)) * (1.0 if rng.random() < 0.5 else -1.0)
        radius = float(rng.uniform(*self.radius_range))
        size = 2 * math.ceil(radius) + 6
        decoration = c2.decorate(img, rng, self.clutter, (2, 5))
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
                              wall, marker=(0.0, render.NAMED_COLORS["red"]), cap=hand,
                              bezel=float(rng.uniform(0.35, 0.5)))
        # the clock hangs off the wall: a soft shadow below and to the right of it
        c2.drop_shadow(img, (x + size / 2.0, y + size / 2.0), radius,
                       (radius * 0.06, radius * 0.1), radius * 0.06, float(rng.uniform(0.3, 0.45)))
        a = c2.disk_alpha(size, radius)[..., None]
        region = img[y:y + size, x:x + size].astype(np.float32)
        img[y:y + size, x:x + size] = (region * (1 - a) + dial.rgb.astype(np.float32) * a
                                       + 0.5).astype(np.uint8)
        clean = img[y:y + size, x:x + size].copy()
        img = c2.degrade(img, rng)

        detail = 2.0 * math.pi * c2.TICK_RADIUS * radius / 60.0
        ev = render.region_evidence("clock", clean, box, dial.mask, text=None,
                                    glyph_height=detail, clean_is_region=True)
        # the dial is read as it hangs (its red 12 o'clock marker gives the orientation): the
        # evidence is the dial as it appears, so a zoomed crop shows it without a rotation
        ev = Evidence(id=ev.id, image=0, box=ev.box, glyph_height=ev.glyph_height,
                      clean=ev.clean, mask=ev.mask)
        steps = ((c2.crop_call("c1", 0, box, w, h, detail),),)
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
            capabilities=("visual_grounding",),
            metadata=c2.l2_metadata(self.name, domain, scene_name, (ev,), img, tilt=angle,
                               radius=radius),
        )


# ClockReading: the class's name before every family class was called <Name>Family
__getattr__ = renamed_names(
    __name__, {"ClockReading": ("ClockReadingFamily", lambda: ClockReadingFamily)})
