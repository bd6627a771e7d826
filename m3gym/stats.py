"""Level statistics: reference calls, checkpoints, evidence size and domain mix over many seeds.

Compare with Agentic-MME (reference calls / checkpoints per task: L1 1.21 / 2.89, L2 2.42 / 4.64,
L3 4.07 / 6.67; over 40% of tasks with evidence under 10% of the image area).
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np

from m3gym.tasks.registry import family_names, make_task

AGENTIC_MME = {1: (1.21, 2.89), 2: (2.42, 4.64), 3: (4.07, 6.67)}
"""Agentic-MME's reference calls and checkpoints per task, by level."""


@dataclass
class LevelStats:
    """Statistics of one level (or family) over a number of generated tasks."""

    name: str
    tasks: int = 0
    calls: list[int] = field(default_factory=list)
    checkpoints: list[int] = field(default_factory=list)
    small_evidence: int = 0
    parallel: int = 0
    reset_ms: list[float] = field(default_factory=list)
    domains: Counter = field(default_factory=Counter)

    def row(self) -> dict[str, object]:
        """Return the aggregated numbers as a dict."""
        n = max(1, self.tasks)
        return {
            "name": self.name, "tasks": self.tasks,
            "ref_calls": float(np.mean(self.calls)) if self.calls else 0.0,
            "checkpoints": float(np.mean(self.checkpoints)) if self.checkpoints else 0.0,
            "evidence_lt_10pct": self.small_evidence / n,
            "parallel_share": self.parallel / n,
            "reset_ms_median": float(np.median(self.reset_ms)) if self.reset_ms else 0.0,
            "domains": dict(sorted(self.domains.items())),
        }


def level_stats(
    level: int, seeds: int = 100, start: int = 0
) -> tuple[LevelStats, list[LevelStats]]:
    """Return the level's statistics and one per family, over ``seeds`` tasks per family."""
    total = LevelStats(f"L{level}")
    per_family = []
    for family in family_names(level):
        fam = LevelStats(family)
        for seed in range(start, start + seeds):
            t0 = time.perf_counter()
            task = make_task(family, seed)
            elapsed = (time.perf_counter() - t0) * 1000
            for acc in (fam, total):
                acc.tasks += 1
                acc.calls.append(len(task.reference_calls))
                acc.checkpoints.append(len(task.checkpoints))
                acc.small_evidence += int(task.evidence_area_fraction < 0.10)
                acc.parallel += int(any(len(step) > 1 for step in task.reference))
                acc.reset_ms.append(elapsed)
                acc.domains[task.domain] += 1
        per_family.append(fam)
    return total, per_family


def stats_markdown(seeds: int = 100) -> str:
    """Return the level-statistics table of docs/benchmarks.md (generated, never typed)."""
    lines = [
        "| level / family | tasks | ref. calls | checkpoints | evidence < 10% | parallel steps "
        "| reset ms (median) | domains |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for level in (1, 2, 3):
        if not family_names(level):
            continue
        total, fams = level_stats(level, seeds)
        for st in (total, *fams):
            r = st.row()
            ref = AGENTIC_MME[level]
            name = f"**{r['name']}** (Agentic-MME {ref[0]} / {ref[1]})" if st is total \
                else f"&nbsp;&nbsp;{r['name']}"
            doms = ", ".join(f"{k} {v}" for k, v in r["domains"].items())
            lines.append(
                f"| {name} | {r['tasks']} | {r['ref_calls']:.2f} | {r['checkpoints']:.2f} "
                f"| {r['evidence_lt_10pct']:.0%} | {r['parallel_share']:.0%} "
                f"| {r['reset_ms_median']:.1f} | {doms} |")
    return "\n".join(lines)


BOOTSTRAP_RESAMPLES: int = 2000
"""Resamples of :func:`bootstrap_mean_interval` (the report's 95 % intervals use this many)."""


def bootstrap_mean_interval(
    values: Sequence[float], rng: np.random.Generator, level: float = 0.95,
    resamples: int = BOOTSTRAP_RESAMPLES, groups: Sequence[object] | None = None,
) -> tuple[float, float]:
    """Return the percentile-bootstrap ``level`` interval ``(lo, hi)`` of the mean of ``values``.

    Episodes are resampled with replacement ``resamples`` times with ``rng`` (a fixed seed gives
    a fixed interval). With ``groups`` (one label per value, e.g. the task id when a task has
    several rollouts) whole groups are resampled, so correlated rollouts do not narrow the
    interval; each resample's mean is then its values' total over its values' count. All-equal
    values (or a single one) give a zero-width interval at that value.
    """
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be in (0, 1), got {level}")
    if resamples < 1:
        raise ValueError(f"resamples must be at least 1, got {resamples}")
    arr = np.asarray(values, dtype=float)
    if arr.ndim != 1 or len(arr) == 0:
        raise ValueError("bootstrap needs a non-empty 1-D sequence of values")
    if not np.all(np.isfinite(arr)):
        raise ValueError("bootstrap values must be finite numbers")
    if groups is None:
        sums, counts = arr, np.ones(len(arr))
    else:
        if len(groups) != len(arr):
            raise ValueError(f"groups has {len(groups)} labels for {len(arr)} values")
        labels = {g: i for i, g in enumerate(dict.fromkeys(groups))}
        codes = np.fromiter((labels[g] for g in groups), dtype=np.int64, count=len(arr))
        sums = np.bincount(codes, weights=arr, minlength=len(labels))
        counts = np.bincount(codes, minlength=len(labels)).astype(float)
    if np.all(arr == arr[0]):
        return float(arr[0]), float(arr[0])
    picks = rng.integers(0, len(sums), size=(resamples, len(sums)))
    means = sums[picks].sum(axis=1) / counts[picks].sum(axis=1)
    tail = (1.0 - level) / 2.0
    lo, hi = np.quantile(means, (tail, 1.0 - tail))
    return float(lo), float(hi)
