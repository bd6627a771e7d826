"""The S/V checkpoint tracker: which checkpoints the calls and artifacts of an episode passed.

Every checkpoint kind of :mod:`m3gym.spec` is decided from logged facts, never judged: the
geometry and legibility measures of :mod:`m3gym.scoring.legibility` for the visual kinds, the
logged results for the retrieval kinds.

**Exclusivity is per axis group** (the project's reading of Agentic-MME, where one step is judged
on both the strategy and the evidence axis). Checkpoints fall into three groups:

1. **S** (``crop_covers``, ``rotate_upright``, ``contrast_op``, ``global_op``, ``search_hit``,
   ``fetch``) ↔ calls: one call satisfies at most one S checkpoint;
2. **V_tool** (``v_tool``) ↔ calls: one call satisfies at most one ``v_tool`` checkpoint, in a
   matching of its own;
3. **V_true** (``v_true``) ↔ *artifacts*: a ``v_true`` passes when any artifact (an input image
   included, if the evidence is legible there) shows the evidence — no exclusivity at all, so two
   pieces of evidence visible in one crop both pass. The result names the first artifact that
   passed and the call that produced it (``None`` for an input image).

So one good crop may pass ``crop_covers`` (S), a ``v_tool`` (V) and a ``v_true`` (V) at once, yet
two S checkpoints (or two ``v_tool`` checkpoints) need two calls. Within groups 1 and 2 the
checkpoints and the successful calls form a bipartite graph (edge = "this call passes this
checkpoint on its own") and a *maximum matching* decides what passed, so the count does not
depend on checkpoint order. Each matching is kept incrementally (one augmenting-path search per
new call and group, Kuhn's algorithm), which keeps it maximum, never un-passes a passed checkpoint
(progress is monotone) and costs per step only what the new calls add. Among maximum matchings,
earlier calls keep the checkpoints they took first.

``search_hit`` passes only when the expected url ranks within the first ``max_rank`` results
(param, default :data:`DEFAULT_MAX_RANK`): a query for a near-duplicate entity often lists the
target further down, which must not count as finding it. ``v_tool`` passes when one of its
``tools`` was applied to an image containing the whole evidence and, when the call produced an
image, that image still contains it (a tool "applied to the evidence" keeps it in view).

Axis scores: ``S`` = passed S checkpoints / S checkpoints, ``V`` likewise, ``V_tool`` and
``V_true`` = share of ``v_tool`` / ``v_true`` checkpoints passed. A score over **zero**
checkpoints is reported as 1.0 (nothing was required); the counts are reported beside it so
aggregators can skip such tasks.
"""

from __future__ import annotations

import weakref
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from m3gym.scoring.legibility import (
    DEFAULT_VIEW_SIZE,
    UPRIGHT_TOLERANCE_DEG,
    EvidenceView,
    contains_box,
    evidence_orientation,
    largest_crop_share,
    measure_evidence,
    native_contrast,
    orientation_of,
    root_coverage,
    seen_glyph_height,
)
from m3gym.spec import Checkpoint, Evidence, Task
from m3gym.state import ImageEntry, ImageState
from m3gym.tools.catalogue import TOOL_ALIASES
from m3gym.trace import Trace, TraceCall
from m3gym.urls import normalize_url

GLOBAL_COVERAGE: float = 0.95
"""Share of the root image an input must show for an op on it to count as global."""

DEFAULT_MAX_RANK: int = 3
"""Default of ``search_hit``'s ``max_rank``: the expected url must be among this many results."""

CONTRAST_GAIN: float = 1.25
"""A contrast op on an image where the evidence is below legible scale counts only when it raises
the evidence's native ink contrast by at least this factor (and by :data:`MIN_CONTRAST_STEP`)."""

MIN_CONTRAST_STEP: float = 4.0
"""Smallest absolute rise of the native ink contrast, in 8-bit levels, that counts as a raise."""

MATCHED_GROUPS: tuple[str, ...] = ("S", "v_tool")
"""Checkpoint groups decided by a call ↔ checkpoint matching (one call, one checkpoint each)."""

SEARCH_ALIASES: Mapping[str, str] = TOOL_ALIASES
"""Alias → canonical name of the retrieval tools (derived from the tool catalogue)."""

SEARCH_TOOLS = ("web_search", "image_search")


# ---------------------------------------------------------------------------------------------
# report


