"""The records format: one grounded image-QA record per task (see ``docs/records.md``).

:func:`parse_record` turns one raw mapping (a JSONL line, a CSV/parquet row, a dataset row) into a
:class:`Record`, or raises :class:`RecordProblems` listing *every* problem it found in it. Nothing
here reads an image: image checks (existence, size, boxes inside the image) are in
:mod:`m3gym.records.validate`.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m3gym.spec import DOMAINS
from m3gym.urls import normalize_url

MATCH_TYPES: tuple[str, ...] = ("exact", "number", "choice")
"""How an answer is matched: m3gym's normalised exact match, a number within ``tolerance``, or
an exact match among the record's ``choices``."""

UNITS: tuple[str, ...] = ("px", "norm1000")
"""Units of an evidence box: source pixels, or 0-1000 normalised to the image's width/height."""

OPS: tuple[str, ...] = ("rotate", "flip", "enhance")
"""Operations an evidence may need besides its crop."""

REQUIRED_OPS: tuple[str, ...] = ("crop", "rotate", "flip", "enhance")
"""Operations a record's ``required_ops`` may name: ops without a region, that the process must
apply to a full input image (Agentic-MME's ``require_op:<op>``)."""

REQUIRED_OP_KEYS: tuple[str, ...] = ("op", "image")
"""Keys of one ``required_ops`` item (``image``: the input image, default 0)."""

FLIP_DIRECTIONS: tuple[str, ...] = ("horizontal", "vertical")
"""Directions of a ``flip`` op."""

ENHANCE_TOOLS: tuple[str, ...] = ("autocontrast", "equalize", "threshold", "enhance")
"""Contrast tools an ``enhance`` op may name (``tool``; default ``autocontrast``)."""

TOP_KEYS: tuple[str, ...] = (
    "id", "images", "question", "answer", "choices", "evidence", "knowledge", "level", "domain",
    "metadata", "source", "judge_checkpoints", "required_ops",
)
"""Every top-level key a record may have (any other key is rejected: typos never pass)."""

ANSWER_KEYS: tuple[str, ...] = ("value", "match", "tolerance", "variants")
EVIDENCE_KEYS: tuple[str, ...] = ("image", "box", "units", "id", "text", "glyph_height", "op")
KNOWLEDGE_KEYS: tuple[str, ...] = ("title", "text", "url")
JUDGE_KEYS: tuple[str, ...] = ("id", "axis", "question", "image")
OP_KEYS: dict[str, tuple[str, ...]] = {"rotate": ("op", "angle"), "flip": ("op", "direction"),
                                       "enhance": ("op", "tool")}


class RecordProblems(ValueError):
    """The problems found in one record (``problems``: one reason each)."""

    def __init__(self, problems: Sequence[str]) -> None:
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))


@dataclass(frozen=True)
class EvidenceOp:
    """What an evidence needs besides its crop.

    ``rotate``: ``angle`` is the counter-clockwise rotation (the ``rotate`` tool's convention)
    that makes the evidence upright. ``flip``: ``direction`` undoes a mirror image.
    ``enhance``: a contrast op (``tool`` names the reference's, any contrast tool passes).
    """

    op: str
    angle: float = 0.0
    direction: str = "horizontal"
    tool: str = "autocontrast"


@dataclass(frozen=True)
class EvidenceRecord:
    """One evidence region as written in the record (box in ``units``)."""

    box: tuple[float, float, float, float]
    image: int = 0
    units: str = "px"
    id: str | None = None
    text: str | None = None
    glyph_height: float | None = None
    op: EvidenceOp | None = None


@dataclass(frozen=True)
class AnswerRecord:
    """The ground truth: ``value`` matched by ``match`` (with ``tolerance`` for numbers)."""

    value: str | int | float
    match: str = "exact"
    tolerance: float = 0.0
    variants: tuple[str, ...] = ()


