"""Deliberately broken toy families (each breaks one guarantee) for tests/test_check_family.py.

Importing this module registers them; tests wrap their use in ``m3gym.testing.registered`` so
they leave the registry as they found it.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any, ClassVar

import numpy as np

from examples.example_family import SerialPlateFamily
from m3gym.spec import AnswerSpec, RefCall, Task
from m3gym.tasks import render as R
from m3gym.tasks.checkpoint_builders import evidence_checkpoints
from m3gym.tasks.registry import FamilyConfig, register_family

DOC = SerialPlateFamily.__doc__
_COUNTER = itertools.count()


def _generate_toy(class_name: str, name: str,
                  generate: Callable[[SerialPlateFamily, np.random.Generator], Task]
                  ) -> type[SerialPlateFamily]:
    """Register a toy: the example family with ``generate`` (its docstring says what breaks)."""
    cls = type(class_name, (SerialPlateFamily,), {"__doc__": DOC, "name": name,
                                                   "generate": generate, "__module__": __name__})
    return register_family(cls)


def _counted_question(self: SerialPlateFamily, rng: np.random.Generator) -> Task:
    """A question that changes with every build (a process-global counter)."""
    task = SerialPlateFamily.generate(self, rng)
    return replace(task, question=f"{task.question} (#{next(_COUNTER)})")


def _hashed_question(self: SerialPlateFamily, rng: np.random.Generator) -> Task:
    """A question that depends on the interpreter's string-hash seed."""
    task = SerialPlateFamily.generate(self, rng)
    return replace(task, question=f"{task.question} (#{hash('plate') % 1000})")


def _wrong_corner_crop(self: SerialPlateFamily, rng: np.random.Generator) -> Task:
    """A reference crop of the wrong corner: the oracle's S and V fail."""
    task = SerialPlateFamily.generate(self, rng)
    call = RefCall("c1", "crop", {"image_index": 0, "bbox_2d": [0, 0, 60, 60], "zoom_scale": 2.0})
    return replace(task, reference=((call,),))


def _answer_twice(self: SerialPlateFamily, rng: np.random.Generator) -> Task:
    """The answer listed twice among the choices."""
    task = SerialPlateFamily.generate(self, rng)
    assert task.choices is not None
    return replace(task, choices=(task.answer.value, *task.choices[:-1]))


def _seed_ignored(self: SerialPlateFamily, rng: np.random.Generator) -> Task:
    """The same task whatever the seed (a generator of its own)."""
    return SerialPlateFamily.generate(self, np.random.default_rng(0))


def _short_mask(self: SerialPlateFamily, rng: np.random.Generator) -> Task:
    """An evidence mask one row short of its box."""
    task = SerialPlateFamily.generate(self, rng)
    ev = task.evidence[0]
    assert ev.mask is not None
    return replace(task, evidence=(replace(ev, mask=ev.mask[1:]), *task.evidence[1:]))


ToyNondeterministic = _generate_toy("ToyNondeterministic", "toy_nondeterministic",
                                    _counted_question)
ToyHashSeeded = _generate_toy("ToyHashSeeded", "toy_hash_seeded", _hashed_question)
ToyBadOracle = _generate_toy("ToyBadOracle", "toy_bad_oracle", _wrong_corner_crop)
ToyDuplicateChoices = _generate_toy("ToyDuplicateChoices", "toy_duplicate_choices", _answer_twice)
ToySeedless = _generate_toy("ToySeedless", "toy_seedless", _seed_ignored)
ToyBadMask = _generate_toy("ToyBadMask", "toy_bad_mask", _short_mask)


@register_family
class ToyMissingDoc(SerialPlateFamily):
    __doc__ = DOC.replace("    Difficulty:\n", "    Hardness:\n")
    name: ClassVar[str] = "toy_missing_doc"


@register_family
class ToyLaxValidate(SerialPlateFamily):
    __doc__ = DOC
    name: ClassVar[str] = "toy_lax_validate"

    def validate(self) -> None:
        """Accepts everything."""


@register_family
class ToyNoKnobs(SerialPlateFamily):
    __doc__ = DOC
    name: ClassVar[str] = "toy_no_knobs"

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """The base class's: not implemented."""
        return FamilyConfig.difficulty_knobs.__func__(cls, difficulty)  # type: ignore[attr-defined]


