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
  tool and ``v_true`` on V. Judge checkpoints stay in ``metadata["judge_checkpoints"]``;
* each ``knowledge`` entry becomes a page of the task's corpus (the env's
  :func:`m3gym.env.task_world` overlays them on the offline world, :mod:`m3gym.web.overlay`;
  an entry without a url gets :func:`~m3gym.web.overlay.knowledge_url`). The reference adds a
  ``web_search`` per entry (its title; title and text when the title alone does not rank it
  within ``max_rank``), parallel with the crops in the first step, and a ``fetch_webpage`` of its
  url in the second step, depending on the search; S gets ``search_hit`` and ``fetch``.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from m3gym.records.guard import (  # read_image is imported from here too
    DEFAULT_BUDGET,
    PixelBudget,
    contained,
    header_size,
    read_image,
)
from m3gym.records.schema import EvidenceRecord, Record, RequiredOp, answer_text
from m3gym.scoring.checkpoints import DEFAULT_MAX_RANK
from m3gym.spec import AnswerSpec, Checkpoint, Evidence, RefCall, Task
from m3gym.tasks.checkpoint_builders import fetch_checkpoint, search_hit_checkpoint, step_checkpoint
from m3gym.tasks.families._scene_common import (
    MIN_VIEW_HEIGHT,
    chain_checkpoints,
    crop_bbox,
    normalized_angle,
    zoom_for,
)
from m3gym.tools.visual import check_output_size, rotated_size
from m3gym.view import VIEW_SIZE, view_scale
from m3gym.web.overlay import KnowledgePage, OverlayWorld, knowledge_pages
from m3gym.web.world import build_world

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


def read_record_images(record: Record, budget: PixelBudget = DEFAULT_BUDGET
                       ) -> tuple[np.ndarray, ...]:
    """Return the pixels of ``record``'s images, checked before anything is decoded.

    Each path must still resolve inside ``record.folder`` (the working directory when unset)
    unless ``record.allow_outside`` (:class:`~m3gym.records.guard.OutsideFolderError`), and
    the headers must fit ``budget`` per image and together
    (:class:`~m3gym.records.guard.PixelBudgetError`): a file changed since it was checked is
    refused here, not decoded.
    """
    folder = record.folder if record.folder is not None else Path.cwd()
    total = 0
    for shown, path in zip(record.images, record.image_paths):
        if not record.allow_outside:
            contained(path, folder, shown)
        size = header_size(path)
        budget.check_image(shown, size)
        total += size[0] * size[1]
    budget.check_record(total)
    return tuple(read_image(p) for p in record.image_paths)


MAX_QUERY_CHARS = 500
"""Longest reference search query (``web_search``'s limit)."""


def knowledge_entries(record: Record) -> list[dict[str, Any]]:
    """Return the record's knowledge entries as ``{"title", "text", "url"}`` (urls filled in)."""
    raw = [{"title": k.title, "text": k.text, "url": k.url} for k in record.knowledge]
    pages = knowledge_pages(raw, record.id)
    return [{**r, "url": p.url} for r, p in zip(raw, pages)]


def knowledge_world(pages: tuple[KnowledgePage, ...],
                    world: dict[str, Any] | None = None) -> OverlayWorld:
    """Return the corpus a record task searches: its pages over the offline world.

    ``world`` is the task's ``metadata["world"]`` (``seed``, ``split``; default seed 0, train),
    as :func:`m3gym.env.task_world` reads it.
    """
    spec = world or {}
    return OverlayWorld(build_world(int(spec.get("seed", 0)), str(spec.get("split", "train"))),
                        pages)


def search_query(corpus: OverlayWorld, page: KnowledgePage, index: int,
                 max_rank: int = DEFAULT_MAX_RANK) -> str:
    """Return the reference query that ranks ``page`` within ``max_rank`` of ``corpus``.

    The title, else the title and the text (cut at a word to 500 characters). Raises
    ``ValueError`` when neither does (another page with the same words ranks above it).
    """
    words = f"{page.title} {page.body}".split()
    long_query = ""
    for w in words:
        if len(long_query) + len(w) + 1 > MAX_QUERY_CHARS:
            break
        long_query = f"{long_query} {w}".strip()
    for query in (page.title, long_query):
        urls = [h.url for h in corpus.search(query, max_rank)]
        if page.url in urls:
            return query
    raise ValueError(f"knowledge[{index}] ({page.title!r}) does not rank within the top "
                     f"{max_rank} results of a search for its title or text: another page "
                     "has the same words")


def knowledge_plan(record: Record, entries: list[dict[str, Any]],
                   world: dict[str, Any] | None = None
                   ) -> tuple[list[RefCall], list[RefCall], list[Checkpoint]]:
    """Return the knowledge entries' searches (step 1), fetches (step 2) and S checkpoints."""
    if not entries:
        return [], [], []
    pages = knowledge_pages(entries, record.id)
    corpus = knowledge_world(pages, world)
    searches, fetches, checkpoints = [], [], []
    for i, page in enumerate(pages):
        search = RefCall(f"w{i + 1}", "web_search",
                         {"query": search_query(corpus, page, i), "top_k": 5})
        fetch = RefCall(f"u{i + 1}", "fetch_webpage", {"url": page.url}, (search.id,))
        searches.append(search)
        fetches.append(fetch)
        checkpoints.append(search_hit_checkpoint("web_search", page.url, f"s_search_{search.id}",
                                                 DEFAULT_MAX_RANK,
                                                 f"web_search ranks {page.title!r} within the "
                                                 f"top {DEFAULT_MAX_RANK}"))
        checkpoints.append(fetch_checkpoint(page.url, f"s_fetch_{fetch.id}",
                                            f"fetch the page {page.title!r}"))
    return searches, fetches, checkpoints


