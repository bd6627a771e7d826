"""m3gym tasks out to Agentic-MME task folders (the inverse of :mod:`m3gym.records.amme_import`).

:func:`task_to_amme` writes one m3gym task (a procedural family's or a record's) as an
Agentic-MME task dict, with checkpoints Agentic-MME's own evaluator reads; :func:`export_amme`
writes a whole folder of them (``json/NNNN.json`` and ``image/``).
"""

from __future__ import annotations

import copy
import json
import os
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from m3gym.codec import png_bytes
from m3gym.records.amme_import import FORMAT, choices_suffix
from m3gym.spec import Checkpoint, Evidence, Task

SEARCH_TOOLS: dict[str, str] = {"web_search": "google_search", "image_search": "google_lens_search"}
"""m3gym retrieval tool → the name Agentic-MME's harness gives it."""

EXPORT_PENALTY_PER_EXTRA_CALL = 0.1
"""``efficiency.penalty_per_extra_call`` written by :func:`task_to_amme`."""
EXPORT_MAX_TOOL_CALLS = 15
"""``efficiency.max_tool_calls`` written by :func:`task_to_amme` (the reference harness budget)."""
EXPORT_GAP_SLACK = 2
"""Ordering constraints allow this many extra calls between two dependent reference calls."""


def _normalized_angle(angle: float) -> float:
    a = float(angle) % 360.0
    return a - 360.0 if a > 180.0 else a


def evidence_record(ev: Evidence, op: Mapping[str, Any] | None = None) -> dict[str, Any]:
    """Return m3gym evidence ``ev`` as a record evidence object (box in px, with its op)."""
    out: dict[str, Any] = {"id": ev.id, "image": ev.image, "box": [float(v) for v in ev.box],
                           "units": "px"}
    if ev.text is not None:
        out["text"] = ev.text
    if ev.glyph_height > 0:
        out["glyph_height"] = float(ev.glyph_height)
    angle = _normalized_angle(ev.angle)
    if ev.mirrored and angle in (180.0, -180.0):  # mirrored upside down: a vertical flip
        out["op"] = {"op": "flip", "direction": "vertical"}
    elif ev.mirrored and angle == 0.0:
        out["op"] = {"op": "flip", "direction": "horizontal"}
    elif angle != 0.0:  # a mirror at another angle needs two ops; records hold one
        out["op"] = {"op": "rotate", "angle": _normalized_angle(-ev.angle)}
    elif op is not None:
        out["op"] = dict(op)
    return out


def _contrast_ops(task: Task) -> dict[str, dict[str, Any]]:
    ops: dict[str, dict[str, Any]] = {}
    enhance = ("autocontrast", "equalize", "threshold", "enhance")
    for cp in task.checkpoints:
        if cp.kind == "contrast_op" and "evidence" in cp.params:
            tools = [t for t in cp.params.get("tools") or () if t in enhance]
            ops.setdefault(cp.params["evidence"],
                           {"op": "enhance", "tool": tools[0] if tools else "autocontrast"})
    return ops


def _visual_check(ev: Evidence, description: str) -> dict[str, str]:
    if ev.text:
        return {"question": "What text is shown in this image? Reply with the text only.",
                "expected_answer": ev.text}
    return {"question": f"Does this image clearly show {description or 'the evidence'}? "
                        "Answer yes or no.", "expected_answer": "yes"}


def checkpoint_to_amme(cp: Checkpoint, task: Task, regions: Mapping[str, dict[str, Any]]
                       ) -> dict[str, Any]:
    """Return m3gym checkpoint ``cp`` of ``task`` as an Agentic-MME checkpoint.

    Search checkpoints stay on S with Agentic-MME's tool names; every visual checkpoint goes to
    Agentic-MME's V axis (its S axis holds search only): ``tools`` (any of them passes there),
    a ``code_check`` whose ``require_op:<tool>`` verifier names the one the reference uses, the
    evidence ``region``, and for ``v_true`` (tools: the reference's image tools) a
    ``visual_check`` its judge answers. ``m3gym`` keeps the original kind and params.
    """
    params = dict(cp.params)
    out: dict[str, Any] = {"id": cp.id, "description": cp.description}
    ev_id = params.get("evidence")
    if cp.kind in ("search_hit", "fetch"):
        tool = SEARCH_TOOLS.get(str(params.get("tool", "web_search")), "google_search")
        out.update(axis="S", tools=[tool])
        if cp.kind == "fetch":
            out["description"] = f"{cp.description} (open {params.get('url', '')})".strip()
    else:
        used = reference_image_tools(task)
        if cp.kind == "crop_covers":
            tools = ["crop"]
        elif cp.kind == "rotate_upright":
            tools = sorted({"rotate", "flip"}, key=lambda t: (t not in used, t))
        elif cp.kind == "v_true":
            tools = used or ["crop"]
        else:
            tools = sorted(params.get("tools") or ["crop"], key=lambda t: t not in used)
        out.update(axis="V", tools=tools, code_check={"verifier": f"require_op:{tools[0]}"})
        if ev_id is not None:
            out["region"] = regions[ev_id]
            if cp.kind == "v_true":
                out["visual_check"] = _visual_check(task.evidence_by_id(ev_id), cp.description)
    out["m3gym"] = {"axis": cp.axis, "kind": cp.kind, "params": _jsonable(params)}
    return out