@register_family
class ToyLegible(SerialPlateFamily):
    __doc__ = DOC
    name: ClassVar[str] = "toy_legible"

    def validate(self) -> None:
        """Only the range checks (big type allowed)."""
        if not self.glyph_range[0] <= self.glyph_range[1] or \
                not self.clutter[0] <= self.clutter[1] or min(self.width, self.height) < 400:
            raise ValueError("bad ranges")

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Type big enough to read without any tool."""
        return {"glyph_range": (40.0 - 4 * difficulty, 42.0 - 4 * difficulty)}

    def generate(self, rng: np.random.Generator) -> Task:
        """Big type: the evidence is legible in the full view."""
        return SerialPlateFamily.generate(replace(self, glyph_range=(40.0, 42.0)), rng)


@register_family
@dataclass
class ToyViewLeak(SerialPlateFamily):
    # The example family before it printed every option: one code on a 1600 px photo. The glyphs
    # are under Evidence.min_view_height at view size (so the "tool needed" check passes), yet a
    # template matcher that knows the font reads the answer from the view: the view-only leak
    # probe picks it in about 8 of 10 tasks.
    __doc__ = DOC
    name: ClassVar[str] = "toy_view_leak"
    width: int = 1600
    height: int = 1200
    glyph_range: tuple[float, float] = (8.0, 10.0)

    @classmethod
    def difficulty_knobs(cls, difficulty: float) -> dict[str, Any]:
        """Smaller type and more clutter as ``difficulty`` goes from 0 to 1."""
        glyph = 10.0 - 3.0 * difficulty
        return {"glyph_range": (glyph, glyph + 1.0),
                "clutter": (round(2 + 8 * difficulty), round(4 + 12 * difficulty))}

    def generate(self, rng: np.random.Generator) -> Task:
        """One dark code on a plate, six look-alike codes as choices (none printed elsewhere)."""
        w, h = self.width, self.height
        img = R.surface(rng, h, w)
        code = R.random_code(rng)
        patch = R.render_text(code, float(rng.uniform(*self.glyph_range)))
        pw, ph = patch.size
        x, y = int(rng.integers(40, w - pw - 40)), int(rng.integers(40, h - ph - 40))
        plate = R.grow_box((x, y, x + pw, y + ph), 6, w, h)
        img[plate[1]:plate[3], plate[0]:plate[2]] = (205, 205, 200)
        placed = R.paste_text(img, patch, x, y, (30, 30, 30))
        R.add_clutter(img, rng, int(rng.integers(*self.clutter, endpoint=True)),
                      avoid=[R.grow_box(plate, 20, w, h)])
        evidence = R.region_evidence("code", img, placed.box, placed.mask, text=code,
                                     glyph_height=placed.glyph_height)
        img = R.add_sensor_noise(img, rng, 1.5, inplace=True)
        crop = R.grow_box(plate, 12, w, h)
        zoom = R.crop_zoom_for((crop[2] - crop[0], crop[3] - crop[1]), placed.glyph_height, 9.0)
        call = RefCall("c1", "crop", {"image_index": 0, "bbox_2d": R.box_to_bbox1000(crop, w, h),
                                      "zoom_scale": zoom})
        return Task(task_id="", family=self.name, level=1, domain="Science",
                    images=(R.freeze(img),),
                    question="What serial number is printed on the small plate?",
                    answer=AnswerSpec(code), reference=((call,),), evidence=(evidence,),
                    checkpoints=evidence_checkpoints("code", [call]),
                    choices=R.code_choices(rng, code, 6), capabilities=("visual_grounding",))


TOYS: tuple[type[FamilyConfig], ...] = (
    ToyNondeterministic, ToyHashSeeded, ToyBadOracle, ToyMissingDoc, ToyLaxValidate, ToyNoKnobs,
    ToyDuplicateChoices, ToyLegible, ToySeedless, ToyBadMask, ToyViewLeak,
)
ALL: tuple[type[FamilyConfig], ...] = (SerialPlateFamily, *TOYS)
"""Every family importing this module registers (the example family included): what a test
passes to ``m3gym.testing.registered`` so none of them outlives it."""
