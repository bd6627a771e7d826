"""Metrics computed the way the two source benchmarks compute them, beside m3gym's own.

m3gym's summary takes a plain mean of per-episode metrics and matches answers strictly. To put a
run next to the peers' leaderboards, these pure functions re-aggregate the same episodes with
the peers' rules:

* :func:`amme_metrics` — Agentic-MME's ``evaluation/eval_runs_search.py``: per episode
  ``S = passed S checkpoints / S checkpoints`` and ``V`` likewise (``None`` when the task has no
  checkpoint on that axis), ``base`` = mean of the non-``None`` axes, the efficiency penalty
  ``min(1, max(0, calls − reference_calls) · penalty_per_extra_call)`` (1 when
  ``calls > max_tool_calls > 0``) and ``PQS = base · (1 − penalty)``. The run averages S over the
  episodes that have S checkpoints, V likewise, everything else over all episodes; the final
  answer is matched with ``check_final_answer_only`` (``contains`` by default: the golden value,
  case-folded, is a substring of the answer; one- or two-digit numbers must stand as a word).
  Its overthink block is ``avg_overthink_ratio`` (mean ``calls / reference_calls``) and the
  over/under/optimal counts; the paper's ``OT = max(0, C − C_ref) / (C_ref + 1)`` is given too.
* :func:`m3bench_metrics` — M3-Bench's ``evaluate_trajectories.py``: per task recall, precision
  and the coverage-weighted argument similarity, step coherence, order consistency and merge
  purity computed from the alignment's matched pairs; the run *pools* recall and precision
  (Σ matched / Σ reference calls) and weights every other metric by the task's number of
  reference calls. m3gym's summary takes a plain episode mean instead; both are returned.

Where a peer's default is exploitable, the strict m3gym value is computed beside it:

* ``contains`` accepts a hedge: ``"Litudan Harbor or Pinus Falls"`` and a list of every choice
  both contain the golden value (``acc_amme`` counts them, ``acc_m3gym`` does not; the number of
  such episodes is ``contains_only_correct``).
* Agentic-MME's S checkpoints on web search and its V_true checks are passed by an LLM judge
  (a judge that can be talked into a pass); m3gym verifies every checkpoint exactly, so S and V
  here are m3gym's verified checkpoint outcomes aggregated Agentic-MME's way.
* Agentic-MME leaves the efficiency penalty off unless a task sets ``penalty_per_extra_call``
  (its default is 0): ``penalty_per_extra_call`` and ``max_tool_calls`` are arguments here.
* M3-Bench's order-consistency coverage is ``0/0 → 0`` for a one-step reference (a perfect replay
  scores 0 there); ``order_consistency`` follows M3-Bench, m3gym's mean (which uses recall in that
  case) is in ``m3gym_mean``.

The input is one :class:`PeerEpisode` per scored episode, built from a stored trace JSON with
:func:`peer_episode` (pure: the caller reads the files).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

AMME_MAX_TOOL_CALLS: int = 15
"""The reference harness's tool-call budget (``--max_tool_calls 15``)."""

AMME_PENALTY_PER_EXTRA_CALL: float = 0.0
"""Agentic-MME's default ``penalty_per_extra_call`` when a task sets none."""

M3BENCH_TAU_STRONG: float = 0.8
"""M3-Bench's strong-match threshold (``--tau-strong``)."""

M3BENCH_KEYS: tuple[str, ...] = (
    "recall", "precision", "avg_sim_all_cov", "avg_sim_strong_cov", "step_coherence_cov",
    "order_consistency_cov", "merge_purity_cov",
)
"""M3-Bench's per-task metrics, in its output order."""

_M3GYM_KEYS: dict[str, str] = {
    "recall": "recall", "precision": "precision", "avg_sim_all_cov": "arg_similarity",
    "avg_sim_strong_cov": "arg_similarity_strong", "step_coherence_cov": "step_coherence",
    "order_consistency_cov": "order_consistency", "merge_purity_cov": "merge_purity",
}

