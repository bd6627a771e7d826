"""The M3 score: multi-modal tool selection, multi-hop data flow, multi-threaded parallelism.

Computed from an :class:`~m3gym.scoring.alignment.Alignment` of the trace to the reference:

* **multi_modal** — F1 of the alignment's recall and precision (the right tools, not too many).
* **multi_hop** — share of reference dependency edges ``u → v`` (``v.depends_on`` holds ``u``)
  that the matched predicted calls respect *as data flow*. For an image edge (in the reference,
  ``v``'s input image is ``u``'s output or derives from it) the predicted ``v`` must read an
  image that derives from the predicted ``u``'s output (image lineage). For any other edge
  (search → fetch, crop → search with the text read) the predicted ``v`` must be issued in a
  later step than the predicted ``u`` (after ``u``'s result was seen). An edge with an unmatched
  endpoint fails. No edges → no term.
* **multi_threaded** — share of reference parallel groups (steps with ≥ 2 calls) whose calls are
  all matched and were all issued in one predicted step. No such group → no term.

``M3`` is the weighted mean over the terms that exist (weights renormalized over them). If every
existing term has weight 0 the total is 0 — never a free 1.0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from m3gym.scoring.alignment import NON_IMAGE_TOOLS, Alignment, ContentContext, align
from m3gym.spec import RefCall
from m3gym.trace import TraceCall

Parents = Mapping[int, int | None] | Sequence[int | None]


@dataclass(frozen=True)
class M3Weights:
    """Weights of the three M3 terms (non-negative, finite)."""

    multi_modal: float = 1.0
    multi_hop: float = 1.0
    multi_threaded: float = 1.0

    def __post_init__(self) -> None:
        for name in ("multi_modal", "multi_hop", "multi_threaded"):
            w = getattr(self, name)
            if not (isinstance(w, (int, float)) and math.isfinite(w) and w >= 0):
                raise ValueError(f"M3 weight {name} must be a finite number >= 0, got {w!r}")


@dataclass(frozen=True)
class M3Score:
    """The M3 terms (``None`` when a term does not exist for the task), counts and total."""

    multi_modal: float
    multi_hop: float | None
    multi_threaded: float | None
    total: float
    hop_edges: int
    hop_passed: int
    parallel_groups: int
    parallel_passed: int
    weights: M3Weights = M3Weights()

    @property
    def components(self) -> dict[str, float]:
        """The terms that exist, by name."""
        out = {"multi_modal": self.multi_modal}
        if self.multi_hop is not None:
            out["multi_hop"] = self.multi_hop
        if self.multi_threaded is not None:
            out["multi_threaded"] = self.multi_threaded
        return out

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict."""
        return {
            "multi_modal": self.multi_modal, "multi_hop": self.multi_hop,
            "multi_threaded": self.multi_threaded, "total": self.total,
            "exists": {"multi_modal": True, "multi_hop": self.multi_hop is not None,
                       "multi_threaded": self.multi_threaded is not None},
            "hop_edges": self.hop_edges, "hop_passed": self.hop_passed,
            "parallel_groups": self.parallel_groups, "parallel_passed": self.parallel_passed,
            "weights": dict(self.weights.__dict__),
        }


def f1(recall: float, precision: float) -> float:
    """Return the harmonic mean of recall and precision (0 when both are 0)."""
    s = recall + precision
    return 2.0 * recall * precision / s if s > 0 else 0.0


def parents_from_trace(trace_steps: Sequence[Sequence[TraceCall]]) -> dict[int, int | None]:
    """Return image index → parent index for every image a successful call produced.

    A call's parent is the image it read (``input_index``); ``download_image`` makes a root.
    """
    out: dict[int, int | None] = {}
    for step in trace_steps:
        for c in step:
            if c.ok and c.output_index is not None:
                out[c.output_index] = None if c.name == "download_image" else c.input_index
    return out


def _parent_of(parents: Parents, index: int) -> int | None:
    if isinstance(parents, Mapping):
        return parents.get(index)
    return parents[index] if 0 <= index < len(parents) else None


def descends_from(parents: Parents, index: int, ancestor: int) -> bool:
    """Return whether image ``index`` is ``ancestor`` or derives from it through ``parents``."""
    current: int | None = index
    for _ in range(len(parents) + 1):
        if current is None:
            return False
        if current == ancestor:
            return True
        current = _parent_of(parents, current)
    return False


def _reference_images(
    reference: Sequence[Sequence[RefCall]], n_inputs: int
) -> tuple[dict[str, int | None], dict[int, int | None]]:
    """Return ref id → output image index, and the reference's image parents."""
    outputs: dict[str, int | None] = {}
    parents: dict[int, int | None] = {}
    next_image = n_inputs
    for step in reference:
        for rc in step:
            if rc.name in NON_IMAGE_TOOLS:
                outputs[rc.id] = None
                continue
            outputs[rc.id] = next_image
            src = rc.arguments.get("image_index")
            ok_src = isinstance(src, int) and not isinstance(src, bool)
            parents[next_image] = src if ok_src and rc.name != "download_image" else None
            next_image += 1
    return outputs, parents


