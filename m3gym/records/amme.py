"""Agentic-MME's task folders in and out of m3gym records (see ``docs/agentic-mme.md``).

An Agentic-MME dataset is a folder ``json/NNNN.json`` (one task each) with its images in
``image/`` (or ``images/``): ``image_NNNN.png`` for one image, ``image_NNNN_1.png``,
``image_NNNN_2.png``, ... for several. A task has ``input.prompt`` (the question), ``meta.level``,
``golden_answer`` (``value``, ``match_type``, ``tolerance``) and ``process_evaluation``
(``checkpoints``, ``ordering_constraints``, ``efficiency``).

* :func:`amme_to_record` (pure) turns one task dict into one m3gym record dict: checkpoints that
  m3gym can verify exactly (a ``region`` box, with the op it needs) become ``evidence``; a
  checkpoint without a region whose ``code_check`` verifier names an op (``require_op:rotate``,
  ``verify_crop_ast``) becomes one of ``required_ops`` (the op applied to a full input image);
  ``visual_check`` questions without a region and ``google_search`` strategy checkpoints become
  ``judge_checkpoints`` (scored only by :mod:`m3gym.records.judge`, never in S/V); everything
  else is kept in ``source["task"]`` so :func:`export_amme` writes the task back unchanged.
* :func:`import_amme` converts a whole folder into a records JSONL file.
* :func:`task_to_amme` / :func:`export_amme` write m3gym tasks (a procedural family's or a
  record's) as such a folder, with checkpoints Agentic-MME's own evaluator reads.

Agentic-MME's released checkpoints name operations, not regions: such a task imports with
``required_ops`` and judge checkpoints. ``region`` (an m3gym evidence object on a checkpoint) is
the one key m3gym adds to verify a region exactly; the Agentic-MME harness ignores it.
"""

from __future__ import annotations

import copy
import json
import math
import os
import re
import warnings
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from m3gym.codec import png_bytes
from m3gym.records.guard import resolved_inside
from m3gym.records.validate import validate_rows
from m3gym.spec import DOMAINS, Checkpoint, Evidence, Task
from m3gym.view import VIEW_SIZE

FORMAT = "agentic-mme"
"""The ``source["format"]`` of records imported from (and exported back to) Agentic-MME."""

MATCH_TYPES: dict[str, str] = {
    "exact": "exact",
    "exact_match": "exact",
    "contains": "exact",
    "string": "exact",
    "keyword_inclusion": "exact",
    "numeric": "number",
}
"""Agentic-MME ``golden_answer.match_type`` → m3gym record ``answer.match``. A missing or unknown
type is Agentic-MME's default ``contains`` and maps to ``exact`` like it."""

LOOSER_MATCH_TYPES: frozenset[str] = frozenset({"contains", "string", "keyword_inclusion"})
"""Agentic-MME types that accept hedges (``contains`` passes "X or Y"): imported as m3gym's
strict ``exact``, the original kept in ``metadata["amme"]["match_type"]``."""

SEARCH_TOOLS: dict[str, str] = {"web_search": "google_search", "image_search": "google_lens_search"}
"""m3gym retrieval tool → the name Agentic-MME's harness gives it."""

IMAGE_EXTS: tuple[str, ...] = (".png", ".jpg", ".jpeg")
IMAGE_DIRS: tuple[str, ...] = ("image", "images")
EXPORT_PENALTY_PER_EXTRA_CALL = 0.1
"""``efficiency.penalty_per_extra_call`` written by :func:`task_to_amme`."""
EXPORT_MAX_TOOL_CALLS = 15
"""``efficiency.max_tool_calls`` written by :func:`task_to_amme` (the reference harness budget)."""
EXPORT_GAP_SLACK = 2
"""Ordering constraints allow this many extra calls between two dependent reference calls."""

_OP_PRIMITIVES: tuple[str, ...] = ("crop", "rotate", "flip", "resize", "enhance")
_REQUIRED_PRIMITIVES: tuple[str, ...] = ("crop", "rotate", "flip", "enhance")
"""Primitives a region-less checkpoint turns into a record's ``required_ops`` (no ``resize``)."""