_FINAL_ANSWER_PATTERNS: tuple[re.Pattern[str], ...] = tuple(re.compile(p) for p in (
    r"therefore[,\s]+(?:the\s+)?answer\s+is\s+([^\.\n]+)",
    r"(?:the\s+)?answer\s+is\s+([^\.\n]+)",
    r"answer:\s*([^\.\n]+)",
    r"final\s+answer:\s*([^\.\n]+)",
))


@dataclass(frozen=True)
class PeerMatch:
    """One aligned (reference call, predicted call) pair: their steps and the similarity."""

    ref_step: int
    pred_step: int
    sim: float


@dataclass(frozen=True)
class PeerEpisode:
    """What the peers' scorers read of one scored episode.

    Attributes:
        episode_id: the run's episode id.
        level: the task level (1–3), or ``None``.
        answer: the agent's final answer (``None``: it never answered).
        accepted: the golden value followed by its accepted variants.
        match: m3gym's match rule of the answer (``exact`` or ``numeric``).
        tolerance: the numeric tolerance.
        acc: m3gym's strict answer correctness (0 or 1), or ``None`` when not recorded.
        s_passed, s_total, v_passed, v_total: checkpoint outcomes per axis.
        calls: tool calls issued (failed ones included, ``answer`` excluded).
        reference_steps: the reference's number of calls per step.
        pred_steps: rounds in which the agent issued at least one tool call.
        matches: the alignment's matched pairs.
        m3gym: m3gym's own per-episode alignment metrics (for the plain-mean comparison).
    """

    episode_id: str
    level: int | None
    answer: str | None
    accepted: tuple[str, ...]
    match: str = "exact"
    tolerance: float = 0.0
    acc: float | None = None
    s_passed: int = 0
    s_total: int = 0
    v_passed: int = 0
    v_total: int = 0
    calls: int = 0
    reference_steps: tuple[int, ...] = ()
    pred_steps: int = 0
    matches: tuple[PeerMatch, ...] = ()
    m3gym: Mapping[str, float | None] = field(default_factory=dict)

    @property
    def reference_calls(self) -> int:
        """The number of reference calls (Agentic-MME's ``reference_tool_calls``)."""
        return sum(self.reference_steps)


def _int(value: Any, default: int = 0) -> int:
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        else default


def peer_episode(trace: Mapping[str, Any]) -> PeerEpisode:
    """Return the :class:`PeerEpisode` of a stored trace JSON (``traces/<episode>.json``).

    Raises ``ValueError`` naming what is missing when ``trace`` is not a finished m3gym trace.
    """
    if trace.get("status", "ok") != "ok":
        raise ValueError(f"trace status is {trace.get('status')!r}: only finished episodes "
                         "are scored")
    task = trace.get("task")
    audit = trace.get("audit")
    if not isinstance(task, Mapping) or not isinstance(audit, Mapping):
        raise ValueError("trace has no 'task' or 'audit' object: not a finished m3gym trace")
    spec = task.get("answer") or {}
    accepted = (str(spec.get("value", "")), *(str(v) for v in spec.get("variants") or ()))
    results = (audit.get("checkpoints") or {}).get("results") or []
    passed = {ax: sum(1 for r in results if r.get("axis") == ax and r.get("passed"))
              for ax in ("S", "V")}
    total = {ax: sum(1 for r in results if r.get("axis") == ax) for ax in ("S", "V")}
    alignment = audit.get("alignment") or {}
    steps = trace.get("steps") or []
    step_calls = [c for s in steps for c in (s.get("calls") or []) if c.get("name") != "answer"]
    pred_rounds = sum(1 for s in steps if any(c.get("name") != "answer"
                                              for c in (s.get("calls") or [])))
    metrics = trace.get("metrics") or {}
    acc = metrics.get("acc")
    return PeerEpisode(
        episode_id=str(trace.get("episode_id", "")),
        level=_int(trace.get("level"), 0) or None,
        answer=None if trace.get("answer") is None else str(trace["answer"]),
        accepted=accepted, match=str(spec.get("match", "exact")),
        tolerance=float(spec.get("tolerance") or 0.0),
        acc=float(acc) if isinstance(acc, (int, float)) else None,
        s_passed=passed["S"], s_total=total["S"], v_passed=passed["V"], v_total=total["V"],
        calls=len(step_calls),
        reference_steps=tuple(len(s) for s in task.get("reference") or ()),
        pred_steps=pred_rounds,
        matches=tuple(PeerMatch(_int(m.get("ref_step")), _int(m.get("pred_step")),
                                float(m.get("sim", 0.0)))
                      for m in alignment.get("matches") or ()),
        m3gym={k: metrics.get(k) for k in _M3GYM_KEYS.values()},
    )


