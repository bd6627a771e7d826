"""Checks that run :mod:`m3gym.audit` on a small sample: the leak probes and tool necessity (a).

Checks 9–10 of :func:`~m3gym.testing.check_family`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from m3gym.testing.errors import _fail

if TYPE_CHECKING:
    from m3gym.audit.leaks import ProbeResult
    from m3gym.audit.tool_necessity import ShareCheck

# ------------------------------------------------------------------------------ leak probes
PROBE_TASKS: int = 24
"""Held-out tasks per leak probe in :func:`check_family` (``probes`` overrides it; 0 skips)."""

PROBE_TRAIN_PER_TASK: int = 4
"""Training tasks of the choices-only classifier per held-out task (96 for 24)."""


@dataclass(frozen=True)
class ProbeCheck:
    """One leak probe's result on a small sample and the bound it had to stay under."""

    result: ProbeResult
    """The probe's accuracy, chance level and sample size."""
    bound: float
    """The largest accuracy that passes (:func:`probe_bound`)."""

    @property
    def passes(self) -> bool:
        """Whether the accuracy stays under the bound (a probe with nothing to score passes)."""
        return self.result.n == 0 or self.result.accuracy <= self.bound + 1e-9

    @property
    def structural(self) -> bool:
        """Whether a view-only miss is structural (the tool shows nothing the view lacks)."""
        return bool(self.result.structural)

    def line(self) -> str:
        """Return one report line: probe, accuracy, n, chance, bound and verdict."""
        r = self.result
        if r.n == 0:
            return f"{r.probe} probe: n/a (the answer is not drawn / no choices)"
        verdict = "ok" if self.passes else (
            "over, structural (warning)" if self.structural else "FAIL")
        return (f"{r.probe} probe: {r.accuracy:.3f} ({r.correct}/{r.n}) against a bound of "
                f"{self.bound:.3f} (chance {r.chance:.3f}): {verdict}")


def probe_bound(chance: float, n: int, margin: float) -> float:
    """Return the largest probe accuracy that passes over ``n`` tasks at ``chance``.

    The larger of the audit's target ``chance + margin`` and its noise bound
    :func:`~m3gym.audit.leaks.binomial_upper_bound` at :data:`~m3gym.audit.leaks_cli.Z_NOISE`
    (a guesser at chance exceeds it with probability about 0.001), so a small sample does not
    fail a family for noise.
    """
    from m3gym.audit.leaks import binomial_upper_bound
    from m3gym.audit.leaks_cli import Z_NOISE

    return max(chance + margin, binomial_upper_bound(chance, n, Z_NOISE))


def run_probes(name: str, tasks: int = PROBE_TASKS,
               train_tasks: int | None = None) -> tuple[ProbeCheck, ProbeCheck]:
    """Run the choices-only and view-only probes of ``name`` on ``tasks`` held-out tasks each.

    The choices-only classifier trains on ``train_tasks`` training seeds (default
    :data:`PROBE_TRAIN_PER_TASK` ``* tasks``). Returns the two checks (choices-only, view-only).
    """
    from m3gym.audit.leaks import choices_only_probe, view_only_probe

    train = train_tasks if train_tasks is not None else PROBE_TRAIN_PER_TASK * tasks
    out = []
    for r in (choices_only_probe(name, tasks, train), view_only_probe(name, tasks)):
        out.append(ProbeCheck(r, probe_bound(r.chance, r.n, r.margin)))
    return out[0], out[1]


def check_probes(name: str, tasks: int = PROBE_TASKS) -> tuple[ProbeCheck, ProbeCheck]:
    """Raise when a leak probe beats its :func:`probe_bound` (a structural view-only miss passes).

    Returns the two checks (choices-only, view-only) for the report.
    """
    checks = run_probes(name, tasks)
    for c in checks:
        if c.passes or c.structural:
            continue
        r = c.result
        what = ("the answer can be picked from the choices' text alone" if r.probe ==
                "choices-only" else "the answer can be read from the view without a tool")
        raise _fail(name, r.probe, f"the {r.probe} probe picks the answer in {r.correct} of "
                    f"{r.n} held-out tasks ({r.accuracy:.3f}), above the bound {c.bound:.3f} "
                    f"(chance {r.chance:.3f}, n = {r.n}): {what}; "
                    f"`m3gym audit-leaks --family {name}` measures it on a larger sample")
    return checks


def check_tool_necessity(name: str, tasks: int | None = None) -> ShareCheck:
    """Raise unless the reference's tool output holds evidence the view lacks (measurement (a)).

    Measured on ``tasks`` held-out tasks (default
    :data:`~m3gym.audit.tool_necessity.CHECK_TASKS`, the sample ``KNOWN_BELOW_LINE`` was
    measured on). A family listed in :data:`~m3gym.audit.tool_necessity.KNOWN_BELOW_LINE` is
    reported (a ``known failure`` warning line), not failed.
    """
    from m3gym.audit.tool_necessity import CHECK_TASKS, share_check

    check = share_check(name, CHECK_TASKS if tasks is None else tasks)
    if check.fails:
        raise _fail(name, "tool necessity", check.line())
    return check