class AmmeError(ValueError):
    """An Agentic-MME task that cannot become a record (the message says why)."""


@dataclass
class ImportResult:
    """What :func:`import_amme` did: the records written and each task it could not import."""

    records: list[dict[str, Any]] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------
# Agentic-MME -> record


def _checkpoint_op(cp: Mapping[str, Any]) -> str | None:
    """Return the primitive a checkpoint's ``code_check`` verifier names (as Agentic-MME)."""
    check = cp.get("code_check")
    verifier = str(check.get("verifier") or "").lower() if isinstance(check, Mapping) else ""
    if any(t in verifier for t in ("autocontrast", "equalize", "threshold")):
        return "enhance"  # m3gym's export names the contrast tool its reference uses
    return next((p for p in _OP_PRIMITIVES if p in verifier), None)


def _answer(golden: Mapping[str, Any], where: str) -> tuple[dict[str, Any], str]:
    if "value" not in golden:
        raise AmmeError(f"{where}: golden_answer has no value")
    value = golden["value"]
    if isinstance(value, bool) or not isinstance(value, (str, int, float)) or (
            isinstance(value, str) and not value.strip()):
        raise AmmeError(f"{where}: golden_answer.value must be a non-empty string or a number, "
                        f"got {value!r}")
    original = str(golden.get("match_type") or "contains")
    match = MATCH_TYPES.get(original, "exact")
    answer: dict[str, Any] = {"value": value, "match": match}
    if match == "number":
        tol = golden.get("tolerance", 0.0)
        try:
            tolerance = float(tol)
            number = float(str(value).replace(",", ""))
        except (TypeError, ValueError):
            raise AmmeError(f"{where}: numeric golden_answer needs a number value and tolerance, "
                            f"got value {value!r}, tolerance {tol!r}") from None
        if not (math.isfinite(tolerance) and tolerance >= 0 and math.isfinite(number)):
            raise AmmeError(f"{where}: numeric golden_answer has a bad tolerance {tol!r}")
        answer["tolerance"] = tolerance
    return answer, original


def _question_and_choices(task: Mapping[str, Any], where: str) -> tuple[str, list[str] | None]:
    given = task.get("input")
    prompt = given.get("prompt") if isinstance(given, Mapping) else None
    if not isinstance(prompt, str) or not prompt.strip():
        raise AmmeError(f"{where}: input.prompt (the question) is missing or empty")
    prompt = prompt.strip()
    choices = _extra(task, where).get("choices")
    if choices:
        suffix = choices_suffix(choices).strip()
        if prompt.endswith(suffix):
            prompt = prompt[: -len(suffix)].strip()
        return prompt, list(choices)
    return prompt, None


_EXTRA_TYPES: dict[str, tuple[type, ...]] = {
    "id": (str,), "task_id": (str,), "family": (str,), "match": (str,), "choices": (list,),
    "variants": (list,), "source": (dict,), "metadata": (dict,)}


def _extra(task: Mapping[str, Any], where: str) -> dict[str, Any]:
    """Return the task's ``m3gym`` block (written by :func:`task_to_amme`), checked."""
    extra = task.get("m3gym")
    if extra is None:
        return {}
    if not isinstance(extra, Mapping):
        raise AmmeError(f"{where}: the m3gym block must be an object")
    for key, value in extra.items():
        if key in _EXTRA_TYPES and not isinstance(value, _EXTRA_TYPES[key]):
            raise AmmeError(f"{where}: m3gym.{key} must be a {_EXTRA_TYPES[key][0].__name__}")
        if key in ("choices", "variants") and not all(isinstance(v, str) for v in value):
            raise AmmeError(f"{where}: m3gym.{key} must be a list of strings")
    return dict(extra)


def _why_unverified(cp: Mapping[str, Any]) -> str:
    op = _checkpoint_op(cp)
    if cp.get("axis") == "V" and op is not None:
        return f"needs op {op} but names no region"
    if cp.get("axis") == "S":
        return "a search requirement (records have no search checkpoints)"
    return f"axis {cp.get('axis')!r} without region, visual_check or answer_check"


