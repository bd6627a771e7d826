"""Validation of parsed rows: every problem of every record, one line per rejected record.

:func:`validate_rows` parses each row (:func:`m3gym.records.schema.parse_record`), then checks
what needs the images: each image resolves inside the records' folder (symlinks followed; see
:mod:`m3gym.records.guard`), exists and its header is readable (``PIL.Image.open(...).size``
reads only the header, never the pixels) and within the pixel budget (per image and per record),
optionally decodes in full, every evidence box lies inside its image, a reference
crop can make it legible, and ids are unique. Records whose evidence is already legible at view
size (and that require no op) are accepted with a ``needs_no_tool`` warning; a record without
evidence gets none.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m3gym.records.guard import (
    DEFAULT_BUDGET,
    OutsideFolderError,
    PixelBudget,
    PixelBudgetError,
    contained,
    decode_problem,
    header_size,
    resolved_inside,
)
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
    """The outcome of validating rows: accepted records, rejections, warnings, image sizes.

    ``outside`` lists the images outside the records' folder that ``allow_outside`` let in.
    """

    records: list[Record] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    sizes: dict[Path, tuple[int, int]] = field(default_factory=dict)
    outside: list[Path] = field(default_factory=list)


def label(where: str, rid: Any) -> str:
    """Return how a message names a record: ``line 3 (id r2)`` or ``line 3``."""
    if isinstance(rid, str) and rid.strip():
        return f"{where} (id {rid})" if where else f"id {rid}"
    return where or "record"


def image_size(path: Path, cache: dict[Path, tuple[int, int]]) -> tuple[int, int]:
    """Return ``(width, height)`` from the image header; ``ValueError`` with the reason if not.

    A header claiming more pixels than Pillow opens at all raises
    :class:`~m3gym.records.guard.PixelBudgetError` (a ``ValueError``) with both numbers.
    """
    if path in cache:
        return cache[path]
    size = header_size(path)
    cache[path] = size
    return size


def check_images(record: Record, cache: dict[Path, tuple[int, int]],
                 view_size: int = VIEW_SIZE, budget: PixelBudget = DEFAULT_BUDGET,
                 decoded: dict[Path, str | None] | None = None
                 ) -> tuple[list[str], list[str]]:
    """Return ``(problems, warnings)`` of a parsed record's images and evidence geometry.

    Each image must resolve inside ``record.folder`` (unless ``record.allow_outside``), have a
    readable header and fit ``budget`` (per image, and all of the record's together). With
    ``decoded`` (a cache, path → problem), each image is also decoded in full.
    """
    from m3gym.records.task import plan_evidence

    problems: list[str] = []
    sizes: list[tuple[int, int] | None] = []
    folder = record.folder if record.folder is not None else Path.cwd()
    for shown, path in zip(record.images, record.image_paths):
        try:
            if not record.allow_outside:
                contained(path, folder, shown)
            size = image_size(path, cache)
            budget.check_image(shown, size)
        except OutsideFolderError as err:
            problems.append(str(err))
            sizes.append(None)
            continue
        except ValueError as err:
            msg = str(err)
            if shown != str(path):
                msg = msg.replace(repr(str(path)), f"{shown!r} (resolved: {path})")
            problems.append(msg)
            sizes.append(None)
            continue
        sizes.append(size)
    if all(s is not None for s in sizes):
        try:  # each image is decoded on its own, a repeated path too
            budget.check_record(sum(s[0] * s[1] for s in sizes if s is not None))
        except PixelBudgetError as err:
            problems.append(str(err))
    if decoded is not None and not problems:
        for shown, path in zip(record.images, record.image_paths):
            if path not in decoded:
                decoded[path] = decode_problem(path)
            if decoded[path] is not None:
                problems.append(f"image {shown!r}: {decoded[path]}")
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
                  check_images_: bool = True, view_size: int = VIEW_SIZE,
                  allow_outside: bool = False, budget: PixelBudget = DEFAULT_BUDGET,
                  decode: bool = False) -> Validation:
    """Parse and check ``(where, raw)`` rows; return every accepted record and every problem.

    ``where`` names the row (``line 3``). A row whose ``raw`` is a :class:`RecordProblems`
    (a JSON line that did not parse) is reported as is. Images must resolve inside
    ``base_dir`` (``None``: the working directory) unless ``allow_outside``, and fit
    ``budget``; ``decode`` decodes each in full (``m3gym records check``).
    """
    out = Validation()
    decoded: dict[Path, str | None] | None = {} if decode else None
    seen: dict[str, str] = {}
    for where, raw in rows:
        rid = raw.get("id") if isinstance(raw, dict) else None
        if isinstance(raw, RecordProblems):
            out.problems.append(f"{label(where, None)}: {raw}")
            continue
        try:
            record = parse_record(raw, base_dir, where, allow_outside=allow_outside)
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
            more, warnings = check_images(record, out.sizes, view_size, budget, decoded)
            if allow_outside:
                out.outside += [p for p in record.image_paths
                                if not resolved_inside(p, record.folder or Path.cwd())[0]]
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