REQUIRED_OP_CROP_BBOX: tuple[int, int, int, int] = (250, 250, 750, 750)
"""The reference's crop for a ``crop`` required op (0-1000 scale: the image's central half)."""


def required_op_call(rop: RequiredOp, index: int) -> RefCall:
    """Return the reference call ``g<index + 1>`` of a required op (on its full input image).

    ``crop``: the central half (:data:`REQUIRED_OP_CROP_BBOX`; any crop of the image passes),
    ``rotate``: 90°, ``flip``: horizontal, ``enhance``: ``autocontrast``.
    """
    cid = f"g{index + 1}"
    if rop.op == "crop":
        return RefCall(cid, "crop", {"image_index": rop.image,
                                     "bbox_2d": list(REQUIRED_OP_CROP_BBOX)})
    if rop.op == "rotate":
        return RefCall(cid, "rotate", {"image_index": rop.image, "angle": 90})
    if rop.op == "flip":
        return RefCall(cid, "flip", {"image_index": rop.image, "direction": "horizontal"})
    return RefCall(cid, "autocontrast", {"image_index": rop.image})


def required_op_checkpoint(call: RefCall, rop: RequiredOp) -> Checkpoint:
    """Return the S ``global_op`` checkpoint of a required op's reference ``call``.

    ``global_op`` passes when one of the op's equivalent tools is applied to a full input
    image: for ``crop``, a crop (of any region) was made from the input image itself.
    """
    cp = step_checkpoint(call)
    what = "crop a part of" if rop.op == "crop" else f"apply {rop.op} to"
    return Checkpoint(cp.id, cp.axis, cp.kind, cp.params,
                      f"{what} input image {rop.image} ({' / '.join(cp.params['tools'])})")


def default_level(record: Record) -> int:
    """Return the record's level: as given, else 3 / 2 / 1.

    3 with knowledge, 2 with an op or several pieces of evidence, else 1.
    """
    if record.level is not None:
        return int(record.level)
    if record.knowledge:
        return 3
    if (len(record.evidence) > 1 or any(e.op is not None for e in record.evidence)
            or len(record.required_ops) > 1):
        return 2
    return 1


def answer_spec(record: Record) -> AnswerSpec:
    """Return the :class:`~m3gym.spec.AnswerSpec` of a record (``number`` → ``numeric``)."""
    a = record.answer
    match = "numeric" if a.match == "number" else "exact"
    return AnswerSpec(value=answer_text(a.value), variants=tuple(a.variants), match=match,
                      tolerance=float(a.tolerance))


def record_to_task(record: Record, images: tuple[np.ndarray, ...] | None = None,
                   view_size: int = VIEW_SIZE, extra_metadata: dict[str, Any] | None = None,
                   budget: PixelBudget = DEFAULT_BUDGET) -> Task:
    """Return the :class:`~m3gym.spec.Task` of ``record`` (decodes its images unless given).

    The task id is ``records/<record id>``; :func:`m3gym.tasks.registry.make_task` renames it
    ``records/<seed>`` and ``metadata["record_id"]`` keeps the record's id. Images are read by
    :func:`read_record_images` (folder and pixel ``budget`` checked before decoding).
    """
    if images is None:
        images = read_record_images(record, budget)
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
    visual_steps = (tuple(crops), tuple(ops)) if ops else (tuple(crops),)
    evidence = tuple(p.evidence for p in plans)
    checkpoints = chain_checkpoints(evidence, visual_steps) if evidence else ()
    globals_ = [required_op_call(r, i) for i, r in enumerate(record.required_ops)]
    checkpoints = checkpoints + tuple(required_op_checkpoint(c, r)
                                      for c, r in zip(globals_, record.required_ops))
    entries = knowledge_entries(record)
    world_spec = (extra_metadata or {}).get("world")
    searches, fetches, k_checkpoints = knowledge_plan(record, entries, world_spec)
    checkpoints = checkpoints + tuple(k_checkpoints)
    first = tuple(crops) + tuple(globals_) + tuple(searches)
    second = tuple(ops) + tuple(fetches)
    steps = (first, second) if second else (first,)
    caps = ["visual_grounding"]
    if len(evidence) + len(globals_) > 1:
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
        "needs_no_tool": bool(plans) and not globals_ and all(p.needs_no_tool for p in plans),
        "required_ops": [{"op": r.op, "image": r.image} for r in record.required_ops],
        "answer_match": record.answer.match,
        "judge_checkpoints": [{"id": j.id, "axis": j.axis, "question": j.question,
                               "image": j.image, "needs_judge": True}
                              for j in record.judge_checkpoints],
        "knowledge": entries,
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