def choices_suffix(choices: Sequence[str]) -> str:
    """Return the text :func:`task_to_amme` appends to a multiple-choice question."""
    return "\nChoices: " + "; ".join(choices) + ". Answer with one choice exactly as written."


def amme_to_record(task: Mapping[str, Any], number: str, images: Sequence[str]) -> dict[str, Any]:
    """Return the m3gym record of Agentic-MME task dict ``task`` (file ``json/<number>.json``).

    ``images`` are the record's image paths (in Agentic-MME's order: ``image_NNNN_1``, ...).
    Raises :class:`AmmeError` when the task has no question or answer, or nothing to verify in
    the process (no region, no op a checkpoint requires, no visual or search check).
    """
    where = f"task {number}"
    if not isinstance(task, Mapping):
        raise AmmeError(f"{where}: a task must be a JSON object")
    question, choices = _question_and_choices(task, where)
    golden = task.get("golden_answer")
    if not isinstance(golden, Mapping):
        raise AmmeError(f"{where}: golden_answer is missing")
    answer, original_match = _answer(golden, where)
    extra = _extra(task, where)
    if extra.get("variants"):
        answer["variants"] = list(extra["variants"])
    if extra.get("match") == "choice" and choices:
        answer["match"] = "choice"

    process = task.get("process_evaluation") or {}
    if not isinstance(process, Mapping):
        raise AmmeError(f"{where}: process_evaluation must be an object")
    checkpoints = process.get("checkpoints") or []
    if not isinstance(checkpoints, list):
        raise AmmeError(f"{where}: process_evaluation.checkpoints must be a list")
    evidence: list[dict[str, Any]] = []
    judges: list[dict[str, Any]] = []
    required: list[dict[str, Any]] = []
    expected: dict[str, str] = {}
    unverified: dict[str, str] = {}
    for i, cp in enumerate(checkpoints):
        if not isinstance(cp, Mapping):
            raise AmmeError(f"{where}: process_evaluation.checkpoints[{i}] must be an object")
        cid = str(cp.get("id") or f"checkpoint_{i}")
        region = cp.get("region")
        if region is not None:
            if not isinstance(region, Mapping):
                raise AmmeError(f"{where}: checkpoint {cid} region must be an evidence object")
            ev = dict(region)
            same = [e for e in evidence if ("id" in ev and e.get("id") == ev["id"]) or e == ev]
            if not same:
                evidence.append(ev)
            elif same[0] != ev:
                raise AmmeError(f"{where}: checkpoint {cid} gives evidence {ev.get('id')!r} a "
                                "different region than an earlier checkpoint")
            continue
        axis = cp.get("axis")
        raw_tools = cp.get("tools") or []
        tools = {str(t).lower() for t in raw_tools} if isinstance(raw_tools, list) else set()
        vc = cp.get("visual_check")
        m3 = cp.get("m3gym") if isinstance(cp.get("m3gym"), Mapping) else {}
        image = m3.get("image")
        op = _checkpoint_op(cp)
        if op in _REQUIRED_PRIMITIVES and not m3.get("judge") and {"op": op} not in required:
            required.append({"op": op})  # a judge written by judge_to_amme names crop for show
        if axis == "V" and isinstance(vc, Mapping) and vc.get("question"):
            judges.append({"id": cid, "axis": "V", "question": str(vc["question"])}
                          | ({} if image is None else {"image": image}))
            expected[cid] = str(vc.get("expected_answer", ""))
        elif axis == "S" and "google_search" in tools and cp.get("description"):
            judges.append({"id": cid, "axis": "S", "question": str(cp["description"])})
            expected[cid] = "yes"
        elif "answer_check" in cp:
            continue  # the final-answer checkpoint: m3gym scores the answer itself
        elif op in _REQUIRED_PRIMITIVES and not m3.get("judge"):
            continue  # a required op
        else:
            unverified[cid] = _why_unverified(cp)
    if not evidence and not required and not judges:
        raise AmmeError(f"{where}: nothing to verify in the process: no checkpoint carries an "
                        "evidence region, an op verifier (require_op:<op>, verify_<op>_ast) or "
                        "a visual_check / google_search requirement")

    source_task = copy.deepcopy(dict(task))
    source_task.pop("m3gym", None)
    source_task["input"] = {k: v for k, v in (task.get("input") or {}).items() if k != "prompt"}
    record: dict[str, Any] = {"id": str(extra.get("id") or number), "images": list(images),
                              "question": question, "answer": answer}
    if choices is not None:
        record["choices"] = choices
    if evidence:
        record["evidence"] = evidence
    if required:
        record["required_ops"] = required
    if judges:
        record["judge_checkpoints"] = judges
    meta = task.get("meta") if isinstance(task.get("meta"), Mapping) else {}
    level = meta.get("level")
    if isinstance(level, int) and not isinstance(level, bool) and level in (1, 2, 3):
        record["level"] = level
    domain = meta.get("domain")
    record["domain"] = domain if domain in DOMAINS else "Life"
    if extra:  # written by task_to_amme: restore the m3gym task's own source and metadata
        record["source"] = dict(extra["source"]) if "source" in extra else {
            "format": "m3gym", "task_id": extra.get("task_id"), "family": extra.get("family")}
        record["metadata"] = dict(extra.get("metadata") or {})
        return record
    record["source"] = {"format": FORMAT, "id": number, "task": source_task}
    amme: dict[str, Any] = {"match_type": original_match}
    if expected:
        amme["judge_expected"] = expected
    if unverified:
        amme["unverified_checkpoints"] = unverified
    record["metadata"] = {"amme": amme}
    return record