@dataclass(frozen=True)
class KnowledgeEntry:
    """A knowledge page the record's question needs (title, text, optional url)."""

    title: str
    text: str
    url: str | None = None


@dataclass(frozen=True)
class JudgeCheckpoint:
    """A checkpoint that needs a visual judge: kept in metadata, never scored in S/V."""

    id: str
    axis: str
    question: str
    image: int | None = None


@dataclass(frozen=True)
class RequiredOp:
    """An op the process must apply to input image ``image`` (no region: any part of it)."""

    op: str
    image: int = 0


@dataclass(frozen=True)
class Record:
    """One validated record: one task.

    ``images`` are the paths as written; ``image_paths`` the absolute paths (relative ones
    joined to the records' folder). ``where`` locates the record in its source (``line 3``,
    ``row 2``) for messages. ``folder`` is the folder every image must resolve into (the records
    file's folder, ``base_dir`` or the working directory) unless ``allow_outside``
    (:mod:`m3gym.records.guard`).
    """

    id: str
    images: tuple[str, ...]
    image_paths: tuple[Path, ...]
    question: str
    answer: AnswerRecord
    evidence: tuple[EvidenceRecord, ...]
    choices: tuple[str, ...] | None = None
    knowledge: tuple[KnowledgeEntry, ...] = ()
    level: int | None = None
    domain: str = "Life"
    metadata: Mapping[str, Any] = field(default_factory=dict)
    source: Mapping[str, Any] = field(default_factory=dict)
    judge_checkpoints: tuple[JudgeCheckpoint, ...] = ()
    required_ops: tuple[RequiredOp, ...] = ()
    where: str = ""
    folder: Path | None = field(default=None, compare=False)
    allow_outside: bool = field(default=False, compare=False)


# ---------------------------------------------------------------------------------------------
# parsing


def _is_number(value: Any) -> bool:
    return (isinstance(value, (int, float)) and not isinstance(value, bool)
            and math.isfinite(float(value)))


def _nonempty_str(value: Any) -> bool:
    return isinstance(value, str) and value.strip() != ""


def _unknown(raw: Mapping[str, Any], allowed: Sequence[str], what: str) -> list[str]:
    return [f"unknown key {k!r} in {what} (allowed: {', '.join(allowed)})"
            for k in raw if k not in allowed]


def _parse_op(raw: Any, where: str, problems: list[str]) -> EvidenceOp | None:
    if not isinstance(raw, Mapping):
        problems.append(f"{where}.op must be an object like {{\"op\": \"rotate\", \"angle\": 90}}")
        return None
    name = raw.get("op")
    if name not in OPS:
        problems.append(f"{where}.op has unknown op {name!r} (known: {', '.join(OPS)})")
        return None
    bad = _unknown(raw, OP_KEYS[name], f"{where}.op")
    problems += bad
    if name == "rotate":
        angle = raw.get("angle")
        if not _is_number(angle) or float(angle) % 360.0 == 0.0:
            problems.append(f"{where}.op rotate needs a non-zero numeric angle, got {angle!r}")
            return None
        return None if bad else EvidenceOp("rotate", angle=float(angle))
    if name == "flip":
        direction = raw.get("direction", "horizontal")
        if direction not in FLIP_DIRECTIONS:
            problems.append(f"{where}.op flip direction must be one of "
                            f"{', '.join(FLIP_DIRECTIONS)}, got {direction!r}")
            return None
        return None if bad else EvidenceOp("flip", direction=str(direction))
    tool = raw.get("tool", "autocontrast")
    if tool not in ENHANCE_TOOLS:
        problems.append(f"{where}.op enhance needs a contrast tool among "
                        f"{', '.join(ENHANCE_TOOLS)}, got {tool!r}")
        return None
    return None if bad else EvidenceOp("enhance", tool=str(tool))