@dataclass(frozen=True)
class CheckpointResult:
    """The outcome of one checkpoint.

    ``call_id`` is the call assigned to it (for ``v_true`` the call that produced the image, or
    ``None`` for an input image); ``image_index`` is the artifact that satisfied a ``v_true``.
    """

    checkpoint_id: str
    axis: str
    kind: str
    passed: bool
    call_id: str | None
    image_index: int | None
    reason: str
    measurements: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict."""
        return {"checkpoint_id": self.checkpoint_id, "axis": self.axis, "kind": self.kind,
                "passed": self.passed, "call_id": self.call_id, "image_index": self.image_index,
                "reason": self.reason, "measurements": dict(self.measurements)}


def _share(results: Iterable[CheckpointResult]) -> tuple[float, int]:
    items = list(results)
    if not items:
        return 1.0, 0
    return sum(r.passed for r in items) / len(items), len(items)


@dataclass(frozen=True)
class CheckpointReport:
    """Per-checkpoint outcomes and the axis scores (1.0 for an axis without checkpoints)."""

    results: tuple[CheckpointResult, ...]
    S: float
    V: float
    V_tool: float
    V_true: float
    counts: dict[str, int]

    @classmethod
    def from_results(cls, results: Iterable[CheckpointResult]) -> CheckpointReport:
        """Build a report and its axis scores from per-checkpoint results."""
        res = tuple(results)
        s, ns = _share(r for r in res if r.axis == "S")
        v, nv = _share(r for r in res if r.axis == "V")
        vt, nvt = _share(r for r in res if r.kind == "v_tool")
        vtr, nvtr = _share(r for r in res if r.kind == "v_true")
        return cls(res, s, v, vt, vtr, {"S": ns, "V": nv, "v_tool": nvt, "v_true": nvtr})

    @property
    def passed_ids(self) -> tuple[str, ...]:
        """Ids of the passed checkpoints, in checkpoint order."""
        return tuple(r.checkpoint_id for r in self.results if r.passed)

    @property
    def progress(self) -> float:
        """Fraction of all checkpoints passed (0.0 when there are none)."""
        return len(self.passed_ids) / len(self.results) if self.results else 0.0

    def result(self, checkpoint_id: str) -> CheckpointResult:
        """Return the result of checkpoint ``checkpoint_id``."""
        for r in self.results:
            if r.checkpoint_id == checkpoint_id:
                return r
        raise KeyError(checkpoint_id)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict."""
        return {"S": self.S, "V": self.V, "V_tool": self.V_tool, "V_true": self.V_true,
                "counts": dict(self.counts), "results": [r.to_dict() for r in self.results]}


# ---------------------------------------------------------------------------------------------
# incremental tracker


def result_urls(payload: Mapping[str, Any]) -> list[str]:
    """Return the normalized urls listed in a retrieval call's ``results`` payload."""
    results = payload.get("results") if isinstance(payload, Mapping) else None
    if not isinstance(results, list):
        return []
    urls = []
    for item in results:
        if isinstance(item, Mapping) and "url" in item:
            urls.append(normalize_url(item["url"]))
        elif isinstance(item, str):
            urls.append(normalize_url(item))
    return urls


def checkpoint_group(checkpoint: Checkpoint) -> str:
    """Return the exclusivity group of a checkpoint: ``"S"``, ``"v_tool"`` or ``"v_true"``."""
    if checkpoint.kind in ("v_tool", "v_true"):
        return checkpoint.kind
    return "S"


def search_max_rank(params: Mapping[str, Any]) -> int:
    """Return a ``search_hit``'s ``max_rank`` (default :data:`DEFAULT_MAX_RANK`, at least 1)."""
    value = params.get("max_rank", DEFAULT_MAX_RANK)
    if isinstance(value, bool) or not isinstance(value, int):
        return DEFAULT_MAX_RANK
    return max(1, value)


@dataclass
class _Candidate:
    key: str
    call_id: str | None
    image_index: int | None
    edges: list[int]
    detail: dict[int, dict[str, Any]]
    group: str = "S"