def task_images(folder: Path, number: str) -> list[Path]:
    """Return the image files of task ``number`` as Agentic-MME's loader finds them.

    ``image_NNNN_1.png``, ``image_NNNN_2.png``, ... (first in ``image/``, then ``images/``), else
    ``image_NNNN.png``; ``.jpg``/``.jpeg`` accepted. Raises :class:`AmmeError` when none exists.
    """
    padded = f"{int(number):04d}" if number.isdigit() else number
    dirs = [folder / d for d in IMAGE_DIRS if (folder / d).is_dir()]
    for d in dirs:
        found: list[Path] = []
        while True:
            k = len(found) + 1
            hit = next((d / f"image_{padded}_{k}{ext}" for ext in IMAGE_EXTS
                        if (d / f"image_{padded}_{k}{ext}").is_file()), None)
            if hit is None:
                break
            found.append(hit)
        if found:
            return found
    for d in dirs:
        for ext in IMAGE_EXTS:
            if (d / f"image_{padded}{ext}").is_file():
                return [d / f"image_{padded}{ext}"]
    raise AmmeError(f"task {number}: no image_{padded}.png or image_{padded}_1.png in "
                    f"{' or '.join(str(folder / d) for d in IMAGE_DIRS)}")


def import_amme(folder: str | os.PathLike[str], out_jsonl: str | os.PathLike[str],
                view_size: int = VIEW_SIZE, allow_outside: bool = False) -> ImportResult:
    """Convert Agentic-MME folder ``folder`` (``json/`` + ``image/``) into records ``out_jsonl``.

    Image paths in the records are relative to ``out_jsonl``'s folder. Every record passes the
    records validator (:func:`m3gym.records.validate.validate_rows`, image headers only). Tasks
    that cannot become records are listed in :attr:`ImportResult.skipped` (file name, reason)
    and the others are written: an unreadable or too deeply nested task file, a task file or
    image that resolves outside ``folder`` (a symlink; unless ``allow_outside``), a task the
    validator rejects. Nothing a task holds stops the import.

    Raises :class:`AmmeError` when ``folder`` has no ``json/`` folder of tasks, or (unless
    ``allow_outside``) when ``out_jsonl``'s folder does not hold ``folder``: the records' image
    paths would leave the records' folder, which loading them refuses.
    """
    root = Path(folder)
    files = sorted((root / "json").glob("*.json")) if (root / "json").is_dir() else []
    if not files:
        raise AmmeError(f"{root} has no json/*.json task files (an Agentic-MME dataset folder "
                        "holds json/ and image/)")
    out = Path(out_jsonl)
    if not allow_outside and not resolved_inside(root, out.parent)[0]:
        raise AmmeError(f"the records file {out} is not in a folder holding the dataset folder "
                        f"{root}: its image paths would leave the records' folder; write it "
                        "inside the dataset folder (e.g. records.jsonl there), or opt out with "
                        "allow_outside=True (--allow-outside)")
    if allow_outside:
        warnings.warn(f"import-amme {root}: allow_outside=True lets task files and images "
                      "outside the dataset folder in, and image paths outside the records' "
                      "folder out", UserWarning, stacklevel=2)
    out.parent.mkdir(parents=True, exist_ok=True)  # the validator resolves paths through it
    result = ImportResult()
    seen: dict[str, str] = {}
    lines: list[str] = []
    for path in files:
        try:
            record, line = _import_task(root, path, out, view_size, allow_outside)
        except AmmeError as exc:
            result.skipped.append((path.name, str(exc)))
            continue
        except RecursionError:
            result.skipped.append((path.name, f"task {path.stem}: nested too deeply to convert"))
            continue
        except Exception as exc:  # noqa: BLE001 - one odd task never stops the import
            result.skipped.append((path.name, f"task {path.stem}: cannot be converted "
                                              f"({type(exc).__name__}: not the Agentic-MME "
                                              "task layout)"))
            continue
        if record["id"] in seen:
            result.skipped.append((path.name, f"task {path.stem}: duplicate record id "
                                              f"{record['id']!r} (first in {seen[record['id']]})"))
            continue
        seen[record["id"]] = path.name
        result.records.append(record)
        lines.append(line)
    out.write_text("".join(lines), encoding="utf-8")
    return result