def _parse_evidence(raw: Any, i: int, problems: list[str]) -> EvidenceRecord | None:
    where = f"evidence[{i}]"
    if not isinstance(raw, Mapping):
        problems.append(f"{where} must be an object with a box")
        return None
    n = len(problems)
    problems += _unknown(raw, EVIDENCE_KEYS, where)
    image = raw.get("image", 0)
    if not isinstance(image, int) or isinstance(image, bool) or image < 0:
        problems.append(f"{where}.image must be a non-negative integer, got {image!r}")
    units = raw.get("units", "px")
    if units not in UNITS:
        problems.append(f"{where} has bad units {units!r} (use px or norm1000)")
    box = raw.get("box")
    if (not isinstance(box, (list, tuple)) or len(box) != 4
            or not all(_is_number(v) for v in box)):
        problems.append(f"{where}.box must be 4 numbers [x0, y0, x1, y1], got {box!r}")
    elif not (box[0] < box[2] and box[1] < box[3]):
        problems.append(f"{where}.box {list(box)} is empty (need x0 < x1 and y0 < y1)")
    elif min(box) < 0:
        problems.append(f"{where}.box {list(box)} has a negative coordinate")
    elif units == "norm1000" and max(box) > 1000:
        problems.append(f"{where}.box {list(box)} exceeds 1000 in norm1000 units")
    eid = raw.get("id")
    if eid is not None and not _nonempty_str(eid):
        problems.append(f"{where}.id must be a non-empty string")
    text = raw.get("text")
    if text is not None and not isinstance(text, str):
        problems.append(f"{where}.text must be a string")
    glyph = raw.get("glyph_height")
    if glyph is not None and (not _is_number(glyph) or float(glyph) <= 0):
        problems.append(f"{where}.glyph_height must be a positive number, got {glyph!r}")
    op = _parse_op(raw["op"], where, problems) if raw.get("op") is not None else None
    if len(problems) > n:
        return None
    return EvidenceRecord(box=tuple(float(v) for v in box), image=int(image), units=str(units),
                          id=eid, text=text, glyph_height=None if glyph is None else float(glyph),
                          op=op)


def _parse_required_ops(raw: Any, problems: list[str]) -> list[RequiredOp]:
    """Parse ``required_ops``: a list of ``{"op": <one of REQUIRED_OPS>, "image": k}``."""
    if raw is None:
        return []
    if not isinstance(raw, (list, tuple)):
        problems.append('required_ops must be a list like [{"op": "rotate"}, {"op": "crop"}]')
        return []
    out = []
    for i, item in enumerate(raw):
        where = f"required_ops[{i}]"
        if not isinstance(item, Mapping):
            problems.append(f'{where} must be an object like {{"op": "crop"}}')
            continue
        bad = _unknown(item, REQUIRED_OP_KEYS, where)
        problems += bad
        name = item.get("op")
        image = item.get("image", 0)
        ok = not bad
        if name not in REQUIRED_OPS:
            problems.append(f"{where} has unknown op {name!r} (known: {', '.join(REQUIRED_OPS)})")
            ok = False
        if not isinstance(image, int) or isinstance(image, bool) or image < 0:
            problems.append(f"{where}.image must be a non-negative integer, got {image!r}")
            ok = False
        if ok:
            out.append(RequiredOp(str(name), int(image)))
    return out


