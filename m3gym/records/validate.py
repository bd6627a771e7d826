"""Validation of parsed rows: every problem of every record, one line per rejected record.

:func:`validate_rows` parses each row (:func:`m3gym.records.schema.parse_record`), then checks
what needs the images: each image exists and its header is readable (``PIL.Image.open(...).size``
reads only the header, never the pixels), every evidence box lies inside its image, a reference
crop can make it legible, and ids are unique. Records whose evidence is already legible at view
size (and that require no op) are accepted with a ``needs_no_tool`` warning; a record without
evidence gets none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m3gym.records.schema import Record, RecordProblems, parse_record
from m3gym.view import VIEW_SIZE


class RecordsError(ValueError):
    """A records source has rejected records: ``problems`` holds one line per record."""

    def __init__(self, source: str, problems: Sequence[str], accepted: int = 0) -> None:
        self.source = source
        self.problems = list(problems)
        self.accepted = accepted
        lines = "\n".join(f"  {p}" for p in self.problems)
        super().__init__(f"{len(self.problems)} rejected record(s) in {source} "
                         f"({accepted} accepted):\n{lines}")


@dataclass
class Validation:
    """The outcome of validating rows: accepted records, rejections, warnings, image sizes."""

    records: list[Record] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sizes: dict[Path, tuple[int, int]] = field(default_factory=dict)


def label(where: str, rid: Any) -> str:
    """Return how a message names a record: ``line 3 (id r2)`` or ``line 3``."""
    if isinstance(rid, str) and rid.strip():
        return f"{where} (id {rid})" if where else f"id {rid}"
    return where or "record"


def image_size(path: Path, cache: dict[Path, tuple[int, int]]) -> tuple[int, int]:
    """Return ``(width, height)`` from the image header; ``ValueError`` with the reason if not."""
    if path in cache:
        return cache[path]
    from PIL import Image, UnidentifiedImageError

    if not path.is_file():
        raise ValueError(f"missing image {str(path)!r}")
    try:
        with Image.open(path) as im:
            size = (int(im.size[0]), int(im.size[1]))
    except (UnidentifiedImageError, OSError, ValueError, Image.DecompressionBombError) as err:
        raise ValueError(f"unreadable image {str(path)!r}: {type(err).__name__}") from None
    if size[0] < 1 or size[1] < 1:
        raise ValueError(f"unreadable image {str(path)!r}: empty")
    cache[path] = size
    return size


def check_images(record: Record, cache: dict[Path, tuple[int, int]],
                 view_size: int = VIEW_SIZE) -> tuple[list[str], list[str]]:
    """Return ``(problems, warnings)`` of a parsed record's images and evidence geometry."""
    from m3gym.records.task import plan_evidence

    problems: list[str] = []
    sizes: list[tuple[int, int] | None] = []
    for shown, path in zip(record.images, record.image_paths):
        try:
            sizes.append(image_size(path, cache))
        except ValueError as err:
            msg = str(err)
            if shown != str(path):
                msg = msg.replace(repr(str(path)), f"{shown!r} (resolved: {path})")
            problems.append(msg)
            sizes.append(None)
    legible = []
    for i, ev in enumerate(record.evidence):
        size = sizes[ev.image]
        if size is None:
            continue
        try:
            plan = plan_evidence(ev, i, size, view_size)
        except ValueError as err:
            problems.append(str(err))
            continue
        legible.append(plan.needs_no_tool)
    warnings = []
    if not problems and legible and all(legible) and not record.required_ops:
        warnings.append("needs_no_tool: the evidence is already legible at view size "
                        f"({view_size} px longest side)")
    return problems, warnings


def validate_rows(rows: Iterable[tuple[str, Any]], base_dir: Path | None,
                  check_images_: bool = True, view_size: int = VIEW_SIZE) -> Validation:
    """Parse and check ``(where, raw)`` rows; return every accepted record and every problem.

    ``where`` names the row (``line 3``). A row whose ``raw`` is a :class:`RecordProblems`
    (a JSON line that did not parse) is reported as is.
    """
    out = Validation()
    seen: dict[str, str] = {}
    for where, raw in rows:
        rid = raw.get("id") if isinstance(raw, dict) else None
        if isinstance(raw, RecordProblems):
            out.problems.append(f"{label(where, None)}: {raw}")
            continue
        try:
            record = parse_record(raw, base_dir, where)
        except RecordProblems as err:
            missing = _missing_images(raw, base_dir) if check_images_ else []
            out.problems.append(f"{label(where, rid)}: {'; '.join([*err.problems, *missing])}")
            continue
        problems: list[str] = []
        warnings: list[str] = []
        if record.id in seen:
            problems.append(f"duplicate id {record.id!r} (first at {seen[record.id]})")
        else:
            seen[record.id] = where or record.id
        if check_images_:
            more, warnings = check_images(record, out.sizes, view_size)
            problems += more
        if problems:
            out.problems.append(f"{label(where, record.id)}: {'; '.join(problems)}")
            continue
        out.records.append(record)
        out.warnings += [f"{label(where, record.id)}: {w}" for w in warnings]
    return out


def _missing_images(raw: Any, base_dir: Path | None) -> list[str]:
    """Return the missing-image problems of a record that did not parse (string paths only)."""
    images = raw.get("images") if isinstance(raw, dict) else None
    if not isinstance(images, list):
        return []
    base = base_dir if base_dir is not None else Path.cwd()
    out = []
    for p in images:
        if isinstance(p, str) and p.strip():
            path = Path(p) if Path(p).is_absolute() else base / p
            if not path.is_file():
                out.append(f"missing image {p!r}")
    return out
