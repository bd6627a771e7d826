"""Tool necessity, reader-independent: how much of a reference tool's output the view can't explain.

Measurement (a) of docs/tool-necessity.md. For a task, the reference's calls are replayed twice
through the real tools (:func:`replay_calls`):

* on the task's images as they are (Image 0 at full resolution): what the tool shows;
* on each image's reset view upsampled back to full size (:func:`upsampled_view`, bicubic): all
  an agent can compute from the view alone.

Both replays make images of the same shapes with the same provenance affines. For each evidence
item and each reference artifact that holds it (its box mapped through the artifact's affine
lies at least half inside the artifact), both artifacts are shown as the agent sees them
(:func:`~m3gym.view.to_view` at the family's view size) and the mapped box is cut out of both.
The evidence's **unexplained share** there is :func:`unexplained_share`: ``1 - R^2`` of the best
per-channel affine fit ``real ≈ a · replay + b`` (least squares), pooled over the channels::

    share = Σ_c ‖real_c - (a_c replay_c + b_c)‖² / Σ_c ‖real_c - mean(real_c)‖²

clipped to ``[0, 1]`` (0 where the real region is flat: nothing to explain). An evidence's share is
the largest over the artifacts that hold it (the tool only has to show it once), 0 where none
does; the **task's share** is the smallest over its evidence items (every item must need the
tool); the **family's share** the median over held-out tasks (:func:`family_necessity`).

**Per-op ablation** (:func:`op_ablations`): each visual call of the reference is dropped in turn
(a call that read its output reads its input instead) and the share is measured again. The op is
needed when the share falls under :data:`SHARE_LINE`, or when it breaks a later tool of the chain
(:data:`CHAIN_TOOLS`: a reverse image search whose first hit changes or fails without the op; run
on the task's offline world). Both are measured, never argued.

A family passes (a) when its share is at least :data:`SHARE_LINE` or one of its ops is measured
to be needed by the chain. :data:`KNOWN_BELOW_LINE` lists families known to fail it (empty since
benchmark v4, whose redesign brought every family above the line); ``check_family`` reports them
as known failures and fails any other family below the line (:func:`share_check`).
"""

from __future__ import annotations

import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import cv2
import numpy as np

from m3gym.spec import Evidence, RefCall, Task
from m3gym.state import ImageState
from m3gym.view import to_view

SHARE_LINE: float = 0.3
"""Smallest family share (median over held-out tasks) that shows the tool adds evidence."""
MIN_INSIDE: float = 0.5
"""Fraction of an evidence region that must lie inside an artifact for the artifact to hold it."""
GROW_MIN_PX: int = 2
"""Smallest growth, in source pixels, of the evidence's ink mask into its region."""
CHAIN_TOOLS: frozenset[str] = frozenset({"image_search"})
"""Later tools that read an op's pixels (their result is compared with and without the op)."""
CHECK_TASKS: int = 3
"""Held-out tasks per family that ``check_family`` measures the share on (and that
:data:`KNOWN_BELOW_LINE` is measured on)."""
KNOWN_REASON: str = "below the line when measured; awaiting redesign"
"""What :data:`KNOWN_BELOW_LINE` records for each family: measured below the line, not yet
redesigned (docs/tool-necessity.md)."""
KNOWN_BELOW_LINE: Mapping[str, str] = {}
"""Families whose share is below :data:`SHARE_LINE` today, each with the reason. Empty since
benchmark v4 (the nine families listed before it were redesigned; CHANGELOG).

``check_family`` reports them as a ``known failure (<the reason>)`` warning, not a failure; a
test asserts that exactly these are below the line, so a redesign must remove its family from
here and a regression elsewhere fails."""


# --------------------------------------------------------------------------------------------
# the measure