def _parse_answer(raw: Any, problems: list[str]) -> AnswerRecord | None:
    if not isinstance(raw, Mapping):
        problems.append('answer must be an object like {"value": "...", "match": "exact"}')
        return None
    n = len(problems)
    problems += _unknown(raw, ANSWER_KEYS, "answer")
    value = raw.get("value")
    if isinstance(value, str):
        if not value.strip():
            problems.append("answer.value is empty")
    elif not _is_number(value):
        problems.append(f"answer.value must be a string or a number, got {value!r}")
    match = raw.get("match", "exact")
    if match not in MATCH_TYPES:
        problems.append(f"unknown match type {match!r} (known: {', '.join(MATCH_TYPES)})")
    tol = raw.get("tolerance", 0)
    if not _is_number(tol) or float(tol) < 0:
        problems.append(f"answer.tolerance must be a non-negative number, got {tol!r}")
    elif float(tol) > 0 and match != "number":
        problems.append("answer.tolerance is only meaningful with match 'number'")
    if match == "number" and isinstance(value, str) and not _parses_as_number(value):
        problems.append(f"answer.value {value!r} is not a number (match 'number')")
    variants = raw.get("variants", [])
    if not isinstance(variants, (list, tuple)) or not all(_nonempty_str(v) for v in variants):
        problems.append("answer.variants must be a list of non-empty strings")
    if len(problems) > n:
        return None
    return AnswerRecord(value=value, match=str(match), tolerance=float(tol),
                        variants=tuple(variants))


def _parses_as_number(text: str) -> bool:
    try:
        return math.isfinite(float(text.replace(",", "")))
    except ValueError:
        return False


def answer_text(value: str | int | float) -> str:
    """Return an answer value as the task's string (``12`` → ``"12"``, ``2.5`` → ``"2.5"``)."""
    if isinstance(value, float) and value.is_integer():
        return str(int(value))
    return str(value)


def _parse_list(raw: Any, name: str, keys: Sequence[str], required: Sequence[str],
                problems: list[str]) -> list[Mapping[str, Any]]:
    if not isinstance(raw, (list, tuple)):
        problems.append(f"{name} must be a list")
        return []
    out = []
    for i, item in enumerate(raw):
        if not isinstance(item, Mapping):
            problems.append(f"{name}[{i}] must be an object")
            continue
        bad = _unknown(item, keys, f"{name}[{i}]")
        missing = [f"{name}[{i}] needs a non-empty string {k!r}" for k in required
                   if not _nonempty_str(item.get(k))]
        problems += bad + missing
        if not bad and not missing:
            out.append(item)
    return out