# ----------------------------------------------------------------------------- Agentic-MME


def amme_answer_correct(answer: str | None, golden: str, match_type: str = "contains",
                        tolerance: float = 0.0) -> bool:
    """Return Agentic-MME's ``check_final_answer_only`` verdict for one golden value.

    ``exact``: equal after stripping. ``numeric``: the whole answer parses as a float within
    ``tolerance``. ``contains`` (the default, and any other type): the golden value, case-folded,
    is a substring of the answer; a golden value of one or two digits must stand as a word in
    the answer's "answer is ..." clause, else anywhere in it. Lenient by design: ``"3 or 4"``
    contains ``"3"``.
    """
    ans = (answer or "").strip()
    golden = golden.strip()
    if match_type == "exact":
        return ans == golden
    if match_type == "numeric":
        try:
            return abs(float(ans) - float(golden)) <= tolerance
        except ValueError:
            return False
    bare = golden.replace(".", "").replace("-", "").replace("+", "")
    if match_type == "contains" and bare.isdigit() and len(golden) <= 2:
        word = re.compile(r"\b" + re.escape(golden) + r"\b")
        for pattern in _FINAL_ANSWER_PATTERNS:
            found = pattern.search(ans.lower())
            if found and word.search(found.group(1)):
                return True
        return bool(word.search(ans))
    return golden.lower() in ans.lower()


def amme_match_type(match: str) -> str:
    """Return the Agentic-MME match type m3gym's rule maps to (``numeric`` or ``contains``)."""
    return "numeric" if match == "numeric" else "contains"


def amme_episode(ep: PeerEpisode, *, penalty_per_extra_call: float = AMME_PENALTY_PER_EXTRA_CALL,
                 max_tool_calls: int = AMME_MAX_TOOL_CALLS) -> dict[str, Any]:
    """Return Agentic-MME's per-run scores of one episode (``eval_process``'s ``scores``).

    Keys: ``S``, ``V`` (``None`` without checkpoints on that axis), ``base``, ``penalty``,
    ``PQS``, ``correct`` (``check_final_answer_only`` against any accepted spelling),
    ``checkpoint_rate`` (passed / all S and V checkpoints, ``None`` without any).
    """
    s = ep.s_passed / ep.s_total if ep.s_total else None
    v = ep.v_passed / ep.v_total if ep.v_total else None
    axes = [x for x in (s, v) if x is not None]
    base = sum(axes) / len(axes) if axes else 0.0
    excess = max(0, ep.calls - ep.reference_calls)
    penalty = min(1.0, excess * penalty_per_extra_call)
    if max_tool_calls > 0 and ep.calls > max_tool_calls:
        penalty = 1.0
    mtype = amme_match_type(ep.match)
    correct = any(amme_answer_correct(ep.answer, g, mtype, ep.tolerance) for g in ep.accepted)
    n_cp = ep.s_total + ep.v_total
    return {
        "S": s, "V": v, "base": base, "penalty": penalty, "PQS": base * (1.0 - penalty),
        "correct": correct, "excess_calls": excess,
        "checkpoint_rate": (ep.s_passed + ep.v_passed) / n_cp if n_cp else None,
    }


