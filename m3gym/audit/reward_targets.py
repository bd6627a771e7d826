"""The reward audit's targets: ``blind<=random+5``, ``heuristic>blind`` and ``oracle``.

:func:`check_targets` checks an :class:`~m3gym.audit.reward_outcomes.EnvAudit` against them
(:mod:`m3gym.audit.reward_audit` states each target), with an optional ``z × SE`` allowance.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from functools import cache

import numpy as np

from m3gym.audit.reward_outcomes import EnvAudit
from m3gym.audit.reward_policies import is_blind, preset_spec
from m3gym.reward import load_reward_config

BLIND_MARGIN = 5.0
"""Points of the oracle's return a blind policy may earn above the random agent."""

HEURISTIC_EXEMPT_ENVS: frozenset[str] = frozenset({"M3Bench-Classic"})
"""Envs where ``heuristic>blind`` is not checked: the issue sets it per benchmark level, and the
heuristic (OCR) agent has no plan for the classic suite's single-digit glyph tasks."""


@dataclass(frozen=True)
class TargetCheck:
    """One target of one audit: its name, the policy it concerns, pass/fail and the numbers."""

    target: str
    policy: str
    passed: bool
    detail: str


def _paired(diff: np.ndarray, z: float) -> tuple[float, float]:
    """Return the mean of ``diff`` and the allowance ``z × SE`` (0 for one episode or z = 0)."""
    mean = float(diff.mean())
    if z == 0.0 or len(diff) < 2:
        return mean, 0.0
    return mean, z * float(diff.std(ddof=1)) / math.sqrt(len(diff))


@cache
def pays_process_credit(preset: str) -> bool:
    """Return whether ``preset`` can pay a positive reward besides the answer term.

    The strictly potential-based shaping telescopes to 0, so only the terminal ``m3`` and
    ``process`` terms and a kept checkpoint bonus (``progress_terminal: on_correct``) can.
    """
    cfg = load_reward_config(preset_spec(preset))
    return cfg.m3 > 0 or cfg.process > 0 or (cfg.progress > 0
                                              and cfg.progress_terminal == "on_correct")


def random_floor(audit: EnvAudit) -> tuple[str, np.ndarray]:
    """Return the random floor: the random agent or ``answer_now``, whichever earns more.

    Both answer a uniformly random choice; the random agent also makes random calls, which the
    penalty terms may charge. Measuring blind policies against the higher of the two keeps the
    target about profit from blind *calls*, not about the random agent's penalties. Returned as
    the policy's name and its per-episode %-of-oracle returns.
    """
    best = max(("random", "answer_now"), key=lambda n: audit.results[n].returns().mean())
    return best, audit.percent(audit.results[best].returns())


def check_targets(audit: EnvAudit, z: float = 0.0,
                  margin: float = BLIND_MARGIN) -> list[TargetCheck]:
    """Return the target checks of one audit (see the module docstring)."""
    checks: list[TargetCheck] = []
    oracle = audit.results["oracle"]
    bad = [f"{k}={oracle.mean(k):.3f}" for k in ("acc", "S", "V", "m3")
           if abs(oracle.mean(k) - 1.0) > 1e-9]
    if oracle.mean("OT") > 1e-9:
        bad.append(f"OT={oracle.mean('OT'):.3f}")
    checks.append(TargetCheck("oracle", "oracle", not bad,
                              "Acc=S=V=M3=1, OT=0" if not bad else ", ".join(bad)))
    if audit.oracle_return <= 0:
        checks.append(TargetCheck("oracle_return>0", "oracle", False,
                                  f"oracle mean return {audit.oracle_return:.3f}"))
        return checks
    floor_name, floor = random_floor(audit)
    heur = audit.results.get("heuristic")
    if audit.env_id in HEURISTIC_EXEMPT_ENVS:
        heur = None  # the heuristic agent has no plan for the classic suite's glyph tasks
    for name, res in audit.results.items():
        if not is_blind(name):
            continue
        pct = audit.percent(res.returns())
        mean, allow = _paired(pct - floor, z)
        checks.append(TargetCheck(
            f"blind<=random+{margin:g}", name, mean <= margin + allow,
            f"{pct.mean():.1f}% vs random floor {floor.mean():.1f}% ({floor_name}): "
            f"{mean:+.1f} points" + (f", allowance {allow:.1f}" if allow else "")))
        if heur is None:
            continue
        h, b = heur.non_answer(), res.non_answer()
        if not pays_process_credit(audit.preset):
            checks.append(TargetCheck("heuristic>blind", name, True,
                                      "n/a: the preset pays no credit besides the answer "
                                      "(its other terms are penalties; its shaping nets 0)"))
            continue
        mean, allow = _paired(h - b, z)
        checks.append(TargetCheck(
            "heuristic>blind", name, mean > -allow,
            f"non-answer heuristic {h.mean():.3f} vs {b.mean():.3f}"
            + (f" (allowance {allow:.3f})" if allow else "")))
    return checks