def _ref_input(rc: RefCall) -> int | None:
    v = rc.arguments.get("image_index")
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def multi_hop_counts(
    task_reference: Sequence[Sequence[RefCall]],
    n_inputs: int,
    trace_steps: Sequence[Sequence[TraceCall]],
    alignment: Alignment,
    parents: Parents | None = None,
) -> tuple[int, int]:
    """Return (#reference dependency edges, #edges the matched calls respect as data flow)."""
    ref_by_id = {rc.id: rc for step in task_reference for rc in step}
    ref_out, ref_parents = _reference_images(task_reference, n_inputs)
    pred_parents = parents_from_trace(trace_steps) if parents is None else parents
    calls: dict[str, tuple[int, TraceCall]] = {
        c.call_id: (s, c) for s, step in enumerate(trace_steps) for c in step
    }
    edges = passed = 0
    for step in task_reference:
        for v in step:
            for u_id in v.depends_on:
                if u_id not in ref_by_id:
                    raise ValueError(f"reference call {v.id!r} depends on unknown id {u_id!r}")
                edges += 1
                mu, mv = alignment.match_for(u_id), alignment.match_for(v.id)
                if mu is None or mv is None:
                    continue
                su, cu = calls[mu.call_id]
                sv, cv = calls[mv.call_id]
                u_img, v_in = ref_out[u_id], _ref_input(v)
                if u_img is not None and v_in is not None and descends_from(ref_parents, v_in,
                                                                            u_img):
                    ok = (cu.output_index is not None and cv.input_index is not None
                          and descends_from(pred_parents, cv.input_index, cu.output_index))
                else:
                    ok = sv > su
                passed += int(ok)
    return edges, passed


def multi_threaded_counts(
    task_reference: Sequence[Sequence[RefCall]], alignment: Alignment
) -> tuple[int, int]:
    """Return (#parallel reference groups, #groups fully matched within one predicted step)."""
    groups = passed = 0
    for step in task_reference:
        if len(step) < 2:
            continue
        groups += 1
        matches = [alignment.match_for(rc.id) for rc in step]
        if all(m is not None for m in matches) and len({m.pred_step for m in matches}) == 1:
            passed += 1
    return groups, passed


def m3_score(
    task_reference: Sequence[Sequence[RefCall]],
    n_inputs: int,
    trace_steps: Sequence[Sequence[TraceCall]],
    alignment: Alignment,
    *,
    parents: Parents | None = None,
    weights: M3Weights | None = None,
) -> M3Score:
    """Return the M3 score of a trace given its alignment to the reference.

    Args:
        task_reference: the reference steps (``Task.reference``).
        n_inputs: number of input images.
        trace_steps: the predicted steps (``Trace.steps``).
        alignment: :func:`~m3gym.scoring.alignment.align`'s result for the same inputs.
        parents: predicted image lineage, index → parent index (e.g. ``ImageState`` provenance);
            derived from the trace when ``None``.
        weights: term weights; equal when ``None``.
    """
    weights = weights or M3Weights()
    mm = f1(alignment.metrics.recall, alignment.metrics.precision)
    edges, hop_ok = multi_hop_counts(task_reference, n_inputs, trace_steps, alignment, parents)
    groups, par_ok = multi_threaded_counts(task_reference, alignment)
    hop = hop_ok / edges if edges else None
    thr = par_ok / groups if groups else None
    terms = [(mm, weights.multi_modal), (hop, weights.multi_hop), (thr, weights.multi_threaded)]
    wsum = sum(w for v, w in terms if v is not None)
    total = sum(v * w for v, w in terms if v is not None) / wsum if wsum > 0 else 0.0
    return M3Score(mm, hop, thr, total, edges, hop_ok, groups, par_ok, weights)


def score_trace(
    task_reference: Sequence[Sequence[RefCall]],
    n_inputs: int,
    trace_steps: Sequence[Sequence[TraceCall]],
    *,
    parents: Parents | None = None,
    weights: M3Weights | None = None,
    context: ContentContext | None = None,
) -> tuple[Alignment, M3Score]:
    """Align the trace and return the alignment with its M3 score.

    ``context`` (:meth:`ContentContext.from_task`) lets the content gate judge crop boxes by the
    evidence they cover and searches by the pages they find.
    """
    alignment = align(task_reference, n_inputs, trace_steps, context=context)
    return alignment, m3_score(task_reference, n_inputs, trace_steps, alignment,
                               parents=parents, weights=weights)