def judge_to_amme(judge: Mapping[str, Any], expected: Mapping[str, str]) -> dict[str, Any]:
    """Return a record's judge checkpoint as the Agentic-MME checkpoint it would come from.

    V: a ``visual_check`` (the expected answer from ``expected``, default ``yes``) with the
    crop verifier Agentic-MME puts beside one; S: a ``google_search`` requirement.
    """
    jid = str(judge["id"])
    extra = {"judge": True} | ({} if judge.get("image") is None else {"image": judge["image"]})
    if judge.get("axis") == "S":
        return {"id": jid, "axis": "S", "tools": ["google_search"],
                "description": str(judge["question"]), "m3gym": extra}
    return {"id": jid, "axis": "V", "tools": ["crop"],
            "code_check": {"verifier": "require_op:crop"},
            "visual_check": {"question": str(judge["question"]),
                             "expected_answer": str(expected.get(jid, "yes"))},
            "m3gym": extra}


def reference_image_tools(task: Task) -> list[str]:
    """Return the image tools of ``task``'s reference trajectory, first use first."""
    out: list[str] = []
    for call in task.reference_calls:
        if call.name not in SEARCH_TOOLS and call.name not in ("fetch_webpage", "answer") \
                and call.name not in out:
            out.append(call.name)
    return out


def _jsonable(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda v: v.tolist() if isinstance(
        v, np.ndarray) else list(v) if isinstance(v, (tuple, set, frozenset)) else str(v)))