def _mean(values: Sequence[float]) -> float | None:
    return sum(values) / len(values) if values else None


def _amme_block(episodes: Sequence[PeerEpisode], scores: Sequence[Mapping[str, Any]]
                ) -> dict[str, Any]:
    n = len(episodes)
    s_vals = [sc["S"] for sc in scores if sc["S"] is not None]
    v_vals = [sc["V"] for sc in scores if sc["V"] is not None]
    rates = [sc["checkpoint_rate"] for sc in scores]
    refs = [ep for ep in episodes if ep.reference_calls > 0]
    strict = [ep.acc for ep in episodes if ep.acc is not None]
    return {
        "total_cases": n,
        "avg_S": _mean(s_vals), "avg_V": _mean(v_vals),
        "total_s_cases": len(s_vals), "total_v_cases": len(v_vals),
        "final_answer_accuracy": sum(sc["correct"] for sc in scores) / n if n else None,
        "final_answer_correct_count": sum(sc["correct"] for sc in scores),
        "acc_m3gym": _mean(strict),
        "contains_only_correct": sum(1 for ep, sc in zip(episodes, scores, strict=True)
                                     if sc["correct"] and ep.acc == 0.0),
        "avg_PQS": _mean([sc["PQS"] for sc in scores]),
        "perfect_cases": sum(1 for sc in scores if sc["PQS"] == 1.0),
        "avg_penalty": _mean([sc["penalty"] for sc in scores]),
        "avg_tool_calls_per_case": _mean([float(ep.calls) for ep in episodes]),
        "checkpoint_pass_rate_50": sum(1 for r in rates if r is not None and r >= 0.5) / n
        if n else None,
        "checkpoint_pass_rate_80": sum(1 for r in rates if r is not None and r >= 0.8) / n
        if n else None,
        "avg_overthink_ratio": _mean([ep.calls / ep.reference_calls for ep in refs]) or 0.0,
        "cases_overthink": sum(1 for ep in refs if ep.calls > ep.reference_calls),
        "cases_underthink": sum(1 for ep in refs if ep.calls < ep.reference_calls),
        "cases_optimal": sum(1 for ep in refs if ep.calls == ep.reference_calls),
        "OT_paper": _mean([max(0, ep.calls - ep.reference_calls) / (ep.reference_calls + 1)
                           for ep in episodes]),
    }


def amme_metrics(episodes: Iterable[PeerEpisode], *,
                 penalty_per_extra_call: float = AMME_PENALTY_PER_EXTRA_CALL,
                 max_tool_calls: int = AMME_MAX_TOOL_CALLS) -> dict[str, Any]:
    """Return Agentic-MME's run scores of ``episodes``: ``overall`` and ``by_level`` blocks.

    Each block holds ``eval_runs_search.py``'s overall keys (``avg_S``, ``avg_V``,
    ``final_answer_accuracy``, ``avg_penalty``, ``checkpoint_pass_rate_50/80``,
    ``perfect_cases``, the overthink analysis...) unrounded, plus ``avg_PQS`` (computed there,
    not printed), ``OT_paper`` (the paper's overthink), ``acc_m3gym`` (m3gym's strict answer
    match) and ``contains_only_correct`` (episodes only the lenient match accepts). ``None``
    marks a mean over no episode.
    """
    eps = list(episodes)
    scores = [amme_episode(ep, penalty_per_extra_call=penalty_per_extra_call,
                           max_tool_calls=max_tool_calls) for ep in eps]
    levels = sorted({ep.level for ep in eps if ep.level is not None})
    by_level = {}
    for lv in levels:
        idx = [i for i, ep in enumerate(eps) if ep.level == lv]
        by_level[f"L{lv}"] = _amme_block([eps[i] for i in idx], [scores[i] for i in idx])
    return {"overall": _amme_block(eps, scores), "by_level": by_level,
            "settings": {"penalty_per_extra_call": penalty_per_extra_call,
                         "max_tool_calls": max_tool_calls, "answer_match": "contains"}}