def parse_record(raw: Any, base_dir: Path | None, where: str = "",
                 allow_outside: bool = False) -> Record:
    """Return the :class:`Record` of mapping ``raw``; raise :class:`RecordProblems` otherwise.

    Relative image paths are resolved against ``base_dir`` (the records file's folder; ``None``:
    the working directory), which is also the folder the images must stay in unless
    ``allow_outside``. Images are neither opened nor checked here.
    """
    if not isinstance(raw, Mapping):
        raise RecordProblems([f"a record must be an object, got {type(raw).__name__}"])
    problems = _unknown(raw, TOP_KEYS, "record")
    rid = raw.get("id")
    if not _nonempty_str(rid):
        problems.append(f"id must be a non-empty string, got {rid!r}")
    images = raw.get("images")
    if (not isinstance(images, (list, tuple)) or not images
            or not all(_nonempty_str(p) for p in images)):
        problems.append(f"images must be a non-empty list of paths, got {images!r}")
        images = None
    question = raw.get("question")
    if not _nonempty_str(question):
        problems.append("empty question" if isinstance(question, str) or question is None
                        else f"question must be a string, got {question!r}")
    answer = _parse_answer(raw.get("answer"), problems)
    choices = raw.get("choices")
    if choices is not None:
        if (not isinstance(choices, (list, tuple)) or len(choices) < 2
                or not all(isinstance(c, str) and c.strip() for c in choices)):
            problems.append("choices must be a list of at least 2 non-empty strings")
            choices = None
        elif len(set(choices)) != len(choices):
            problems.append("choices has duplicates")
        elif answer is not None and answer_text(answer.value) not in choices:
            problems.append(f"choices do not contain the answer {answer_text(answer.value)!r}")
    if answer is not None and answer.match == "choice" and choices is None \
            and raw.get("choices") is None:
        problems.append("match 'choice' needs choices")
    raw_ev = raw.get("evidence", [])
    evidence: list[EvidenceRecord] = []
    if raw_ev is None:
        raw_ev = []
    if not isinstance(raw_ev, (list, tuple)):
        problems.append("evidence must be a list of boxes")
    else:
        for i, item in enumerate(raw_ev):
            ev = _parse_evidence(item, i, problems)
            if ev is not None:
                evidence.append(ev)
        ids = [e.id for e in evidence if e.id is not None]
        if len(set(ids)) != len(ids):
            problems.append("evidence ids are not unique")
    if images is not None:
        for i, ev in enumerate(evidence):
            if ev.image >= len(images):
                problems.append(f"evidence[{i}].image {ev.image} but the record has "
                                f"{len(images)} image(s)")
    required = _parse_required_ops(raw.get("required_ops", []), problems)
    if images is not None:
        for i, rop in enumerate(required):
            if rop.image >= len(images):
                problems.append(f"required_ops[{i}].image {rop.image} but the record has "
                                f"{len(images)} image(s)")
    knowledge = _parse_list(raw.get("knowledge", []), "knowledge", KNOWLEDGE_KEYS,
                            ("title", "text"), problems)
    seen_urls: dict[str, int] = {}
    for i, k in enumerate(knowledge):
        if k.get("url") is not None and not _nonempty_str(k.get("url")):
            problems.append(f"knowledge[{i}].url must be a non-empty string")
        elif k.get("url") is not None:
            key = normalize_url(k["url"])
            if key in seen_urls:
                problems.append(f"knowledge[{i}].url repeats knowledge[{seen_urls[key]}].url")
            seen_urls.setdefault(key, i)
    judges = _parse_list(raw.get("judge_checkpoints", []), "judge_checkpoints", JUDGE_KEYS,
                         ("id", "question"), problems)
    for i, j in enumerate(judges):
        if j.get("axis") not in ("S", "V"):
            problems.append(f"judge_checkpoints[{i}].axis must be 'S' or 'V'")
        img = j.get("image")
        if img is not None and (not isinstance(img, int) or isinstance(img, bool) or img < 0):
            problems.append(f"judge_checkpoints[{i}].image must be a non-negative integer")
    if (isinstance(raw_ev, (list, tuple)) and not raw_ev and not raw.get("required_ops")
            and not raw.get("judge_checkpoints")):
        problems.append("nothing to verify in the process: give evidence boxes, required_ops "
                        "or judge_checkpoints")
    level = raw.get("level")
    if level is not None and (not isinstance(level, int) or isinstance(level, bool)
                              or level not in (1, 2, 3)):
        problems.append(f"level must be 1, 2 or 3, got {level!r}")
    domain = raw.get("domain", "Life")
    if domain not in DOMAINS:
        problems.append(f"unknown domain {domain!r} (known: {', '.join(DOMAINS)})")
    for key in ("metadata", "source"):
        if raw.get(key) is not None and not isinstance(raw.get(key), Mapping):
            problems.append(f"{key} must be an object")
    if problems:
        raise RecordProblems(problems)
    assert images is not None and answer is not None
    base = base_dir if base_dir is not None else Path.cwd()
    paths = tuple(Path(p) if Path(p).is_absolute() else (base / p) for p in images)
    return Record(
        id=str(rid), images=tuple(str(p) for p in images), image_paths=paths,
        question=str(question).strip(), answer=answer, evidence=tuple(evidence),
        choices=None if choices is None else tuple(choices),
        knowledge=tuple(KnowledgeEntry(str(k["title"]), str(k["text"]),
                                       None if k.get("url") is None else str(k["url"]))
                        for k in knowledge),
        level=level, domain=str(domain), metadata=dict(raw.get("metadata") or {}),
        source=dict(raw.get("source") or {}),
        judge_checkpoints=tuple(JudgeCheckpoint(str(j["id"]), str(j["axis"]),
                                                str(j["question"]), j.get("image"))
                                for j in judges),
        required_ops=tuple(required), where=where, folder=base,
        allow_outside=bool(allow_outside),
    )