def _import_task(root: Path, path: Path, out: Path, view_size: int, allow_outside: bool
                 ) -> tuple[dict[str, Any], str]:
    """Return the record of task file ``path`` and its JSONL line; :class:`AmmeError` if none."""
    number = path.stem
    if not allow_outside and not resolved_inside(path, root)[0]:
        raise AmmeError(f"task {number}: json/{path.name} leaves the dataset folder {root} "
                        "(a symlink); opt out with allow_outside=True (--allow-outside)")
    try:
        text = path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise AmmeError(f"not readable JSON: not UTF-8 text (byte {exc.start})") from None
    except OSError as exc:
        raise AmmeError(f"not readable JSON: cannot read the file ({type(exc).__name__})"
                        ) from None
    try:
        task = json.loads(text)
    except json.JSONDecodeError as exc:
        raise AmmeError(f"not readable JSON: {exc.msg} (line {exc.lineno}, column {exc.colno})"
                        ) from None
    except RecursionError:
        raise AmmeError("not readable JSON: nested too deeply") from None
    images = task_images(root, number)
    if not allow_outside:
        for q in images:
            if not resolved_inside(q, root)[0]:
                raise AmmeError(f"task {number}: image {q.relative_to(root).as_posix()} leaves "
                                f"the dataset folder {root} (a symlink); opt out with "
                                "allow_outside=True (--allow-outside)")
    rel = [Path(os.path.relpath(p, out.parent.resolve())).as_posix()
           for p in (q.resolve() for q in images)]
    record = amme_to_record(task, number, rel)
    # the records validator (boxes inside the images, ops, ids): what fails it is not written
    check = validate_rows([(f"task {number}", record)], out.parent, view_size=view_size,
                          allow_outside=allow_outside)
    if check.problems:
        raise AmmeError(check.problems[0])
    return record, json.dumps(record, ensure_ascii=False) + "\n"


# ---------------------------------------------------------------------------------------------
# m3gym task -> Agentic-MME


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