# ----------------------------------------------------------------------------- M3-Bench


def _safe_div(n: float, d: float) -> float:
    return n / d if d else 0.0


def _order_error(matches: Sequence[PeerMatch]) -> float:
    inversions = total = 0
    for i, a in enumerate(matches):
        for b in matches[i + 1:]:
            if a.ref_step == b.ref_step or a.pred_step == b.pred_step:
                continue
            total += 1
            if (a.ref_step < b.ref_step) != (a.pred_step < b.pred_step):
                inversions += 1
    return _safe_div(inversions, total)


def _merge_entropy(weights: Mapping[tuple[int, int], float]) -> float:
    rows: dict[int, float] = {}
    cols: dict[int, dict[int, float]] = {}
    for (g, p), w in weights.items():
        rows[g] = rows.get(g, 0.0) + w
        cols.setdefault(p, {})[g] = cols.setdefault(p, {}).get(g, 0.0) + w
    g_active = sum(1 for w in rows.values() if w > 0)
    if g_active <= 1:
        return 0.0
    col_mass = {p: sum(c.values()) for p, c in cols.items()}
    total = sum(m for m in col_mass.values() if m > 0)
    if total <= 0:
        return 0.0
    h = 0.0
    for p, column in cols.items():
        mass = col_mass[p]
        if mass <= 0:
            continue
        qs = [w / mass for w in column.values() if w > 0]
        h += (mass / total) * -sum(q * math.log(q + 1e-12) for q in qs)
    return h / math.log(g_active)


def m3bench_task_metrics(ep: PeerEpisode, tau_strong: float = M3BENCH_TAU_STRONG
                         ) -> dict[str, Any]:
    """Return ``compute_metrics_for_id``'s metrics of one episode (M3-Bench's formulas).

    The matched pairs are m3gym's alignment (typed, content-gated similarity) where M3-Bench
    embeds the flattened JSON arguments; everything after the matching follows its code.
    """
    n_steps = ep.reference_steps
    total_gt, total_pred, matches = sum(n_steps), ep.calls, ep.matches
    if total_gt == 0 and total_pred == 0:
        return {"total_gt_calls": 0, "total_pred_calls": 0, "matched": 0, "recall": 1.0,
                "precision": 1.0, "avg_sim_all_cov": 0.0, "avg_sim_strong_cov": 0.0,
                "step_coherence_cov": 1.0, "order_consistency_cov": 1.0,
                "merge_purity_cov": 1.0, "rounds": ep.pred_steps}
    matched = len(matches)
    recall = _safe_div(matched, total_gt)
    sims = [m.sim for m in matches]
    strong = [s for s in sims if s >= tau_strong]
    avg_all = sum(sims) / len(sims) if sims else 0.0
    avg_strong = sum(strong) / len(strong) if strong else 0.0
    by_step: dict[int, set[int]] = {}
    counts = [0] * len(n_steps)
    weights: dict[tuple[int, int], float] = {}
    for m in matches:
        by_step.setdefault(m.ref_step, set()).add(m.pred_step)
        if 0 <= m.ref_step < len(n_steps):
            counts[m.ref_step] += 1
        weights[(m.ref_step, m.pred_step)] = weights.get((m.ref_step, m.pred_step), 0.0) + m.sim
    coherence = 0.0
    for s, n in enumerate(n_steps):
        if n <= 0:
            continue
        k = len(by_step.get(s, ()))
        frag = (k - 1) / k if k > 1 else 0.0
        coherence += (counts[s] / n) * (1.0 - frag) * n
    coherence /= float(sum(n_steps)) or 1.0
    gt_pairs = sum(n_steps[i] * n_steps[j] for i in range(len(n_steps))
                   for j in range(i + 1, len(n_steps)))
    matched_pairs = sum(counts[i] * counts[j] for i in range(len(counts))
                        for j in range(i + 1, len(counts)))
    order = max(0.0, min(1.0, 1.0 - _order_error(matches))) * _safe_div(matched_pairs, gt_pairs)
    purity = max(0.0, min(1.0, 1.0 - _merge_entropy(weights))) * recall
    return {
        "total_gt_calls": total_gt, "total_pred_calls": total_pred, "matched": matched,
        "recall": recall, "precision": _safe_div(matched, total_pred),
        "avg_sim_all_cov": recall * avg_all,
        "avg_sim_strong_cov": _safe_div(len(strong), total_gt) * avg_strong,
        "step_coherence_cov": coherence, "order_consistency_cov": order,
        "merge_purity_cov": purity, "rounds": ep.pred_steps,
    }


