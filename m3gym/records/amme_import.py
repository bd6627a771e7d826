"""Agentic-MME task folders into m3gym records, and the format's vocabulary.

:func:`amme_to_record` (pure) turns one Agentic-MME task dict into one m3gym record dict;
:func:`import_amme` converts a whole folder into a records JSONL file (:mod:`m3gym.records.amme`
describes the folder layout and how each kind of checkpoint is imported).
"""

from __future__ import annotations

import copy
import json
import math
import os
import warnings
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m3gym.records.guard import resolved_inside
from m3gym.records.validate import validate_rows
from m3gym.spec import DOMAINS
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

IMAGE_EXTS: tuple[str, ...] = (".png", ".jpg", ".jpeg")
IMAGE_DIRS: tuple[str, ...] = ("image", "images")

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
