"""M3-Bench's trajectory metrics over the matches of an alignment.

Recall, precision, argument similarity (all and strong matches), step coherence, order
consistency and merge purity, with the definitions :mod:`m3gym.scoring.alignment` documents.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, NamedTuple


class MatchedPair(NamedTuple):
    """A reference call aligned to a predicted call (a named tuple: cheap to build)."""

    ref_id: str
    call_id: str
    sim: float
    strong: bool
    ref_step: int
    pred_step: int

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict."""
        return {"ref_id": self.ref_id, "call_id": self.call_id, "sim": self.sim,
                "strong": self.strong, "ref_step": self.ref_step, "pred_step": self.pred_step}


@dataclass(frozen=True)
class AlignmentMetrics:
    """M3-Bench's trajectory metrics, each in [0, 1], plus the counts behind them."""

    recall: float
    precision: float
    arg_similarity: float
    arg_similarity_strong: float
    step_coherence: float
    order_consistency: float
    merge_purity: float
    num_reference: int
    num_predicted: int
    num_failed: int
    num_matched: int
    num_strong: int

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict."""
        return dict(self.__dict__)




# ----------------------------------------------------------------------------- metrics


def _safe_div(n: float, d: float) -> float:
    return n / d if d else 0.0


def trajectory_metrics(matches: list[MatchedPair], ref_steps: list[int], n_pred: int,
                       n_failed: int) -> AlignmentMetrics:
    """Return M3-Bench's metrics of ``matches`` (see :mod:`m3gym.scoring.alignment`).

    ``ref_steps`` holds the number of reference calls per reference step, ``n_pred`` the issued
    predicted calls (failed ones included) and ``n_failed`` the failed ones.
    """
    n_ref = sum(ref_steps)
    n_match = len(matches)
    strong = [m.sim for m in matches if m.strong]
    if n_ref == 0:
        v = 1.0 if n_pred == 0 else 0.0
        return AlignmentMetrics(1.0, v, v, v, v, v, v, 0, n_pred, n_failed, n_match, len(strong))
    recall = n_match / n_ref
    precision = _safe_div(n_match, n_pred)
    arg_sim = recall * _safe_div(sum(m.sim for m in matches), n_match)
    arg_strong = (len(strong) / n_ref) * _safe_div(sum(strong), len(strong))

    n_steps = len(ref_steps)
    matched_per_step = [0] * n_steps
    pred_steps_of: list[set[int]] = [set() for _ in range(n_steps)]
    for m in matches:
        matched_per_step[m.ref_step] += 1
        pred_steps_of[m.ref_step].add(m.pred_step)
    coherence = 0.0
    for s in range(n_steps):
        k = len(pred_steps_of[s])
        if k and ref_steps[s]:
            cov = matched_per_step[s] / ref_steps[s]
            coherence += ref_steps[s] * cov * (1.0 - (k - 1) / k)
    coherence /= n_ref

    inversions = comparable = 0
    for i in range(n_match):
        a = matches[i]
        for j in range(i + 1, n_match):
            b = matches[j]
            if a.ref_step == b.ref_step or a.pred_step == b.pred_step:
                continue
            comparable += 1
            if (a.ref_step < b.ref_step) != (a.pred_step < b.pred_step):
                inversions += 1
    order = 1.0 - _safe_div(inversions, comparable)
    # Σ_{i<j} x_i·x_j = ((Σx)² − Σx²) / 2
    total_pairs = (n_ref * n_ref - sum(n * n for n in ref_steps)) // 2
    matched_pairs = (n_match * n_match - sum(m * m for m in matched_per_step)) // 2
    pair_cov = matched_pairs / total_pairs if total_pairs else recall
    order_consistency = order * pair_cov

    merge = (1.0 - merge_entropy(matches, n_steps)) * recall
    return AlignmentMetrics(
        recall=recall, precision=precision, arg_similarity=arg_sim,
        arg_similarity_strong=arg_strong, step_coherence=coherence,
        order_consistency=order_consistency, merge_purity=merge, num_reference=n_ref,
        num_predicted=n_pred, num_failed=n_failed, num_matched=n_match, num_strong=len(strong),
    )


def merge_entropy(matches: list[MatchedPair], n_ref_steps: int) -> float:
    """Return H(G|P) / log G_active on ``W[g, p] = Σ sim`` (0 when G_active ≤ 1)."""
    row_mass: dict[int, float] = {}
    cols: dict[int, dict[int, float]] = {}
    for m in matches:
        row_mass[m.ref_step] = row_mass.get(m.ref_step, 0.0) + m.sim
        col = cols.setdefault(m.pred_step, {})
        col[m.ref_step] = col.get(m.ref_step, 0.0) + m.sim
    g_active = sum(1 for v in row_mass.values() if v > 0)
    if g_active <= 1:
        return 0.0
    total = sum(row_mass.values())
    h = 0.0
    for p in sorted(cols):
        col = cols[p]
        s_p = sum(col.values())
        if s_p <= 0:
            continue
        h_p = -sum((w / s_p) * math.log(w / s_p) for _, w in sorted(col.items()) if w > 0)
        h += (s_p / total) * h_p
    return min(1.0, max(0.0, h / math.log(g_active)))
