"""Turning a saved image's traced lineage into recorded calls, after checking it on the pixels.

The worker is untrusted, so its lineage is only a *claim*. :func:`record_saved_image` decides
what the env records for ``save(image)``:

1. **canonical calls** — every op of the lineage is an atomic op (``crop_px`` becomes ``crop``
   with a 0–1000 ``bbox_2d``, a following uniform ``resize`` folds into its ``zoom_scale``). The
   calls are replayed through the registry on a scratch copy of the state; when the replay's
   pixels agree with the saved ones (same shape, mean absolute difference ≤
   :data:`PIXEL_TOLERANCE`) the calls are executed for real and recorded exactly like function
   calls (their own images, provenance and call ids);
2. otherwise a **``code`` op** derived from the source with the claimed affine, when that geometry
   agrees with the pixels (normalized correlation of the warped source with the saved image, or
   with its gradient magnitude, ≥ :data:`GEOMETRY_MIN_CORRELATION`): the checkpoints then measure
   the evidence on the saved pixels as for any artifact;
3. otherwise a **``code`` op with unknown provenance** (a new root image): it is recorded and shown
   but cannot pass a checkpoint that needs the evidence's geometry.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import cv2
import numpy as np

from m3gym.geometry import exact_bbox1000
from m3gym.pixels import to_gray
from m3gym.state import ImageBudgetError
from m3gym.tools.base import ToolContext
from m3gym.tools.catalogue import lineage_ops
from m3gym.tools.registry import ToolRegistry
from m3gym.trace import TraceCall

PIXEL_TOLERANCE = 4.0
"""Largest mean absolute difference (gray levels) for a replay to count as the same op."""

GEOMETRY_MIN_CORRELATION = 0.5
"""Smallest normalized correlation for a claimed geometry to be kept."""

MAX_REPLAYED_OPS = 32
"""Longest lineage the env replays (a longer claim is a ``code`` op of unknown provenance)."""

CANONICAL_OPS: frozenset[str] = frozenset(lineage_ops())
"""Lineage op names that can become atomic calls (the built-in catalogue's ``lineage_op``
facets, at import; :func:`plan_calls` reads :func:`~m3gym.tools.catalogue.lineage_ops` live)."""


bbox_for_pixels = exact_bbox1000
"""Old name of :func:`m3gym.geometry.exact_bbox1000` (the 0–1000 box of an exact pixel box)."""


def plan_calls(ops: Sequence[Sequence[Any]]) -> list[tuple[str, dict[str, Any]]] | None:
    """Return the ops as atomic ``(name, args)`` without image index (``None`` if one is not)."""
    plan: list[tuple[str, dict[str, Any]]] = []
    replayable = lineage_ops()
    for op in ops:
        if not (isinstance(op, (list, tuple)) and len(op) == 2 and isinstance(op[1], Mapping)):
            return None
        name, params = str(op[0]), dict(op[1])
        if name not in replayable:
            return None
        plan.append((name, params))
    return plan


def _args_for(name: str, params: dict[str, Any], shape: tuple[int, ...],
              following: tuple[str, dict[str, Any]] | None) -> tuple[str, dict[str, Any], bool]:
    """Return the call for one planned op on an image of ``shape`` (and whether it ate the next)."""
    h, w = shape[:2]
    if name != "crop_px":
        return lineage_ops().get(name, name), params, False
    box = [int(v) for v in params["box"]]
    args: dict[str, Any] = {"bbox_2d": exact_bbox1000(box, w, h)}
    cw, ch = box[2] - box[0], box[3] - box[1]
    if following is not None and following[0] == "resize":
        ow, oh = following[1].get("width"), following[1].get("height")
        if isinstance(ow, int) and isinstance(oh, int):
            zoom = ow / cw
            if 0.5 <= zoom <= 5.0 and max(1, round(ch * zoom)) == oh:
                args["zoom_scale"] = zoom
                return "crop", args, True
    return "crop", args, False


def replay(registry: ToolRegistry, ctx: ToolContext, src: int,
           plan: Sequence[tuple[str, dict[str, Any]]], step: int,
           call_ids: Callable[[], str], label: str | None) -> list[TraceCall]:
    """Execute ``plan`` from image ``src`` through ``registry`` in ``ctx``; stop at a failure."""
    records: list[TraceCall] = []
    current = src
    i = 0
    while i < len(plan):
        name, params = plan[i]
        following = plan[i + 1] if i + 1 < len(plan) else None
        tool, args, ate = _args_for(name, params, ctx.state[current].array.shape, following)
        i += 2 if ate else 1
        args = {"image_index": current, **args}
        if i >= len(plan) and label is not None:
            args["label"] = label
        ctx.visible_images = len(ctx.state)
        rec = registry.execute(ctx, tool, args, step, call_ids())
        records.append(rec)
        if not rec.ok or rec.output_index is None:
            break
        current = rec.output_index
    return records


def scratch_context(ctx: ToolContext) -> ToolContext:
    """Return a copy of ``ctx`` whose state can grow without touching the real one."""
    state = dataclasses.replace(ctx.state, _entries=list(ctx.state._entries))
    return dataclasses.replace(ctx, state=state)


def pixels_agree(a: np.ndarray, b: np.ndarray, tolerance: float = PIXEL_TOLERANCE) -> bool:
    """Return whether two images have the same shape and a mean absolute difference ≤ tolerance."""
    if a.shape != b.shape:
        return False
    return float(cv2.absdiff(a, b).mean()) <= tolerance


def _ncc(a: np.ndarray, b: np.ndarray) -> float:
    a = a - a.mean()
    b = b - b.mean()
    den = math.sqrt(float((a * a).sum()) * float((b * b).sum()))
    return 0.0 if den < 1e-6 else float((a * b).sum()) / den


def geometry_agrees(src: np.ndarray, affine: np.ndarray, out: np.ndarray,
                    minimum: float = GEOMETRY_MIN_CORRELATION) -> bool:
    """Return whether ``out`` looks like ``src`` warped by ``affine`` (pixel-edge convention).

    Photometric changes are allowed: the correlation is taken in absolute value (inversion) and
    also against the gradient magnitude of the warped source (edge maps).
    """
    h, w = out.shape[:2]
    if min(h, w) < 4:
        return False
    scale = min(1.0, 256 / max(h, w))
    small = (max(4, round(w * scale)), max(4, round(h * scale)))
    m = np.vstack([affine, [0.0, 0.0, 1.0]])
    m = np.diag([small[0] / w, small[1] / h, 1.0]) @ m
    centre = m[:2].copy()
    centre[:, 2] += centre[:, :2].sum(axis=1) * 0.5 - 0.5
    warped = cv2.warpAffine(to_gray(src).astype(np.float32), centre, small,
                            flags=cv2.INTER_AREA if scale < 1 else cv2.INTER_LINEAR,
                            borderMode=cv2.BORDER_REPLICATE)
    seen = cv2.resize(to_gray(out).astype(np.float32), small, interpolation=cv2.INTER_AREA)
    gx = cv2.Sobel(warped, cv2.CV_32F, 1, 0)
    gy = cv2.Sobel(warped, cv2.CV_32F, 0, 1)
    return max(abs(_ncc(seen, warped)), _ncc(seen, cv2.magnitude(gx, gy))) >= minimum


def parse_lineage(value: Any, num_images: int) -> tuple[int, np.ndarray | None, list] | None:
    """Validate a lineage claim from the worker: ``(src, affine or None, ops)`` or ``None``."""
    if not isinstance(value, Mapping):
        return None
    src, affine, ops = value.get("src"), value.get("affine"), value.get("ops")
    if not isinstance(src, int) or isinstance(src, bool) or not 0 <= src < num_images:
        return None
    if not isinstance(ops, list) or len(ops) > MAX_REPLAYED_OPS:
        return None
    matrix = None
    if affine is not None:
        if not (isinstance(affine, list) and len(affine) == 6
                and all(isinstance(v, (int, float)) and math.isfinite(v) for v in affine)):
            return None
        matrix = np.asarray(affine, dtype=np.float64).reshape(2, 3)
        if abs(np.linalg.det(matrix[:, :2])) < 1e-9:
            return None
    return src, matrix, ops


def record_saved_image(registry: ToolRegistry, ctx: ToolContext, array: np.ndarray,
                       lineage: Any, label: str | None, step: int,
                       call_ids: Callable[[], str],
                       static_ops: Sequence[str] = ()) -> tuple[list[TraceCall], int | None]:
    """Record ``save(array)`` (see the module docstring).

    Returns the new records and the index of the saved image (an existing index when the array
    is exactly an image of the state; ``None`` when recording failed, e.g. the image budget).
    """
    claim = parse_lineage(lineage, len(ctx.state))
    if claim is not None:
        src, affine, ops = claim
        source = ctx.state[src].array
        if not ops and source.shape == array.shape and np.array_equal(source, array):
            return [], src
        plan = plan_calls(ops)
        if plan:
            scratch = scratch_context(ctx)
            trial = replay(registry, scratch, src, plan, step,
                           iter(f"t{k}" for k in range(10**6)).__next__, label)
            last = trial[-1] if trial else None
            if last is not None and last.ok and last.output_index is not None and \
                    pixels_agree(scratch.state[last.output_index].array, array):
                records = replay(registry, ctx, src, plan, step, call_ids, label)
                return records, records[-1].output_index
        if affine is not None and geometry_agrees(source, affine, array):
            rec = _code_record(ctx, array, src, affine, ops, label, step, call_ids(), static_ops)
            return [rec], rec.output_index
    rec = _code_record(ctx, array, None, None, [] if claim is None else claim[2], label,
                       step, call_ids(), static_ops)
    return [rec], rec.output_index


def _code_record(ctx: ToolContext, array: np.ndarray, src: int | None,
                 affine: np.ndarray | None, ops: Sequence[Any], label: str | None, step: int,
                 call_id: str, static_ops: Sequence[str]) -> TraceCall:
    names = [str(op[0]) if isinstance(op, (list, tuple)) and op else "?" for op in ops][:32]
    args: dict[str, Any] = {"ops": names, "static_ops": list(static_ops)}
    record = TraceCall(step=step, call_id=call_id, name="code", requested_name="save",
                        arguments=args, ok=False, input_index=src)
    try:
        if src is None or affine is None:
            entry = ctx.state.add_root(np.ascontiguousarray(array), op="code", args=args,
                                       call_id=call_id, label=label)
            how = "provenance unknown"
        else:
            entry = ctx.state.add_derived(src, np.ascontiguousarray(array), "code", args,
                                          affine, call_id=call_id, label=label)
            how = f"derived from Image {src}"
    except (ImageBudgetError, TypeError) as exc:
        record.error = str(exc)
        record.result_text = f"Error: {exc}"
        return record
    h, w = array.shape[:2]
    record.ok = True
    record.output_index = entry.index
    record.result_text = f"Image {entry.index} created ({w}x{h}) by code ({how})."
    return record