def m3bench_metrics(episodes: Iterable[PeerEpisode], tau_strong: float = M3BENCH_TAU_STRONG
                    ) -> dict[str, Any]:
    """Return M3-Bench's aggregate over ``episodes`` (``aggregate_metrics`` + rounds and calls).

    ``recall`` and ``precision`` are pooled over all calls; every other metric is the mean of
    the per-task values weighted by the task's reference calls; ``avg_Rounds`` and
    ``avg_tool_calls`` are plain means over tasks. ``plain_mean`` holds the unweighted episode
    mean of the same per-task values, and ``m3gym_mean`` the mean of m3gym's own per-episode
    metrics (what ``m3gym eval`` reports), keyed by M3-Bench's names.
    """
    eps = list(episodes)
    per = [m3bench_task_metrics(ep, tau_strong) for ep in eps]
    gt = sum(x["total_gt_calls"] for x in per)
    pred = sum(x["total_pred_calls"] for x in per)
    matched = sum(x["matched"] for x in per)
    out: dict[str, Any] = {
        "num_ids": len(per), "total_gt_calls": gt, "total_pred_calls": pred, "matched": matched,
        "recall": _safe_div(matched, gt), "precision": _safe_div(matched, pred),
    }
    for key in M3BENCH_KEYS[2:]:
        out[key] = _safe_div(sum(x[key] * x["total_gt_calls"] for x in per), gt)
    out["avg_Rounds"] = _safe_div(sum(x["rounds"] for x in per), len(per))
    out["avg_tool_calls"] = _safe_div(pred, len(per))
    out["plain_mean"] = {k: _mean([x[k] for x in per]) for k in M3BENCH_KEYS}
    m3 = {}
    for key, mkey in _M3GYM_KEYS.items():
        vals = [float(v) for v in (ep.m3gym.get(mkey) for ep in eps)
                if isinstance(v, (int, float))]
        m3[key] = _mean(vals)
    out["m3gym_mean"] = m3
    out["settings"] = {"tau_strong": tau_strong, "similarity": "m3gym typed (content-gated)"}
    return out


PEER_METRICS: tuple[str, ...] = ("m3gym", "amme", "m3bench")
"""Metric families ``m3gym eval --metrics`` accepts."""


def parse_metric_names(values: Iterable[str] | None) -> tuple[str, ...]:
    """Return the metric families of repeatable / comma-separated ``--metrics`` values.

    Default (nothing given): ``("m3gym",)``. Raises ``ValueError`` naming an unknown family.
    """
    names: list[str] = []
    for value in values or ():
        for part in str(value).split(","):
            name = part.strip().lower()
            if not name:
                continue
            if name not in PEER_METRICS:
                raise ValueError(f"--metrics {name!r}: unknown metric family; choose from "
                                 f"{', '.join(PEER_METRICS)} (repeatable or comma-separated)")
            if name not in names:
                names.append(name)
    return tuple(names) or ("m3gym",)