def unexplained_share(real: np.ndarray, replay: np.ndarray) -> float:
    """Return ``1 - R^2`` of ``real`` explained by a per-channel affine map of ``replay``.

    Both are arrays of one shape: ``(H, W)`` (one channel) or ``(H, W, C)`` (pixels of a mask:
    ``view[mask][:, None]``). The fit per channel is the least squares ``a · replay + b``; the
    residual and total sums of squares are pooled over the channels. Returns a value in
    ``[0, 1]``; 0 when ``real`` is flat (nothing to explain).
    """
    if real.shape != replay.shape:
        raise ValueError(f"shapes differ: {real.shape} vs {replay.shape}")
    channels = real.shape[2] if real.ndim == 3 else 1
    r = real.astype(np.float64).reshape(-1, channels)
    p = replay.astype(np.float64).reshape(r.shape)
    sse = sst = 0.0
    for c in range(r.shape[1]):
        y, x = r[:, c], p[:, c]
        yc, xc = y - y.mean(), x - x.mean()
        total = float(yc @ yc)
        var_x = float(xc @ xc)
        slope = float(xc @ yc) / var_x if var_x > 1e-12 else 0.0
        resid = yc - slope * xc
        sse += float(resid @ resid)
        sst += total
    if sst <= 1e-9 * r.shape[0]:
        return 0.0
    return float(min(1.0, max(0.0, sse / sst)))


def upsampled_view(image: np.ndarray, view_size: int) -> np.ndarray:
    """Return ``image``'s reset view resized back to ``image``'s size (bicubic, ``uint8``)."""
    view = to_view(image, view_size)
    h, w = image.shape[:2]
    if view.shape[:2] == (h, w):
        return np.ascontiguousarray(view)
    out = cv2.resize(view, (w, h), interpolation=cv2.INTER_CUBIC)
    if image.ndim == 2:
        out = cv2.cvtColor(out, cv2.COLOR_RGB2GRAY)
    return out


# --------------------------------------------------------------------------------------------
# replay with one call left out


@dataclass
class Replay:
    """A replay of a task's reference: the image state and what each call left.

    Attributes:
        state: the images (inputs first, then one per image-making call that ran).
        outputs: call id → index in ``state`` of the image the call made.
        top_hits: call id → the first hit's url of a :data:`CHAIN_TOOLS` call ("" when it failed
            or found nothing).
    """

    state: ImageState
    outputs: dict[str, int] = field(default_factory=dict)
    top_hits: dict[str, str] = field(default_factory=dict)


def _makes_image(name: str) -> bool:
    """Return whether tool ``name`` appends an image (a visual op or ``download_image``)."""
    from m3gym.tools import default_registry

    try:
        return default_registry()[name].frame != "none"
    except KeyError:
        return False


def _is_visual(name: str) -> bool:
    """Return whether tool ``name`` is a visual (image) op."""
    from m3gym.tools import default_registry

    try:
        return default_registry()[name].kind == "visual"
    except KeyError:
        return False


def visual_calls(task: Task) -> list[RefCall]:
    """Return the reference's visual calls in execution order (the ops the ablation drops)."""
    return [c for step in task.reference for c in step if _is_visual(c.name)]


def _needs_world(task: Task) -> bool:
    """Return whether the reference calls a tool that reads the offline world and pixels."""
    return any(c.name in CHAIN_TOOLS or c.name == "download_image"
               for step in task.reference for c in step)


