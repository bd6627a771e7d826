"""Several rollouts per task (``m3gym eval --samples k``): pass@k and per-task success variance.

GRPO learns from the spread of rewards inside a group of rollouts of one task: a task whose
rollouts all fail or all succeed gives no gradient. ``--samples k`` runs ``k`` rollouts per task
(sample ``j`` gets its own reset seed, :func:`sample_seed`; sample 0 keeps the single-sample seed)
and :func:`passk_summary` reports:

- ``pass@i`` for ``i = 1..k``: the unbiased estimator ``1 − C(n−c, i) / C(n, i)`` averaged over
  tasks (``n`` scored rollouts of a task, ``c`` correct);
- per-task success rate ``p`` and variance ``p (1 − p)`` (Bernoulli), their mean, and the share of
  tasks whose rollouts are all wrong / all right (no GRPO signal).

Rollouts that did not finish (infrastructure or agent errors) are left out of ``n``; a task with
no scored rollout is listed with ``n = 0`` and excluded from the averages.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from math import comb
from typing import Any

import numpy as np


def sample_seed(base_seed: int, sample: int) -> int:
    """Return the reset seed of rollout ``sample`` of a task (sample 0 keeps ``base_seed``)."""
    if sample == 0:
        return int(base_seed)
    return int(np.random.SeedSequence([int(base_seed), int(sample)]).generate_state(1)[0])


def pass_at_k(n: int, c: int, k: int) -> float:
    """Return the unbiased pass@k of ``c`` correct among ``n`` rollouts (``k ≤ n``)."""
    if not 0 <= c <= n or not 1 <= k <= n:
        raise ValueError(f"need 0 <= c <= n and 1 <= k <= n, got n={n} c={c} k={k}")
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def task_groups(rows: Iterable[Mapping[str, Any]]) -> dict[tuple[str, str], list[bool]]:
    """Return the correctness of every scored rollout, grouped by ``(env, task_id)``."""
    groups: dict[tuple[str, str], list[bool]] = {}
    for row in rows:
        key = (str(row.get("env")), str(row.get("task_id")))
        outcomes = groups.setdefault(key, [])
        if row.get("status") == "ok":
            outcomes.append(bool(row.get("answer_correct")))
    return groups


def passk_summary(rows: Iterable[Mapping[str, Any]], k: int) -> dict[str, Any]:
    """Return pass@1..k and the per-task success statistics of multi-sample episode rows."""
    groups = task_groups(rows)
    tasks = []
    for (env, task_id), outcomes in groups.items():
        n, c = len(outcomes), sum(outcomes)
        p = c / n if n else None
        tasks.append({"env": env, "task_id": task_id, "n": n, "correct": c, "success": p,
                      "variance": None if p is None else p * (1.0 - p)})
    scored = [t for t in tasks if t["n"] > 0]
    out: dict[str, Any] = {"k": k, "tasks": len(tasks), "scored_tasks": len(scored)}
    for i in range(1, k + 1):
        vals = [pass_at_k(t["n"], t["correct"], i) for t in scored if t["n"] >= i]
        out[f"pass@{i}"] = float(np.mean(vals)) if vals else None
    if scored:
        out["mean_success_variance"] = float(np.mean([t["variance"] for t in scored]))
        out["all_wrong_share"] = sum(t["correct"] == 0 for t in scored) / len(scored)
        out["all_right_share"] = sum(t["correct"] == t["n"] for t in scored) / len(scored)
    out["per_task"] = tasks
    return out


def passk_lines(summary: Mapping[str, Any]) -> list[str]:
    """Return the human-readable lines ``m3gym eval --samples`` prints."""
    k = int(summary["k"])
    lines = [f"samples per task: {k} ({summary['scored_tasks']}/{summary['tasks']} tasks scored)"]
    lines.append("  " + "  ".join(
        f"pass@{i}={summary[f'pass@{i}']:.3f}" if summary.get(f"pass@{i}") is not None
        else f"pass@{i}=-" for i in range(1, k + 1)))
    if "mean_success_variance" in summary:
        lines.append(f"  mean per-task success variance={summary['mean_success_variance']:.4f}  "
                     f"all-wrong tasks={summary['all_wrong_share']:.1%}  "
                     f"all-right tasks={summary['all_right_share']:.1%} (no GRPO signal)")
    return lines
