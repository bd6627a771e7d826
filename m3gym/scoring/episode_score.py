"""An episode's score: every metric from its task, trace and final image state.

Computed at the episode's end, or offline from a stored trace. (It was ``m3gym.scoring.episode``;
that path still imports, with a deprecation warning.)
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from m3gym.scoring.alignment import ContentContext
from m3gym.scoring.answer import answer_is_correct
from m3gym.scoring.checkpoint_tracker import CheckpointReport, evaluate_checkpoints
from m3gym.scoring.m3 import M3Weights, score_trace
from m3gym.scoring.overthink import overthink_score
from m3gym.scoring.safety import evaluate_safety
from m3gym.scoring.taxonomy import classify_failure
from m3gym.spec import Task
from m3gym.state import ImageState
from m3gym.trace import Trace

METRIC_KEYS: tuple[str, ...] = (
    "acc", "S", "V", "V_tool", "V_true", "OT", "multi_modal", "multi_hop", "multi_threaded", "m3",
    "recall", "precision", "arg_similarity", "arg_similarity_strong", "step_coherence",
    "order_consistency", "merge_purity", "safety", "safety_violations", "failure_mode", "calls",
    "failed_calls", "rounds",
)
"""Keys of ``info["metrics"]`` at the end of every episode."""


def score_episode(
    task: Task, trace: Trace, state: ImageState, *, view_size: int = 768,
    m3_weights: Mapping[str, float] | None = None, report: CheckpointReport | None = None,
) -> dict[str, Any]:
    """Return ``{"answer_correct", "answer", "metrics", "audit"}`` for a finished episode.

    ``report`` reuses a checkpoint report computed incrementally during the episode; without it
    the checkpoints are evaluated from scratch on ``trace`` and ``state``.
    """
    correct = answer_is_correct(trace.answer, task.answer)
    if report is None:
        report = evaluate_checkpoints(task, trace, state, view_size)
    parents = {e.index: e.provenance.parent for e in state}
    weights = M3Weights(**{k: float(v) for k, v in (m3_weights or {}).items()})
    alignment, m3 = score_trace(task.reference, len(task.images), trace.steps,
                                parents=parents, weights=weights,
                                context=ContentContext.from_task(task))
    ot = overthink_score(task.reference, trace.steps)
    safety = evaluate_safety(task, trace)
    am = alignment.metrics
    metrics = {
        "acc": float(correct), "S": report.S, "V": report.V, "V_tool": report.V_tool,
        "V_true": report.V_true, "OT": ot,
        "multi_modal": m3.multi_modal, "multi_hop": m3.multi_hop,
        "multi_threaded": m3.multi_threaded, "m3": m3.total,
        "recall": am.recall, "precision": am.precision,
        "arg_similarity": am.arg_similarity, "arg_similarity_strong": am.arg_similarity_strong,
        "step_coherence": am.step_coherence, "order_consistency": am.order_consistency,
        "merge_purity": am.merge_purity,
        "safety": safety.score, "safety_violations": len(safety.violations),
        "failure_mode": classify_failure(task, trace, report, correct, ot),
        "calls": trace.num_calls, "failed_calls": trace.num_failed, "rounds": len(trace.steps),
    }
    return {
        "answer_correct": correct, "answer": trace.answer, "metrics": metrics,
        "audit": {"alignment": alignment.to_dict(), "checkpoints": report.to_dict(),
                  "safety": safety.to_dict()},
    }