def replay_calls(task: Task, images: Sequence[np.ndarray], drop: str | None = None,
                 world: Any = None) -> Replay:
    """Replay ``task.reference`` on ``images`` through the real tools, leaving out call ``drop``.

    Reference image indices are remapped: a dropped (or failed) call's output index stands for
    its input image, so a later call that read the output reads the input instead. Text-only
    retrieval calls (``web_search``, ``fetch_webpage``) are skipped: they read no pixels.
    :data:`CHAIN_TOOLS` calls and ``download_image`` run on ``world`` when it is given.
    """
    from m3gym.tools import default_registry
    from m3gym.tools.base import ToolContext

    registry = default_registry()
    state = ImageState(max_images=256, max_bytes=4 << 30)
    for img in images:
        state.add_root(img)
    ctx = ToolContext(state=state, visible_images=len(state), world=world)
    actual: dict[int, int] = {i: i for i in range(len(images))}
    next_ref = len(images)
    out = Replay(state)
    for s, step in enumerate(task.reference):
        ctx.visible_images = len(state)
        for call in step:
            makes = _makes_image(call.name)
            ref_out = next_ref if makes else None
            next_ref += int(makes)
            args = dict(call.arguments)
            ref_in = args.get("image_index")
            if isinstance(ref_in, int):
                args["image_index"] = actual.get(ref_in, ref_in)
            runs = (call.id != drop and (_is_visual(call.name) or (
                world is not None and (call.name in CHAIN_TOOLS or call.name == "download_image"))))
            record = registry.execute(ctx, call.name, args, s, call.id) if runs else None
            if call.name in CHAIN_TOOLS and record is not None:
                hits = (record.payload.get("results") or []) if record.ok else []
                out.top_hits[call.id] = str(hits[0].get("url", "")) if hits else ""
            if ref_out is None:
                continue
            if record is not None and record.ok and record.output_index is not None:
                actual[ref_out] = record.output_index
                out.outputs[call.id] = record.output_index
            elif isinstance(ref_in, int):
                actual[ref_out] = actual.get(ref_in, ref_in)
    return out


# --------------------------------------------------------------------------------------------
# per task


def evidence_region(ev: Evidence, affine: np.ndarray, scale: float,
                    shape: tuple[int, int]) -> np.ndarray | None:
    """Return the evidence's region in an artifact's view as a boolean mask, or None.

    The region is the evidence's ink (``ev.mask``) grown by half a glyph height (at least
    :data:`GROW_MIN_PX` source pixels), or its whole box when it has no mask, mapped through the
    artifact's affine and the view's ``scale``. None when less than :data:`MIN_INSIDE` of it lands
    inside the view (the artifact does not hold the evidence).
    """
    x0, y0, x1, y1 = ev.box
    ox, oy = int(np.floor(x0)), int(np.floor(y0))
    if ev.mask is not None and ev.mask.any():
        grow = max(GROW_MIN_PX, int(round(ev.glyph_height / 2)))
        kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (2 * grow + 1, 2 * grow + 1))
        src = cv2.dilate(ev.mask.astype(np.uint8), kernel)
    else:
        src = np.ones((max(1, int(np.ceil(y1)) - oy), max(1, int(np.ceil(x1)) - ox)), np.uint8)
    edge = np.array([[scale, 0.0, 0.0], [0.0, scale, 0.0], [0.0, 0.0, 1.0]]) @ np.vstack(
        [affine, [0.0, 0.0, 1.0]]) @ np.array([[1.0, 0.0, ox], [0.0, 1.0, oy], [0.0, 0.0, 1.0]])
    # pixel-edge affine (pixel i covers [i, i+1)) to OpenCV's pixel-centre convention
    centre = edge[:2].copy()
    centre[:, 2] += 0.5 * (centre[:, 0] + centre[:, 1]) - 0.5
    h, w = shape
    warped = cv2.warpAffine(src * 255, centre, (w, h), flags=cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_CONSTANT, borderValue=0) > 0
    expected = float(src.sum()) * abs(float(np.linalg.det(edge[:2, :2])))
    if warped.sum() < 4 or warped.sum() < MIN_INSIDE * expected:
        return None
    return warped


def evidence_shares(task: Task, real: Replay, replay: Replay, view_size: int) -> dict[str, float]:
    """Return each evidence item's share: the largest over the reference artifacts that hold it."""
    shares: dict[str, float] = {}
    for ev in task.evidence:
        best = 0.0
        for index in real.outputs.values():
            entry = real.state[index]
            if entry.provenance.root != ev.image or index >= len(replay.state):
                continue
            twin = replay.state[index]
            if twin.array.shape != entry.array.shape:
                continue
            rv, pv = to_view(entry.array, view_size), to_view(twin.array, view_size)
            scale = rv.shape[0] / entry.array.shape[0]
            region = evidence_region(ev, entry.provenance.affine, scale, rv.shape[:2])
            if region is None:
                continue
            best = max(best, unexplained_share(rv[region][:, None], pv[region][:, None]))
        shares[ev.id] = best
    return shares


