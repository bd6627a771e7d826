"""``FamilyReport``: what :func:`~m3gym.testing.check_family` found besides failures."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from m3gym.testing.audit_checks import ProbeCheck

if TYPE_CHECKING:
    from m3gym.audit.tool_necessity import ShareCheck

FROZEN_SPLIT: str = "test"
"""The frozen split whose membership :func:`check_family` reports."""


def frozen_split_levels(name: str, split: str = FROZEN_SPLIT) -> tuple[int, ...]:
    """Return the levels of the frozen ``split`` whose task list holds family ``name``."""
    from m3gym.eval.splits import LEVELS, split_entries

    return tuple(lv for lv in LEVELS if any(e.family == name for e in split_entries(split, lv)))


@dataclass(frozen=True)
class FamilyReport:
    """What :func:`check_family` found besides failures: leak probes and frozen-split membership."""

    family: str
    probes: tuple[ProbeCheck, ...]
    """The leak probes run (empty when ``probes=0``)."""
    frozen_levels: tuple[int, ...]
    """Levels of the frozen test split that hold the family (empty: in none)."""
    skipped: tuple[str, ...] = ()
    """Checks not run, each with its reason (e.g. the monotone check where Tesseract is absent)."""
    necessity: ShareCheck | None = None
    """Tool necessity (a) (:func:`m3gym.audit.tool_necessity.share_check`); None when not run."""

    @property
    def warnings(self) -> list[str]:
        """Warning lines: not in the frozen split, a structural view-only miss."""
        out = []
        if not self.frozen_levels:
            out.append(f"warning: {self.family!r} is in no level of the frozen {FROZEN_SPLIT!r} "
                       "split (m3gym/data/splits/test.json), so frozen evaluations never draw "
                       "it; a new family joins it only with a new manifest version")
        out += [f"warning: {c.line()}" for c in self.probes if not c.passes and c.structural]
        if self.necessity is not None and self.necessity.known is not None:
            out.append(f"warning: {self.necessity.line()}")
        return out

    def lines(self) -> list[str]:
        """Return the report's lines: membership, each probe, then the warnings."""
        levels = ", ".join(map(str, self.frozen_levels))
        member = (f"frozen {FROZEN_SPLIT!r} split: level {levels}" if self.frozen_levels
                  else f"frozen {FROZEN_SPLIT!r} split: not in any level")
        head = (f"{self.family}: every check run passed ({len(self.skipped)} skipped)"
                if self.skipped else f"{self.family}: every check passed")
        return [head, member, *(c.line() for c in self.probes),
                *(f"skipped: {s}" for s in self.skipped), *self.warnings]

    def __str__(self) -> str:
        return "\n".join(self.lines())
