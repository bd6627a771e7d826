"""Record → :class:`m3gym.spec.Task`: evidence, reference trajectory and checkpoints.

The rules are the procedural families' (:mod:`m3gym.tasks.families._scene_common`):

* each evidence becomes an :class:`~m3gym.spec.Evidence` with its box in source pixels, its
  ``glyph_height`` (default: the box height) and **no clean render**: ``v_true`` is then judged
  on geometry (:func:`m3gym.scoring.checkpoints.measure_evidence`): the artifact derives from the
  evidence's image, contains the whole box, shows it upright and not mirrored, and the glyph
  height at view resolution reaches ``min_view_height`` (9 px). A crop of another region does not
  contain the box; an unzoomed or too-wide crop leaves the glyphs below 9 px;
* the reference starts with one zoomed ``crop`` per evidence (all in the first step: parallel
  calls), zoomed by :func:`~m3gym.tasks.families._scene_common.zoom_for` to 1.5x the legible
  height; an evidence op (``rotate``, ``flip``, ``enhance``) is a second-step call on its crop
  that depends on it;
* checkpoints per evidence chain (:func:`~m3gym.tasks.families._scene_common.chain_checkpoints`):
  ``crop_covers`` (+ ``rotate_upright`` / ``contrast_op``) on S, ``v_tool`` on the chain's last
  tool and ``v_true`` on V. Judge checkpoints stay in ``metadata["judge_checkpoints"]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from m3gym.records.schema import EvidenceRecord, Record, answer_text
from m3gym.spec import AnswerSpec, Evidence, RefCall, Task
from m3gym.tasks.families._scene_common import (
    MIN_VIEW_HEIGHT,
    chain_checkpoints,
    crop_bbox,
    normalized_angle,
    zoom_for,
)
from m3gym.tools.visual import check_output_size, rotated_size
from m3gym.view import VIEW_SIZE, view_scale

FAMILY = "records"
"""Family name of record tasks (their ``Task.family``)."""


@dataclass(frozen=True)
class EvidencePlan:
    """One evidence resolved against its image size: pixel box, glyph height, reference crop."""

    evidence: Evidence
    crop: dict[str, Any]
    crop_size: tuple[int, int]
    needs_no_tool: bool


def px_box(ev: EvidenceRecord, width: int, height: int) -> tuple[float, float, float, float]:
    """Return the evidence box in source pixels (``norm1000`` scaled by the image size)."""
    x0, y0, x1, y1 = ev.box
    if ev.units == "norm1000":
        return (x0 * width / 1000.0, y0 * height / 1000.0, x1 * width / 1000.0,
                y1 * height / 1000.0)
    return (x0, y0, x1, y1)


def evidence_pose(ev: EvidenceRecord) -> tuple[float, bool]:
    """Return ``(angle, mirrored)`` of :class:`~m3gym.spec.Evidence` for the record's op.

    ``rotate`` by ``a`` makes it upright, so it appears rotated by ``-a``; a horizontal flip
    undoes a mirror; a vertical flip undoes a mirror seen upside down (mirrored, then 180°).
    """
    if ev.op is None:
        return 0.0, False
    if ev.op.op == "rotate":
        return normalized_angle(-ev.op.angle), False
    if ev.op.op == "flip":
        return (180.0, True) if ev.op.direction == "vertical" else (0.0, True)
    return 0.0, False


def plan_evidence(ev: EvidenceRecord, index: int, size: tuple[int, int],
                  view_size: int = VIEW_SIZE) -> EvidencePlan:
    """Return the :class:`EvidencePlan` of evidence ``index`` in an image of ``size`` (w, h).

    Raises ``ValueError`` with the reason when the box leaves the image or no reference crop
    (zoom 1-5) can make the evidence legible.
    """
    w, h = size
    box = px_box(ev, w, h)
    if box[0] < 0 or box[1] < 0 or box[2] > w + 1e-6 or box[3] > h + 1e-6:
        raise ValueError(f"evidence[{index}].box {[round(v, 2) for v in box]} px lies outside "
                         f"image {ev.image} ({w}x{h})")
    if box[2] - box[0] < 1 or box[3] - box[1] < 1:
        raise ValueError(f"evidence[{index}].box {[round(v, 2) for v in box]} px is smaller than "
                         "one pixel")
    glyph = ev.glyph_height if ev.glyph_height is not None else box[3] - box[1]
    angle, mirrored = evidence_pose(ev)
    evidence = Evidence(id=ev.id or f"e{index}", image=ev.image, box=box, text=ev.text,
                        glyph_height=float(glyph), angle=angle, mirrored=mirrored,
                        min_view_height=MIN_VIEW_HEIGHT)
    margin = max(4.0, 0.25 * glyph)
    grown = (max(0.0, box[0] - margin), max(0.0, box[1] - margin), min(float(w), box[2] + margin),
             min(float(h), box[3] + margin))
    bbox, px = crop_bbox(grown, w, h)
    cw, ch = px[2] - px[0], px[3] - px[1]
    rotate_deg = ev.op.angle if ev.op is not None and ev.op.op == "rotate" else 0.0
    try:
        zoom = zoom_for((cw, ch), float(glyph), rotate_deg)
    except ValueError:
        raise ValueError(
            f"evidence[{index}] cannot be made legible by a crop: glyph height {glyph:g} px in a "
            f"{cw}x{ch} px crop stays below {MIN_VIEW_HEIGHT:g} px at view size even at zoom 5 "
            "(set glyph_height, or a tighter box)") from None
    zw, zh = max(1, round(cw * zoom)), max(1, round(ch * zoom))
    try:
        check_output_size(zw, zh, f"evidence[{index}] reference crop at zoom {zoom:g}")
        if rotate_deg % 90.0:
            check_output_size(*rotated_size(rotate_deg, zw, zh), f"evidence[{index}] rotation")
    except Exception as err:  # ToolError: the tool would refuse the reference
        raise ValueError(str(err)) from None
    legible = glyph * view_scale(h, w, view_size) >= MIN_VIEW_HEIGHT
    return EvidencePlan(evidence=evidence,
                        crop={"image_index": ev.image, "bbox_2d": bbox, "zoom_scale": zoom},
                        crop_size=(zw, zh), needs_no_tool=legible and ev.op is None)


def read_image(path: Path) -> np.ndarray:
    """Return the RGB ``uint8`` pixels of ``path`` as stored (EXIF orientation not applied).

    Boxes are in stored-pixel coordinates: the same frame ``PIL.Image.open(path).size`` reports.
    """
    data = np.fromfile(str(path), dtype=np.uint8)
    img = cv2.imdecode(data, cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION)
    if img is None:
        raise ValueError(f"cannot decode image {path}")
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


def default_level(record: Record) -> int:
    """Return the record's level: as given, else 3 / 2 / 1.

    3 with knowledge, 2 with an op or several pieces of evidence, else 1.
    """
    if record.level is not None:
        return int(record.level)
    if record.knowledge:
        return 3
    if len(record.evidence) > 1 or any(e.op is not None for e in record.evidence):
        return 2
    return 1


def answer_spec(record: Record) -> AnswerSpec:
    """Return the :class:`~m3gym.spec.AnswerSpec` of a record (``number`` → ``numeric``)."""
    a = record.answer
    match = "numeric" if a.match == "number" else "exact"
    return AnswerSpec(value=answer_text(a.value), variants=tuple(a.variants), match=match,
                      tolerance=float(a.tolerance))


def record_to_task(record: Record, images: tuple[np.ndarray, ...] | None = None,
                   view_size: int = VIEW_SIZE, extra_metadata: dict[str, Any] | None = None
                   ) -> Task:
    """Return the :class:`~m3gym.spec.Task` of ``record`` (decodes its images unless given).

    The task id is ``records/<record id>``; :func:`m3gym.tasks.registry.make_task` renames it
    ``records/<seed>`` and ``metadata["record_id"]`` keeps the record's id.
    """
    if images is None:
        images = tuple(read_image(p) for p in record.image_paths)
    frozen = []
    for img in images:
        arr = np.ascontiguousarray(img)
        arr.setflags(write=False)
        frozen.append(arr)
    plans = [plan_evidence(ev, i, (frozen[ev.image].shape[1], frozen[ev.image].shape[0]),
                           view_size) for i, ev in enumerate(record.evidence)]
    n_in = len(frozen)
    crops = [RefCall(f"c{i + 1}", "crop", p.crop) for i, p in enumerate(plans)]
    ops: list[RefCall] = []
    for i, (ev, crop) in enumerate(zip(record.evidence, crops)):
        if ev.op is None:
            continue
        src = n_in + i  # the crop's output index (the crops come first, in order)
        if ev.op.op == "rotate":
            args: dict[str, Any] = {"image_index": src, "angle": ev.op.angle}
            ops.append(RefCall(f"r{i + 1}", "rotate", args, (crop.id,)))
        elif ev.op.op == "flip":
            ops.append(RefCall(f"f{i + 1}", "flip", {"image_index": src,
                                                     "direction": ev.op.direction}, (crop.id,)))
        else:
            ops.append(RefCall(f"k{i + 1}", ev.op.tool, {"image_index": src}, (crop.id,)))
    steps = (tuple(crops), tuple(ops)) if ops else (tuple(crops),)
    evidence = tuple(p.evidence for p in plans)
    checkpoints = chain_checkpoints(evidence, steps)
    caps = ["visual_grounding"]
    if len(evidence) > 1:
        caps.append("parallelism")
    if ops:
        caps.append("multi_hop")
    if record.knowledge:
        caps.append("knowledge")
    total = sum(float(i.shape[0] * i.shape[1]) for i in frozen)
    meta: dict[str, Any] = {
        "record_id": record.id, "records_task_id": f"{FAMILY}/{record.id}",
        "images": list(record.images), "image_size": [[i.shape[1], i.shape[0]] for i in frozen],
        "view_size": view_size,
        "evidence_area_fraction": sum(e.area for e in evidence) / total if total else 0.0,
        "needs_no_tool": all(p.needs_no_tool for p in plans),
        "answer_match": record.answer.match,
        "judge_checkpoints": [{"id": j.id, "axis": j.axis, "question": j.question,
                               "image": j.image, "needs_judge": True}
                              for j in record.judge_checkpoints],
        "knowledge": [{"title": k.title, "text": k.text, "url": k.url}
                      for k in record.knowledge],
        "source": dict(record.source), "record_metadata": dict(record.metadata),
        **(extra_metadata or {}),
    }
    level = default_level(record)
    return Task(
        task_id=f"{FAMILY}/{record.id}", family=FAMILY, level=level,  # type: ignore[arg-type]
        domain=record.domain, images=tuple(frozen), question=record.question,
        answer=answer_spec(record), reference=steps, evidence=evidence,
        checkpoints=checkpoints, choices=record.choices, capabilities=tuple(caps),
        metadata=meta,
    )


def view_glyph_height(plan: EvidencePlan, size: tuple[int, int],
                      view_size: int = VIEW_SIZE) -> float:
    """Return the evidence's glyph height in view pixels on the full input image."""
    return plan.evidence.glyph_height * view_scale(size[1], size[0], view_size)