def task_share(task: Task, view_size: int | None = None, drop: str | None = None,
               world: Any = None) -> float:
    """Return the task's unexplained share (smallest over its evidence), ``drop`` left out."""
    from m3gym.tasks.registry import get_family

    size = view_size or get_family(task.family).view_size
    views = [upsampled_view(img, size) for img in task.images]
    real = replay_calls(task, task.images, drop, world)
    replay = replay_calls(task, views, drop, world)
    shares = evidence_shares(task, real, replay, size)
    return min(shares.values(), default=0.0)


@dataclass(frozen=True)
class OpAblation:
    """One visual op of a task's reference, left out: the share and the chain without it.

    Attributes:
        key: the op's position among the reference's visual calls and its tool (``"1:crop"``).
        share: the task's share without the op.
        chain_break: whether a later :data:`CHAIN_TOOLS` call's first hit changed or failed
            without it (``None``: no such call follows).
    """

    key: str
    share: float
    chain_break: bool | None


def op_ablations(task: Task, view_size: int | None = None, world: Any = None) -> list[OpAblation]:
    """Return, for each visual call of the reference, the share and chain without it.

    ``world`` is the task's offline world (:func:`~m3gym.env.task_world`); it is built here when
    the reference has a :data:`CHAIN_TOOLS` call and ``world`` is None.
    """
    if world is None and _needs_world(task):
        from m3gym.env import task_world

        world = task_world(task)
    full_hits = replay_calls(task, task.images, None, world).top_hits if world is not None else {}
    out = []
    for k, call in enumerate(visual_calls(task), start=1):
        share = task_share(task, view_size, call.id, world)
        chain: bool | None = None
        if full_hits:
            hits = replay_calls(task, task.images, call.id, world).top_hits
            chain = any(hits.get(cid) != url for cid, url in full_hits.items())
        out.append(OpAblation(f"{k}:{call.name}", share, chain))
    return out


# --------------------------------------------------------------------------------------------
# per family


@dataclass(frozen=True)
class OpNeed:
    """One op of a family's reference over held-out tasks: is it needed on its own.

    Attributes:
        key: position among the visual calls and tool (``"2:autocontrast"``).
        n: tasks whose reference has this op.
        share_without: median share of those tasks without the op.
        chain_breaks: tasks on which leaving it out broke a later chain tool (None: no chain).
    """

    key: str
    n: int
    share_without: float
    chain_breaks: int | None

    @property
    def chain_needed(self) -> bool:
        """Whether leaving the op out breaks the chain on most tasks."""
        return self.chain_breaks is not None and 2 * self.chain_breaks > self.n

    def needed(self, family_share: float) -> bool:
        """Whether the op is needed: its loss drops the share under the line, or breaks the chain.

        Leaving out an op can only lose evidence the family's share has; a family already under
        the line has no evidence to lose, so only the chain can make its op needed.
        """
        lost = family_share >= SHARE_LINE and self.share_without < SHARE_LINE
        return lost or self.chain_needed

    def cell(self, family_share: float) -> str:
        """Return the table cell: ``1:crop ✓ (0.02)``, ``2:autocontrast ✗ (0.81)``, ``chain``."""
        mark = "needed" if self.needed(family_share) else "NOT needed"
        chain = f", chain {self.chain_breaks}/{self.n}" if self.chain_breaks is not None else ""
        return f"{self.key} {mark} ({self.share_without:.2f}{chain})"