def _ordering(task: Task, cps: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Ordering constraints: a checkpoint after the one of a reference call it depends on."""
    calls = task.reference_calls
    position = {c.id: i for i, c in enumerate(calls)}
    owner: dict[str, str] = {}  # reference call id -> first checkpoint id it satisfies
    used: set[str] = set()
    for cp in cps:
        names = set(cp.get("tools") or ())
        names |= {k for k, v in SEARCH_TOOLS.items() if v in names}
        call = next((c for c in calls if c.name in names and c.id not in used), None)
        if call is not None:
            used.add(call.id)
            owner[call.id] = cp["id"]
    out = []
    for c in calls:
        for dep in c.depends_on:
            if c.id in owner and dep in owner and owner[c.id] != owner[dep]:
                gap = position[c.id] - position[dep] - 1
                out.append({"id": f"o{len(out) + 1}", "sequence": [owner[dep], owner[c.id]],
                            "max_gap": gap + EXPORT_GAP_SLACK})
    return out


def task_to_amme(task: Task, number: int) -> dict[str, Any]:
    """Return ``task`` as an Agentic-MME task dict (file ``json/<number:04d>.json``).

    A task built from an imported Agentic-MME record is written back as it came (its
    ``source["task"]`` with the record's question and answer). Any other task gets checkpoints
    from its S/V checkpoints (:func:`checkpoint_to_amme`), ordering constraints from the
    reference's dependencies, efficiency from the reference's call count, and an ``m3gym``
    block (ignored by Agentic-MME) with what its format has no place for (choices, variants).
    """
    meta = task.metadata or {}
    source = meta.get("source") or {}
    if source.get("format") == FORMAT and isinstance(source.get("task"), Mapping):
        out = copy.deepcopy(dict(source["task"]))
        out["input"] = {"prompt": task.question, **(out.get("input") or {})}
        golden = dict(out.get("golden_answer") or {})
        if value_text(golden.get("value")) != task.answer.value:
            golden["value"] = task.answer.value
        out["golden_answer"] = golden
        return out
    ops = _contrast_ops(task)
    regions = {ev.id: evidence_record(ev, ops.get(ev.id)) for ev in task.evidence}
    record_meta = meta.get("record_metadata") or {}
    cps: list[dict[str, Any]] = []
    for cp in task.checkpoints:
        out = checkpoint_to_amme(cp, task, regions)
        search = [c for c in cps if c["axis"] == "S" and c["m3gym"]["kind"] == "search_hit"]
        if cp.kind == "fetch" and search:
            # Agentic-MME has no fetch checkpoint and matches one search call per checkpoint:
            # opening the found page is part of the search requirement before it.
            search[-1]["description"] = f"{search[-1]['description']}; {out['description']}"
            search[-1]["m3gym"].setdefault("fetch", []).append(out["m3gym"] | {"id": cp.id})
            continue
        cps.append(out)
    expected = (record_meta.get("amme") or {}).get("judge_expected") or {}
    cps += [judge_to_amme(j, expected) for j in meta.get("judge_checkpoints") or ()]
    prompt = task.question + (choices_suffix(task.choices) if task.choices else "")
    golden: dict[str, Any] = {"value": task.answer.value,
                              "match_type": "numeric" if task.answer.match == "numeric"
                              else "exact"}
    if task.answer.match == "numeric":
        golden["tolerance"] = float(task.answer.tolerance)
    record_id = meta.get("record_id")
    extra: dict[str, Any] = {"id": str(record_id or task.task_id), "task_id": task.task_id,
                             "family": task.family}
    if task.choices:
        extra["choices"] = list(task.choices)
    if task.answer.variants:
        extra["variants"] = list(task.answer.variants)
    if meta.get("answer_match") == "choice":  # a record's; Agentic-MME matches it exactly
        extra["match"] = "choice"
    if record_id is not None:
        extra["source"] = _jsonable(dict(source))
        extra["metadata"] = _jsonable(dict(record_meta))
    return {
        "task_id": f"{number:04d}",
        "input": {"prompt": prompt},
        "meta": {"level": int(task.level), "domain": task.domain},
        "golden_answer": golden,
        "process_evaluation": {
            "checkpoints": cps,
            "ordering_constraints": _ordering(task, cps),
            "efficiency": {"reference_tool_calls": len(task.reference_calls),
                           "penalty_per_extra_call": EXPORT_PENALTY_PER_EXTRA_CALL,
                           "max_tool_calls": EXPORT_MAX_TOOL_CALLS},
        },
        "m3gym": extra,
    }


def value_text(value: Any) -> str:
    """Return an answer value as m3gym's answer string (``12.0`` → ``"12"``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _task_number(task: Task, used: set[int]) -> int | None:
    source = (task.metadata or {}).get("source") or {}
    sid = str(source.get("id", ""))
    if source.get("format") == FORMAT and re.fullmatch(r"\d{1,9}", sid) and int(sid) not in used:
        return int(sid)
    return None


def export_amme(tasks: Iterable[Task], folder: str | os.PathLike[str]) -> list[Path]:
    """Write ``tasks`` as Agentic-MME folder ``folder`` and return the task files written.

    Files: ``json/NNNN.json`` and ``image/image_NNNN.png`` (one image) or
    ``image/image_NNNN_K.png`` (K = 1, 2, ... for several). Tasks imported from Agentic-MME keep
    their number; the others are numbered from 1 upwards, skipping numbers in use.
    """
    root = Path(folder)
    (root / "json").mkdir(parents=True, exist_ok=True)
    (root / "image").mkdir(parents=True, exist_ok=True)
    tasks = list(tasks)
    used: set[int] = set()
    numbers: list[int | None] = []
    for task in tasks:
        n = _task_number(task, used)
        numbers.append(n)
        if n is not None:
            used.add(n)
    written: list[Path] = []
    nxt = 1
    for task, number in zip(tasks, numbers):
        if number is None:
            while nxt in used:
                nxt += 1
            number = nxt
            used.add(number)
        stem = f"{number:04d}"
        names = ([f"image_{stem}.png"] if len(task.images) == 1 else
                 [f"image_{stem}_{k}.png" for k in range(1, len(task.images) + 1)])
        for name, image in zip(names, task.images):
            (root / "image" / name).write_bytes(png_bytes(np.asarray(image)))
        path = root / "json" / f"{stem}.json"
        path.write_text(json.dumps(task_to_amme(task, number), indent=2, ensure_ascii=False)
                        + "\n", encoding="utf-8")
        written.append(path)
    return written