class CheckpointTracker:
    """Incremental checkpoint verifier: feed it new calls each step, read progress any time.

    Per step the cost is proportional to the new calls (and the new images they made): each new
    call is tested against every checkpoint once, each new image is measured once per ``v_true``
    evidence, and each group's maximum matching is extended by one augmenting-path search per new
    call (``v_true`` needs no matching: any artifact may pass it).
    """

    def __init__(self, task: Task, view_size: int = DEFAULT_VIEW_SIZE,
                 input_views: MutableMapping[tuple[Any, ...], Any] | None = None) -> None:
        self.task = task
        self.view_size = view_size
        self.input_views = input_views
        self.checkpoints: tuple[Checkpoint, ...] = tuple(task.checkpoints)
        self.groups: tuple[str, ...] = tuple(checkpoint_group(cp) for cp in self.checkpoints)
        self._evidence = {ev.id: ev for ev in task.evidence}
        self._candidates: list[_Candidate] = []
        self._match_cp: list[int | None] = [None] * len(self.checkpoints)
        self._match_cand: list[int | None] = []
        self._views: dict[tuple[int, str], EvidenceView] = {}
        self._frames: dict[tuple[str, tuple[int, int]], tuple[np.ndarray, np.ndarray]] = {}
        self._best_view: dict[int, EvidenceView] = {}
        self._seen_calls: set[str] = set()
        self._next_image = 0

    # -- feeding -------------------------------------------------------------------------------

    def observe(self, state: ImageState, calls: Iterable[TraceCall] = ()) -> list[str]:
        """Register new images without a call (inputs) and new calls; return newly passed ids.

        Calls already seen (by ``call_id``) are skipped, so the whole trace may be passed again.
        """
        before = {i for i, m in enumerate(self._match_cp) if m is not None}
        # Input images (and any image not made by a call) pass nothing: a visual checkpoint
        # needs a produced image where the evidence is measured legible.
        self._next_image = len(state)
        for call in calls:
            if call.call_id in self._seen_calls:
                continue
            self._seen_calls.add(call.call_id)
            if call.ok:
                self._add_candidate(call.call_id, call.call_id, call.output_index, state, call)
        return [self.checkpoints[i].id for i, m in enumerate(self._match_cp)
                if m is not None and i not in before]

    def _add_candidate(self, key: str, call_id: str | None, image_index: int | None,
                       state: ImageState, call: TraceCall | None) -> None:
        edges: list[int] = []
        detail: dict[int, dict[str, Any]] = {}
        for i, cp in enumerate(self.checkpoints):
            if cp.kind == "v_true":
                ok, info = self._v_true_edge(i, cp, image_index, state)
            elif call is None:
                continue
            else:
                ok, info = self._call_edge(cp, call, state)
            if ok:
                edges.append(i)
                detail[i] = info
        self._add_edges(key, call_id, image_index, edges, detail)

    def _add_edges(self, key: str, call_id: str | None, image_index: int | None,
                   edges: list[int], detail: dict[int, dict[str, Any]]) -> None:
        """Split one call's (or input image's) passing checkpoints by group and register them."""
        for group in ("S", "v_tool", "v_true"):
            mine = [i for i in edges if self.groups[i] == group]
            if mine:
                self._register(_Candidate(key, call_id, image_index, mine,
                                          {i: detail.get(i, {}) for i in mine}, group))

    def _register(self, candidate: _Candidate) -> None:
        """Add a candidate; extend its group's maximum matching, or take free ``v_true``s."""
        self._candidates.append(candidate)
        self._match_cand.append(None)
        cand = len(self._candidates) - 1
        if candidate.group not in MATCHED_GROUPS:  # v_true: no exclusivity, first artifact kept
            for cp in candidate.edges:
                if self._match_cp[cp] is None:
                    self._match_cp[cp] = cand
            return
        if candidate.edges:
            self._augment(cand, set())

    def _augment(self, cand: int, visited: set[int]) -> bool:
        # edges of a candidate stay in its group, so the search never leaves the group
        for cp in self._candidates[cand].edges:
            if cp in visited:
                continue
            visited.add(cp)
            holder = self._match_cp[cp]
            if holder is None or self._augment(holder, visited):
                self._match_cp[cp] = cand
                self._match_cand[cand] = cp
                return True
        return False

    # -- edge tests ----------------------------------------------------------------------------

    def _view(self, image_index: int, ev: Evidence, state: ImageState) -> EvidenceView:
        key = (image_index, ev.id)
        view = self._views.get(key)
        if view is None:
            view = self._measure(state[image_index], ev)
            self._views[key] = view
        return view

    def _v_true_edge(self, i: int, cp: Checkpoint, image_index: int | None,
                     state: ImageState) -> tuple[bool, dict[str, Any]]:
        ev = self._evidence.get(str(cp.params.get("evidence")))
        if ev is None or image_index is None or image_index >= len(state):
            return False, {}
        view = self._view(image_index, ev, state)
        best = self._best_view.get(i)
        if best is None or (view.stage, view.fidelity or 0.0) > (best.stage, best.fidelity or 0.0):
            self._best_view[i] = view
        return view.passed, view.to_dict()

    def _measure(self, entry: ImageEntry, ev: Evidence) -> EvidenceView:
        """Measure ``ev`` in the produced image ``entry`` (``v_true``)."""
        return measure_evidence(entry, ev, self.view_size, self._frames)

    def _native_contrast(self, entry: ImageEntry, ev: Evidence) -> float | None:
        """Return :func:`native_contrast`; input images go through the shared ``input_views``.

        An input image's measurement depends only on the task, so a caller that resets the same
        tasks again (a task pool) passes one ``input_views`` mapping to every tracker. Entries
        hold a weak reference to the task: a hit counts only for the very same task object
        (an ``id`` reused after garbage collection never matches), and the cache keeps no
        images alive.
        """
        if self.input_views is None or entry.provenance.call_id is not None:
            return native_contrast(entry, ev, self._frames)
        key = (self.task.task_id, id(self.task), entry.index, ev.id, "native_contrast")
        hit = self.input_views.get(key)
        if hit is not None and hit[0]() is self.task:
            return hit[1]
        value = native_contrast(entry, ev, self._frames)
        self.input_views[key] = (weakref.ref(self.task), value)
        return value

    def _input_entry(self, call: TraceCall, state: ImageState) -> ImageEntry | None:
        idx = call.input_index
        if idx is None:
            idx = call.arguments.get("image_index") if isinstance(call.arguments, dict) else None
        if not isinstance(idx, int) or not 0 <= idx < len(state):
            return None
        return state[idx]

    def _output_entry(self, call: TraceCall, state: ImageState) -> ImageEntry | None:
        idx = call.output_index
        if idx is None or not 0 <= idx < len(state):
            return None
        return state[idx]

    def _magnifies(self, out: ImageEntry, ev: Evidence) -> tuple[bool, float, float]:
        """Return (magnifies, share of the root shown, largest share allowed) for a crop."""
        h, w = self.task.images[ev.image].shape[:2]
        share = root_coverage(out, (h, w))
        limit = largest_crop_share(ev.area / float(h * w))
        return share <= limit + 1e-9, share, limit

    def _contrast_effect(self, src: ImageEntry, out: ImageEntry,
                         ev: Evidence) -> tuple[bool, dict[str, Any]]:
        """Return whether a contrast op on ``src`` did its job for ``ev`` (and the measures).

        It counts when ``src`` holds the evidence at a legible scale (glyphs at least
        ``min_view_height`` at view size), or when the op itself raised the evidence's native ink
        contrast by :data:`CONTRAST_GAIN` × and :data:`MIN_CONTRAST_STEP` levels.
        """
        glyph = seen_glyph_height(src, ev, self.view_size)
        info: dict[str, Any] = {"input_index": src.index, "output_index": out.index,
                                "view_glyph_height": glyph}
        if glyph >= ev.min_view_height:
            return True, info
        before = self._native_contrast(src, ev)
        after = self._native_contrast(out, ev)
        info.update(contrast_before=before, contrast_after=after)
        if before is None or after is None:
            return False, info
        return after >= max(before * CONTRAST_GAIN, before + MIN_CONTRAST_STEP), info

    def _call_edge(self, cp: Checkpoint, call: TraceCall,
                   state: ImageState) -> tuple[bool, dict[str, Any]]:
        p = cp.params
        kind = cp.kind
        ev = self._evidence.get(str(p.get("evidence"))) if "evidence" in p else None
        if kind == "crop_covers":
            out = self._output_entry(call, state)
            ok = (call.name == "crop" and ev is not None and out is not None
                  and contains_box(out, ev))
            info: dict[str, Any] = {"output_index": call.output_index}
            if ok and ev is not None and out is not None:
                ok, share, limit = self._magnifies(out, ev)
                info.update(root_share=share, max_share=limit)
            return ok, info
        if kind == "rotate_upright":
            out = self._output_entry(call, state)
            if call.name not in ("rotate", "flip") or ev is None or out is None:
                return False, {}
            if not contains_box(out, ev):
                return False, {}
            det, angle = orientation_of(out.provenance.affine[:, :2] @ evidence_orientation(ev))
            ok = det > 0.0 and abs(angle) <= UPRIGHT_TOLERANCE_DEG
            return ok, {"output_index": call.output_index, "determinant": det,
                        "angle_deg": angle}
        if kind == "contrast_op":
            src = self._input_entry(call, state)
            out = self._output_entry(call, state)
            if (call.name not in tuple(p.get("tools", ())) or ev is None or src is None
                    or out is None or not contains_box(src, ev)):
                return False, {}
            return self._contrast_effect(src, out, ev)
        if kind == "v_tool":
            # the right tool, applied to the evidence, made an image where it is legible
            src = self._input_entry(call, state)
            if (call.name not in tuple(p.get("tools", ())) or ev is None or src is None
                    or call.output_index is None or call.output_index >= len(state)
                    or not contains_box(src, ev)):
                return False, {}
            view = self._view(call.output_index, ev, state)
            return view.passed, {"input_index": src.index, "output_index": call.output_index,
                                 "legible": view.passed, "reason": view.reason}
        if kind == "global_op":
            src = self._input_entry(call, state)
            if call.name not in tuple(p.get("tools", ())) or src is None:
                return False, {}
            root = src.provenance.root
            if root >= len(self.task.images):
                return False, {}
            cover = root_coverage(src, self.task.images[root].shape)
            return cover >= GLOBAL_COVERAGE, {"input_index": src.index, "coverage": cover}
        if kind == "search_hit":
            name = SEARCH_ALIASES.get(call.name, call.name)
            if name != p.get("tool"):
                return False, {}
            urls = result_urls(call.payload)
            want = normalize_url(p.get("url", ""))
            rank = urls.index(want) + 1 if want in urls else None
            max_rank = search_max_rank(p)
            ok = rank is not None and rank <= max_rank
            return ok, {"url": p.get("url"), "rank": rank, "max_rank": max_rank}
        if kind == "fetch":
            if call.name != "fetch_webpage":
                return False, {}
            got = call.payload.get("url") if isinstance(call.payload, Mapping) else None
            if got is None and isinstance(call.arguments, dict):
                got = call.arguments.get("url")
            ok = got is not None and normalize_url(got) == normalize_url(p.get("url", ""))
            return ok, {"url": got}
        return False, {}

    # -- reading -------------------------------------------------------------------------------

    @property
    def num_passed(self) -> int:
        """Number of checkpoints passed so far."""
        return sum(m is not None for m in self._match_cp)

    @property
    def progress(self) -> float:
        """Fraction of all checkpoints passed so far (0.0 when the task has none): Φ for shaping."""
        return self.num_passed / len(self.checkpoints) if self.checkpoints else 0.0

    def report(self) -> CheckpointReport:
        """Return the report of everything observed so far."""
        results = []
        for i, cp in enumerate(self.checkpoints):
            holder = self._match_cp[i]
            if holder is not None:
                cand = self._candidates[holder]
                image = cand.image_index if cp.kind == "v_true" else None
                results.append(CheckpointResult(cp.id, cp.axis, cp.kind, True, cand.call_id,
                                                image, f"satisfied by {cand.key}",
                                                dict(cand.detail[i])))
                continue
            others = [c.key for c in self._candidates if i in c.edges]
            if others:
                what = self.groups[i]
                reason = (f"its only satisfying calls ({', '.join(others)}) were each assigned "
                          f"to another {what} checkpoint (one call satisfies at most one {what} "
                          "checkpoint)")
            elif cp.kind == "v_true" and i in self._best_view:
                reason = f"no artifact shows the evidence; best: {self._best_view[i].reason}"
            else:
                reason = "no call satisfied it"
            best = self._best_view.get(i)
            results.append(CheckpointResult(cp.id, cp.axis, cp.kind, False, None, None, reason,
                                            best.to_dict() if best is not None else {}))
        return CheckpointReport.from_results(results)


def evaluate_checkpoints(
    task: Task, trace: Trace, state: ImageState, view_size: int = DEFAULT_VIEW_SIZE
) -> CheckpointReport:
    """Return the S/V checkpoint report of a finished (or running) episode."""
    tracker = CheckpointTracker(task, view_size)
    tracker.observe(state, trace.calls)
    return tracker.report()
