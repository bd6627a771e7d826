"""M3-Bench style alignment of a predicted trajectory to the reference trajectory.

Calls are bucketed by exact tool name; inside each bucket the Hungarian algorithm
(:func:`scipy.optimize.linear_sum_assignment`) assigns reference to predicted calls on the cost
``1 − sim``. Pairs with ``sim < τ_weak`` (0.6) are dropped; ``sim ≥ τ_strong`` (0.8) marks a
strong match. ``sim`` is a *typed* argument similarity (M3-Bench embeds the flattened JSON with a
sentence encoder; m3gym knows every argument's type and compares exactly).

**Content gate.** Every tool declares its *content arguments* with a typed similarity (the
``content`` facet of its :class:`~m3gym.tools.base.ToolSpec`, read through
:data:`~m3gym.tools.catalogue.CONTENT_ARGUMENTS`). A pair whose content similarity is below
``τ_weak`` on any content argument scores 0 — it never matches, whatever its other arguments —
so a call with the wrong content counts like a missing call (and an extra one). The content
similarities (given the task's :class:`ContentContext`: input sizes, evidence boxes and texts,
search targets):

* ``bbox_2d`` (crop) — both boxes (0–1000 of their source image) are mapped to the root image's
  normalized coordinates through the crop / flip chain that produced the source image
  (photometric ops and ``resize`` keep the frame; through any other geometric op the raw boxes
  are compared; boxes on different roots score 0). The similarity is 1 when the predicted box
  covers every evidence box that the reference box covers *and* magnifies it (keeps at most
  :data:`~m3gym.scoring.legibility.MAGNIFY_MAX_SHARE` of the root's area, or twice the
  evidence's share when that is larger: :func:`~m3gym.scoring.legibility.largest_crop_share`);
  otherwise the IoU of the two boxes.
* ``angle`` (rotate) — 1 when both rotations give the same upright result (equal modulo 360
  within :data:`~m3gym.scoring.legibility.UPRIGHT_TOLERANCE_DEG`), else 0.
* ``direction`` (flip) — exact.
* ``image_index`` of photometric ops and ``image_search`` — 1 for the same input image, 1 when the
  predicted image was produced by the call aligned to the reference producer, else 0 (resolved by
  iterating the assignment until the image similarities no longer change).
* ``query`` (web_search) — 1 when the call's results rank one of the task's search targets for
  that tool within its ``max_rank``; otherwise the token F1 with the reference query or an
  evidence text, whichever is higher.
* ``url`` (fetch_webpage, download_image) — exact after normalization (scheme, ``www.`` and
  trailing slash dropped, case folded).

Other arguments use the M3-Bench-style typed similarity: numbers ``1 − |a − b| / max(|a|, |b|,
eps)`` clipped to [0, 1], enums and bools exact, urls normalized, other text rapidfuzz's
``token_set_ratio / 100``, ``image_index`` as above (for crop and rotate, where the box or angle
carries the content, a different source image lowers the mean but does not gate), ``label``
ignored.

The similarity of a pair that passes the gate is the mean over the union of both calls' argument
keys (``label`` excluded; a ``None`` value counts as absent, so validated arguments with unset
optional fields compare like omitted ones). A key present on one side only is compared with the
tool's default value for it (:data:`DEFAULT_ARGUMENTS`, derived from the catalogue, or the
``defaults`` passed in); without a default it scores 0. No keys at all gives 1.

**Failed calls.** Only successful predicted calls (``ok``) take part in the assignment; every
issued tool call, failed ones included, counts in precision's denominator (a record named
``answer`` is not a tool call and is skipped everywhere).

**Steps.** A predicted call's step is the position of its step in ``trace_steps``; a reference
call's step is the position of its step in the reference. Calls are sorted by ``call_id`` within
a step, so permuting calls inside a step changes nothing. Ties in the assignment go to the
pairing closest to the diagonal (k-th reference call of a tool ↔ k-th predicted call of it).

**Metrics** (M3-Bench's coverage-weighted definitions):

* recall = matched / #reference calls; precision = matched / #predicted calls.
* argument similarity = recall × mean sim over matches; strong = (strong matches / #reference
  calls) × mean sim over strong matches.
* step coherence = Σ_s n_s·cov_s·(1 − frag_s) / Σ_s n_s, with ``frag_s = (k − 1)/k`` for the
  ``k`` distinct predicted steps the matched calls of reference step ``s`` land in.
* order consistency = (1 − inversion rate) × pair coverage. The inversion rate is over matched
  pairs in different reference steps *and* different predicted steps (0 when no such pair);
  pair coverage = Σ_{i<j} m_i·m_j / Σ_{i<j} n_i·n_j over reference steps (m = matched counts).
  Deviation: when the reference has no cross-step pairs (one step), M3-Bench's coverage is 0/0 →
  0, which would score a perfect replay 0; m3gym uses recall instead.
* merge purity = (1 − H(G|P) / log G_active) × recall on the step matrix ``W[g, p] = Σ sim``;
  with ``G_active ≤ 1`` the entropy term is 0 (purity = recall).

An empty reference gives recall 1 and every other metric 1 if nothing was called, else 0.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import numpy as np
from scipy.optimize import linear_sum_assignment

from m3gym.geometry import box_area, box_iou  # noqa: F401 - box_area re-exported
from m3gym.scoring.alignment_metrics import AlignmentMetrics, MatchedPair, trajectory_metrics
from m3gym.scoring.similarity import (  # noqa: F401 - some only re-exported (were defined here)
    ANGLE_KEY,
    BOX_KEY,
    IGNORED_KEYS,
    URL_KEYS,
    ContentContext,
    EvidenceRegion,
    Frame,
    SearchTarget,
    angle_similarity,
    as_box,
    box_in_root,
    child_frame,
    crop_content_similarity,
    defaults_from_registry,
    is_number,
    number_similarity,
    query_similarity,
    query_tokens,
    root_frame,
    text_similarity,
    upright_angle_similarity,
    value_similarity,
)
from m3gym.spec import RefCall
from m3gym.tools.base import ContentSimilarity
from m3gym.tools.catalogue import (
    CONTENT_ARGUMENTS,
    DEFAULT_ARGUMENTS,
    NON_IMAGE_TOOLS,
    canonical_tool,
)
from m3gym.trace import TraceCall
from m3gym.urls import normalize_url

TAU_WEAK: float = 0.6
"""Pairs with a lower similarity are not matched (M3-Bench's τ_weak)."""

TAU_STRONG: float = 0.8
"""Matches with at least this similarity are strong (M3-Bench's τ_strong)."""

IMAGE_KEY = "image_index"

_MISSING = object()
_TIE_EPS = 1e-9
_BLOCKED_COST = 1e6


# ----------------------------------------------------------------------------- results


@dataclass(frozen=True)
class Alignment:
    """The alignment of a trace to a reference, with its metrics (an audit record)."""

    matches: tuple[MatchedPair, ...]
    unmatched_reference: tuple[str, ...]
    unmatched_predicted: tuple[str, ...]
    metrics: AlignmentMetrics
    tau_weak: float = TAU_WEAK
    tau_strong: float = TAU_STRONG
    _by_ref: dict[str, MatchedPair] = field(default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        if not self._by_ref:
            self._by_ref.update({m.ref_id: m for m in self.matches})

    def match_for(self, ref_id: str) -> MatchedPair | None:
        """Return the match of reference call ``ref_id``, or ``None`` when it is unmatched."""
        return self._by_ref.get(ref_id)

    @property
    def ref_to_call(self) -> dict[str, str]:
        """Map reference call id → aligned predicted call id."""
        return {m.ref_id: m.call_id for m in self.matches}

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict."""
        return {
            "matches": [m.to_dict() for m in self.matches],
            "unmatched_reference": list(self.unmatched_reference),
            "unmatched_predicted": list(self.unmatched_predicted),
            "metrics": self.metrics.to_dict(),
            "tau_weak": self.tau_weak,
            "tau_strong": self.tau_strong,
        }


# ----------------------------------------------------------------------------- internals


class _Call(NamedTuple):
    """A call on either side, reduced to what alignment reads."""

    key: str  # ref id or call_id
    name: str
    args: Mapping[str, Any]
    step: int
    in_image: int | None
    out_image: int | None
    payload: Mapping[str, Any] | None = None


def _image_arg(args: Mapping[str, Any]) -> int | None:
    v = args.get(IMAGE_KEY)
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _reference_calls(reference: Sequence[Sequence[RefCall]], n_inputs: int) -> list[_Call]:
    calls: list[_Call] = []
    next_image = n_inputs
    for s, step in enumerate(reference):
        for rc in step:
            out = None
            if rc.name not in NON_IMAGE_TOOLS:
                out, next_image = next_image, next_image + 1
            calls.append(_Call(rc.id, rc.name, rc.arguments, s, _image_arg(rc.arguments), out))
    return calls


def _predicted_calls(trace_steps: Sequence[Sequence[TraceCall]]) -> tuple[list[_Call], int, int]:
    """Return the ok calls (sorted by call_id within a step), #issued and #failed calls."""
    calls: list[_Call] = []
    issued = failed = 0
    for s, step in enumerate(trace_steps):
        tool_calls = [c for c in step if c.name != "answer"]
        issued += len(tool_calls)
        ok = [c for c in tool_calls if c.ok]
        failed += len(tool_calls) - len(ok)
        ok.sort(key=lambda c: c.call_id)
        for c in ok:
            in_image = c.input_index if c.input_index is not None else _image_arg(c.arguments)
            calls.append(_Call(c.call_id, c.name, c.arguments, s, in_image, c.output_index,
                               c.payload))
    return calls, issued, failed


def _frames(calls: list[_Call], n_inputs: int) -> dict[int, Frame | None]:
    """Return image index → frame for inputs and every image the calls produce (issue order)."""
    frames: dict[int, Frame | None] = {i: root_frame(("input", i)) for i in range(n_inputs)}
    for c in calls:
        if c.out_image is None:
            continue
        if c.name == "download_image":
            url = c.args.get("url")
            frames[c.out_image] = (root_frame(("url", normalize_url(url)))
                                   if isinstance(url, str) else None)
        elif c.in_image is not None:
            frames[c.out_image] = child_frame(frames.get(c.in_image), c.name, c.args)
        else:
            frames[c.out_image] = None
    return frames


def _box_similarity(ref: _Call, pred: _Call, ref_frames: dict, pred_frames: dict,
                    a: Any, b: Any, context: ContentContext) -> float:
    ba, bb = as_box(a), as_box(b)
    if ba is None or bb is None:
        return 0.0
    fa = ref_frames.get(ref.in_image) if ref.in_image is not None else None
    fb = pred_frames.get(pred.in_image) if pred.in_image is not None else None
    if fa is None or fb is None:
        return box_iou(ba, bb)
    if fa[0] != fb[0]:
        return 0.0
    root = fa[0]
    regions = ([e for e in context.evidence if e.image == root[1]]
               if root[0] == "input" else [])
    return crop_content_similarity(box_in_root(fa, ba), box_in_root(fb, bb), regions)


def _found_target(name: str, payload: Mapping[str, Any] | None,
                  context: ContentContext) -> bool:
    """Return whether a search call's results rank one of the task's targets for its tool."""
    results = payload.get("results") if isinstance(payload, Mapping) else None
    if not isinstance(results, list):
        return False
    urls = [normalize_url(r["url"]) for r in results
            if isinstance(r, Mapping) and isinstance(r.get("url"), str)]
    tool = canonical_tool(name)
    return any(t.tool == tool and t.url in urls[:t.max_rank] for t in context.search_targets)


def _query_content(pred: _Call, a: Any, b: Any, context: ContentContext) -> float:
    if not isinstance(b, str):
        return 0.0
    if _found_target(pred.name, pred.payload, context):
        return 1.0
    best = query_similarity(a, b) if isinstance(a, str) else 0.0
    for e in context.evidence:
        if e.text:
            best = max(best, query_similarity(e.text, b))
    return best


def _content_similarity(kind: ContentSimilarity, ref: _Call, pred: _Call, a: Any, b: Any,
                        frames: tuple[dict, dict], context: ContentContext) -> float:
    """Return the typed content similarity of one argument (``image`` is handled apart)."""
    if kind == "box":
        return _box_similarity(ref, pred, frames[0], frames[1], a, b, context)
    if kind == "upright_angle":
        if is_number(a) and is_number(b):
            return upright_angle_similarity(float(a), float(b))
        return 0.0
    if kind == "query":
        return _query_content(pred, a, b, context)
    if kind == "url":
        if isinstance(a, str) and isinstance(b, str):
            return 1.0 if normalize_url(a) == normalize_url(b) else 0.0
        return 0.0
    if isinstance(a, str) and isinstance(b, str):  # exact
        return 1.0 if a.strip().casefold() == b.strip().casefold() else 0.0
    return 1.0 if type(a) is type(b) and a == b else 0.0


@dataclass
class _Bucket:
    ref_rows: list[int]
    pred_cols: list[int]
    static: list[list[float]]  # summed similarity of the keys that do not depend on alignment
    count: list[list[int]]  # number of keys compared
    gate: list[list[bool]]  # the static content arguments pass
    # (row, col, reference producer index, predicted producer index or -1, gates) for image
    # keys that refer to produced images: their similarity depends on the alignment of the
    # producers; ``gates`` when the image is a content argument of the tool.
    dynamic: list[tuple[int, int, int, int, bool]]


def _pair_parts(ref: _Call, pred: _Call, defaults: Mapping[str, Any],
                content: Mapping[str, ContentSimilarity], frames: tuple[dict, dict],
                n_inputs: int, ref_producer: dict[int, int], pred_producer: dict[int, int],
                context: ContentContext
                ) -> tuple[float, int, bool, tuple[int, int, bool] | None]:
    """Return (static similarity sum, #keys, content gate, dynamic image dependency)."""
    ra, pa = ref.args, pred.args
    keys = sorted(({k for k, v in ra.items() if v is not None}
                   | {k for k, v in pa.items() if v is not None}) - IGNORED_KEYS)
    total = 0.0
    gate = True
    dynamic = None
    for k in keys:
        a = ra.get(k)
        b = pa.get(k)
        if a is None:
            a = defaults.get(k, _MISSING)
        if b is None:
            b = defaults.get(k, _MISSING)
        kind = content.get(k)
        if a is _MISSING or b is _MISSING:
            gate = gate and kind is None
            continue
        if k == IMAGE_KEY:
            if not (is_number(a) and is_number(b)):
                v = value_similarity(k, a, b)
            else:
                producer = ref_producer.get(int(a))
                if producer is not None:
                    dynamic = (producer, pred_producer.get(int(b), -1), kind is not None)
                    continue
                v = 1.0 if a == b and (a < n_inputs or b not in pred_producer) else 0.0
        elif kind is not None:
            v = _content_similarity(kind, ref, pred, a, b, frames, context)
        elif type(a) is type(b) and a == b:
            v = 1.0  # fast path: equal values of one type score 1 under every rule
        else:
            v = value_similarity(k, a, b)
        if kind is not None and v < TAU_WEAK:
            gate = False
        total += v
    return total, len(keys), gate, dynamic


_BRUTE_FORCE_LIMIT = 120  # injective maps enumerated in pure Python below this count


def _assign(sim: list[list[float]], tau_weak: float) -> list[tuple[int, int]]:
    """Return accepted (row, col) pairs of the min-cost assignment on ``1 − sim``.

    Pairs under ``tau_weak`` are blocked (cost 1e6, as in M3-Bench) and dropped afterwards. Ties
    go to the pairing closest to the diagonal (the k-th reference call of a tool with the k-th
    predicted call of it): the tie cost ``eps·(c − r)²`` sums to ``Σc² + Σr² − 2Σrc``, which
    prefers early rows and columns and, by the rearrangement inequality, order-preserving pairs.
    Small buckets are solved exactly by enumeration (the same optimum as the Hungarian
    algorithm, without numpy overhead); larger ones with
    :func:`scipy.optimize.linear_sum_assignment`.
    """
    n_rows, n_cols = len(sim), len(sim[0])
    if n_rows == 1 and n_cols == 1:
        return [(0, 0)] if sim[0][0] >= tau_weak else []
    cost = [[(1.0 - v + _TIE_EPS * (c - r) * (c - r)) if v >= tau_weak else _BLOCKED_COST
             for c, v in enumerate(row)] for r, row in enumerate(sim)]
    if n_rows == 1:
        row = cost[0]
        pairs = [(0, min(range(n_cols), key=row.__getitem__))]
    elif n_cols == 1:
        pairs = [(min(range(n_rows), key=lambda r: cost[r][0]), 0)]
    elif math.perm(max(n_rows, n_cols), min(n_rows, n_cols)) <= _BRUTE_FORCE_LIMIT:
        pairs = _enumerate_assignment(cost, n_rows, n_cols)
    else:
        rows, cols = linear_sum_assignment(np.asarray(cost))
        pairs = [(int(r), int(c)) for r, c in zip(rows, cols)]
    return [(r, c) for r, c in pairs if sim[r][c] >= tau_weak]


def _enumerate_assignment(cost: list[list[float]], n_rows: int,
                          n_cols: int) -> list[tuple[int, int]]:
    best: tuple[int, ...] = ()
    best_cost = math.inf
    if n_rows <= n_cols:
        for perm in itertools.permutations(range(n_cols), n_rows):
            total = sum(cost[r][c] for r, c in enumerate(perm))
            if total < best_cost:
                best, best_cost = perm, total
        return list(enumerate(best))
    for perm in itertools.permutations(range(n_rows), n_cols):
        total = sum(cost[r][c] for c, r in enumerate(perm))
        if total < best_cost:
            best, best_cost = perm, total
    return sorted((r, c) for c, r in enumerate(best))


def _bucket_similarity(b: _Bucket, match: dict[int, int]) -> list[list[float]]:
    total = [row[:] for row in b.static]
    gate = [row[:] for row in b.gate]
    for r, c, ref_prod, pred_prod, gates in b.dynamic:
        if pred_prod >= 0 and match.get(ref_prod) == pred_prod:
            total[r][c] += 1.0
        elif gates:
            gate[r][c] = False
    return [[(t / n if n else 1.0) if ok else 0.0 for t, n, ok in zip(trow, nrow, grow)]
            for trow, nrow, grow in zip(total, b.count, gate)]


# ----------------------------------------------------------------------------- public entry


def align(
    task_reference: Sequence[Sequence[RefCall]],
    n_inputs: int,
    trace_steps: Sequence[Sequence[TraceCall]],
    *,
    tau_weak: float = TAU_WEAK,
    tau_strong: float = TAU_STRONG,
    defaults: Mapping[str, Mapping[str, Any]] | None = None,
    context: ContentContext | None = None,
) -> Alignment:
    """Align ``trace_steps`` to ``task_reference`` and compute M3-Bench's metrics.

    Args:
        task_reference: the reference steps (``Task.reference``).
        n_inputs: number of input images (``len(task.images)``).
        trace_steps: the predicted steps (``Trace.steps``).
        tau_weak: pairs with a lower similarity are not matched.
        tau_strong: matches with at least this similarity are strong.
        defaults: ``{tool: {arg: default}}`` for keys one side omits; :data:`DEFAULT_ARGUMENTS`
            when ``None``.
        context: the task's :class:`ContentContext` (evidence boxes and texts, search
            targets) for the content similarities; ``ContentContext()`` when ``None``.
    """
    defaults = DEFAULT_ARGUMENTS if defaults is None else defaults
    context = ContentContext() if context is None else context
    refs = _reference_calls(task_reference, n_inputs)
    preds, n_issued, n_failed = _predicted_calls(trace_steps)
    ref_producer = {c.out_image: i for i, c in enumerate(refs) if c.out_image is not None}
    pred_producer = {c.out_image: j for j, c in enumerate(preds) if c.out_image is not None}
    # Frames are only read to compare boxes, which needs a box on the reference side.
    has_boxes = any(BOX_KEY in c.args for c in refs)
    frames = (_frames(refs, n_inputs), _frames(preds, n_inputs)) if has_boxes else ({}, {})

    pred_by_name: dict[str, list[int]] = {}
    for j, c in enumerate(preds):
        pred_by_name.setdefault(c.name, []).append(j)
    ref_by_name: dict[str, list[int]] = {}
    for i, c in enumerate(refs):
        ref_by_name.setdefault(c.name, []).append(i)

    buckets: list[_Bucket] = []
    for name, rows in ref_by_name.items():
        cols = pred_by_name.get(name)
        if not cols:
            continue
        tool_defaults = defaults.get(name, {})
        content = CONTENT_ARGUMENTS.get(name, {})
        static: list[list[float]] = []
        count: list[list[int]] = []
        gate: list[list[bool]] = []
        dynamic: list[tuple[int, int, int, int, bool]] = []
        for r, i in enumerate(rows):
            srow, crow, grow = [], [], []
            for c, j in enumerate(cols):
                total, n_keys, ok, dyn = _pair_parts(refs[i], preds[j], tool_defaults, content,
                                                     frames, n_inputs, ref_producer,
                                                     pred_producer, context)
                srow.append(total)
                crow.append(n_keys)
                grow.append(ok)
                if dyn is not None:
                    dynamic.append((r, c, dyn[0], dyn[1], dyn[2]))
            static.append(srow)
            count.append(crow)
            gate.append(grow)
        buckets.append(_Bucket(rows, cols, static, count, gate, dynamic))

    # Iterate until no bucket's image similarities change: a bucket is re-solved only when the
    # alignment of a producer its image keys refer to changed.
    match: dict[int, int] = {}
    results: list[list[tuple[int, int, float]] | None] = [None] * len(buckets)
    states: list[tuple[bool, ...]] = [()] * len(buckets)
    for _ in range(len(refs) + 2):
        changed = False
        for k, b in enumerate(buckets):
            state = tuple(pp >= 0 and match.get(rp) == pp for _, _, rp, pp, _ in b.dynamic)
            if results[k] is not None and state == states[k]:
                continue
            states[k] = state
            sim = _bucket_similarity(b, match)
            results[k] = [(b.ref_rows[r], b.pred_cols[c], sim[r][c])
                          for r, c in _assign(sim, tau_weak)]
            changed = True
        if not changed:
            break
        match = {i: j for res in results if res for i, j, _ in res}
    accepted = [t for res in results if res for t in res]

    accepted.sort()
    pairs = [
        MatchedPair(refs[i].key, preds[j].key, s, s >= tau_strong, refs[i].step, preds[j].step)
        for i, j, s in accepted
    ]
    used_pred = {preds[j].key for j in match.values()}
    ref_step_sizes = [len(step) for step in task_reference]
    metrics = trajectory_metrics(pairs, ref_step_sizes, n_issued, n_failed)
    unmatched_ref = tuple(c.key for i, c in enumerate(refs) if i not in match)
    unmatched_pred = tuple(
        cid for step in trace_steps
        for cid in sorted(c.call_id for c in step
                          if c.name != "answer" and (not c.ok or c.call_id not in used_pred))
    )
    return Alignment(tuple(pairs), unmatched_ref, unmatched_pred, metrics, tau_weak, tau_strong)
