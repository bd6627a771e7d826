"""The ``records`` family (suite ``records``): one task per user record.

``make_task("records", seed, {"records": PATH})`` builds the task of one record: seeds index the
records of a split, and the split follows the seed as for every family with a ``split`` field
(:func:`m3gym.tasks.registry.world_split_for_seed`): training seeds (``< TRAIN_SEED_LIMIT``)
draw the ``train`` records, held-out seeds the ``test`` records (by the sha256 of the record id,
:func:`m3gym.records.load.record_split`); ``split="all"`` uses every record for any seed.
Training seed ``s`` is record ``s mod n`` of the split, held-out seed ``s`` record
``(s - TRAIN_SEED_LIMIT) mod n``.

Loaded records are cached per process (by path, size and modification time, or by content for
Python objects, and by the trust options: ``allow_outside`` and the pixel budget), so building
many tasks reads the image headers once and decodes only the images of the task built.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

import numpy as np

from m3gym.records.guard import (
    DEFAULT_BUDGET,
    DEFAULT_IMAGE_PIXELS,
    DEFAULT_RECORD_PIXELS,
    PixelBudget,
)
from m3gym.records.load import SPLITS, Records, load_records
from m3gym.records.task import FAMILY, record_to_task
from m3gym.spec import DOMAINS, Task
from m3gym.tasks.registry import TRAIN_SEED_LIMIT, FamilyConfig, register_family

DEMO_RECORDS: Path = Path(__file__).resolve().parent.parent / "data" / "records_demo" / \
    "records.jsonl"
"""The bundled demo set the env uses without ``records=``."""

_CACHE: dict[Any, Records] = {}
_CACHE_SIZE = 8


def _cache_key(source: Any) -> Any:
    if isinstance(source, (str, Path)):
        path = Path(source).expanduser().resolve()
        try:
            st = path.stat()
        except OSError:
            return ("path", str(path), None)
        return ("path", str(path), st.st_size, st.st_mtime_ns)
    if isinstance(source, Records):
        return ("records", id(source))
    return ("rows", json.dumps(source, sort_keys=True, default=str))


def cached_records(source: Any, allow_outside: bool = False,
                   budget: PixelBudget = DEFAULT_BUDGET) -> Records:
    """Return :func:`~m3gym.records.load.load_records` of ``source``, cached per process.

    The cache key holds ``allow_outside`` and ``budget``: records loaded with the opt-out are
    never served to a caller without it.
    """
    if isinstance(source, Records):
        return source
    key = (_cache_key(source), bool(allow_outside), budget)
    if key not in _CACHE:
        if len(_CACHE) >= _CACHE_SIZE:
            _CACHE.pop(next(iter(_CACHE)))
        _CACHE[key] = load_records(source, allow_outside=allow_outside, budget=budget)
    return _CACHE[key]


def record_for_seed(records: Records, seed: int, split: str) -> Any:
    """Return the record seed ``seed`` names in ``split`` (see the module docstring)."""
    pool = records.split(split)
    if not pool:
        raise ValueError(f"the {split!r} split of {records.source} is empty "
                         f"({len(records)} records; use split='all' for small sets)")
    s = int(seed)
    index = s if s < TRAIN_SEED_LIMIT else s - TRAIN_SEED_LIMIT
    return pool[index % len(pool)]


@register_family
@dataclass
class RecordsFamily(FamilyConfig):
    """Tasks built from user records (grounded image-QA data); see ``docs/records.md``.

    Scene:
        The record's own images.
    Question:
        The record's question (with its choices when it has them).
    Why a tool is needed:
        The evidence box is too small to read at view size (records where it is not are
        flagged ``needs_no_tool`` by ``m3gym records check``).
    Reference trajectory:
        One zoomed crop per evidence (parallel), then each evidence's op on its crop.
    Checkpoints:
        ``crop_covers`` (+ ``rotate_upright`` / ``contrast_op``), ``v_tool`` and ``v_true`` per
        evidence; judge checkpoints stay in metadata.
    Difficulty:
        None: the records are as written.
    Config:
        ``records`` (a path, a list of dicts or a loaded :class:`Records`), ``split``
        (``train``/``test``/``all``; default: the seed's), ``task_seed`` (set by ``make_task``),
        ``allow_outside`` (let image paths leave the records' folder; default refused),
        ``max_image_pixels`` / ``max_record_pixels`` (the pixel budget, from the headers).
    """

    name: ClassVar[str] = FAMILY
    level: ClassVar[int] = 1
    domains: ClassVar[tuple[str, ...]] = DOMAINS
    suite: ClassVar[str] = "records"
    description: ClassVar[str] = "Tasks from user records (grounded image QA, exact checkpoints)."

    records: Any = str(DEMO_RECORDS)
    split: str = "all"
    task_seed: int = 0
    allow_outside: bool = False
    max_image_pixels: int = DEFAULT_IMAGE_PIXELS
    max_record_pixels: int = DEFAULT_RECORD_PIXELS

    def budget(self) -> PixelBudget:
        """Return the pixel budget of ``max_image_pixels`` / ``max_record_pixels``."""
        return PixelBudget(self.max_image_pixels, self.max_record_pixels)

    def validate(self) -> None:
        """Check the split name and load (or reuse) the records: a bad file raises here."""
        if self.split not in SPLITS:
            raise ValueError(f"split must be one of {', '.join(SPLITS)}, got {self.split!r}")
        cached_records(self.records, self.allow_outside, self.budget())

    def generate(self, rng: np.random.Generator) -> Task:
        """Build the task of the record ``task_seed`` names (``rng`` is not needed)."""
        records = cached_records(self.records, self.allow_outside, self.budget())
        record = record_for_seed(records, self.task_seed, self.split)
        # the records file's path and sha256 stay out of the task (and its content hash): a
        # task changes only when its own record or images do (the run's config.json keeps both)
        return record_to_task(record, extra_metadata={"record_split": self.split},
                              budget=records.budget)