@dataclass(frozen=True)
class FamilyNecessity:
    """Measurement (a) for one family: the share over held-out tasks and each op's need."""

    family: str
    shares: tuple[float, ...]
    ops: tuple[OpNeed, ...] = ()

    @property
    def share(self) -> float:
        """Median share over the held-out tasks (0 when none was measured)."""
        return float(statistics.median(self.shares)) if self.shares else 0.0

    @property
    def chain_necessity(self) -> bool:
        """Whether some op is measured to be needed by a later tool of the chain."""
        return any(op.chain_needed for op in self.ops)

    @property
    def passes_share(self) -> bool:
        """Whether the share is at least :data:`SHARE_LINE`, or a chain necessity is measured."""
        return self.share >= SHARE_LINE or self.chain_necessity

    @property
    def every_op_needed(self) -> bool:
        """Whether every op of the reference is needed on its own (True when not ablated)."""
        return all(op.needed(self.share) for op in self.ops)


def held_out_tasks(family: str, n: int, config: Mapping[str, Any] | None = None) -> list[Task]:
    """Return the first ``n`` held-out tasks of ``family`` (the frozen test split's seed range)."""
    from m3gym.tasks.registry import held_out_seed, make_task

    return [make_task(family, held_out_seed(family, i), dict(config) if config else None)
            for i in range(n)]


def aggregate_ops(per_task: Iterable[Sequence[OpAblation]]) -> tuple[OpNeed, ...]:
    """Return each op key's :class:`OpNeed` over the tasks' ablations, in first-seen order."""
    by_key: dict[str, list[OpAblation]] = {}
    for ablations in per_task:
        for a in ablations:
            by_key.setdefault(a.key, []).append(a)
    out = []
    for key, rows in by_key.items():
        chains = [a.chain_break for a in rows if a.chain_break is not None]
        out.append(OpNeed(key, len(rows), float(statistics.median(a.share for a in rows)),
                          sum(chains) if chains else None))
    return tuple(out)


def family_necessity(family: str, tasks: int = CHECK_TASKS,
                     config: Mapping[str, Any] | None = None, ablate: bool = True,
                     task_list: Sequence[Task] | None = None) -> FamilyNecessity:
    """Measure (a) on ``tasks`` held-out tasks of ``family`` (or on ``task_list``).

    ``ablate`` also leaves each op out in turn (:func:`op_ablations`); without it only the share
    is measured, and a family under the line is checked for a chain necessity alone.
    """
    todo = list(task_list) if task_list is not None else held_out_tasks(family, tasks, config)
    shares = tuple(task_share(t) for t in todo)
    below = shares and statistics.median(shares) < SHARE_LINE
    if ablate or (below and any(_needs_world(t) for t in todo)):
        ops = aggregate_ops(op_ablations(t) for t in todo)
    else:
        ops = ()
    return FamilyNecessity(family, shares, ops)


# --------------------------------------------------------------------------------------------
# check_family's hook


@dataclass(frozen=True)
class ShareCheck:
    """What ``check_family`` reports for (a): the measurement and whether it is a failure."""

    result: FamilyNecessity
    known: str | None
    """The issue that files the family as below the line (:data:`KNOWN_BELOW_LINE`), or None."""

    @property
    def fails(self) -> bool:
        """Whether ``check_family`` must fail: below the line and not a known failure."""
        return not self.result.passes_share and self.known is None

    def line(self) -> str:
        """Return the report line: share, n, line and verdict."""
        r = self.result
        chain = ", chain necessity measured" if r.chain_necessity else ""
        head = (f"tool necessity (a): unexplained share {r.share:.3f} (median of "
                f"{len(r.shares)} held-out tasks{chain}) against a line of {SHARE_LINE}")
        if r.passes_share:
            tail = "ok" if self.known is None else (
                f"ok, but listed in KNOWN_BELOW_LINE ({self.known}): remove it from "
                "m3gym.audit.tool_necessity.KNOWN_BELOW_LINE")
        else:
            tail = f"known failure ({self.known})" if self.known else "FAIL"
        return f"{head}: {tail}"


def share_check(family: str, tasks: int = CHECK_TASKS) -> ShareCheck:
    """Return ``check_family``'s (a) check of ``family`` on ``tasks`` held-out tasks."""
    return ShareCheck(family_necessity(family, tasks, ablate=False), KNOWN_BELOW_LINE.get(family))
