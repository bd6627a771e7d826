"""Deliberately broken toy families (each breaks one guarantee) for tests/test_check_family.py.

Importing this module registers them; tests wrap their use in ``m3gym.testing.registered`` so
they leave the registry as they found it.
"""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any, ClassVar

import numpy as np

from examples.example_family import SerialPlateFamily
from m3gym.tasks.registry import FamilyConfig, register_family
from m3gym.tasks.spec import RefCall, Task

DOC = SerialPlateFamily.__doc__
_COUNTER = itertools.count()


@register_family
class ToyNondeterministic(SerialPlateFamily):
    __doc__ = DOC
    name: ClassVar[str] = "toy_nondeterministic"

    def generate(self, rng: np.random.Generator) -> Task:
        """A question that changes with every build (a process-global counter)."""
        task = super().generate(rng)
        return replace(task, question=f"{task.question} (#{next(_COUNTER)})")


@register_family
class ToyHashSeeded(SerialPlateFamily):
    __doc__ = DOC
    name: ClassVar[str] = "toy_hash_seeded"

    def generate(self, rng: np.random.Generator) -> Task:
        """A question that depends on the interpreter's string-hash seed."""
        task = super().generate(rng)
        return replace(task, question=f"{task.question} (#{hash('plate') % 1000})")


@register_family
class ToyBadOracle(SerialPlateFamily):
    __doc__ = DOC
    name: ClassVar[str] = "toy_bad_oracle"

    def generate(self, rng: np.random.Generator) -> Task:
        """A reference crop of the wrong corner: the oracle's S and V fail."""
        task = super().generate(rng)
        call = RefCall("c1", "crop", {"image_index": 0, "bbox_2d": [0, 0, 60, 60],
                                      "zoom_scale": 2.0})
        return replace(task, reference=((call,),))


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
class ToyDuplicateChoices(SerialPlateFamily):
    __doc__ = DOC
    name: ClassVar[str] = "toy_duplicate_choices"

    def generate(self, rng: np.random.Generator) -> Task:
        """The answer listed twice among the choices."""
        task = super().generate(rng)
        assert task.choices is not None
        return replace(task, choices=(task.answer.value, *task.choices[:-1]))


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
class ToySeedless(SerialPlateFamily):
    __doc__ = DOC
    name: ClassVar[str] = "toy_seedless"

    def generate(self, rng: np.random.Generator) -> Task:
        """The same task whatever the seed (a generator of its own)."""
        return super().generate(np.random.default_rng(0))


@register_family
class ToyBadMask(SerialPlateFamily):
    __doc__ = DOC
    name: ClassVar[str] = "toy_bad_mask"

    def generate(self, rng: np.random.Generator) -> Task:
        """An evidence mask one row short of its box."""
        task = super().generate(rng)
        ev = task.evidence[0]
        assert ev.mask is not None
        return replace(task, evidence=(replace(ev, mask=ev.mask[1:]), *task.evidence[1:]))


TOYS: tuple[type[FamilyConfig], ...] = (
    ToyNondeterministic, ToyHashSeeded, ToyBadOracle, ToyMissingDoc, ToyLaxValidate, ToyNoKnobs,
    ToyDuplicateChoices, ToyLegible, ToySeedless, ToyBadMask,
)
ALL: tuple[type[FamilyConfig], ...] = (SerialPlateFamily, *TOYS)
"""Every family importing this module registers (the example family included): what a test
passes to ``m3gym.testing.registered`` so none of them outlives it."""
