"""User records (grounded image-QA data) as process-verified m3gym tasks.

* :mod:`m3gym.records.schema` — the record format and :func:`parse_record`;
* :mod:`m3gym.records.load` — :func:`load_records` (JSONL, JSON, CSV, parquet, datasets, dicts);
* :mod:`m3gym.records.validate` — every problem of every record (:class:`RecordsError`);
* :mod:`m3gym.records.task` — :func:`record_to_task` (evidence, reference, checkpoints);
* :mod:`m3gym.records.family` — the ``records`` family and the ``M3Bench-Records`` env;
* :mod:`m3gym.records.cli` — ``m3gym records check``.

See ``docs/records.md``.
"""

from __future__ import annotations

from m3gym.records.load import Records, check_records, load_records, record_split
from m3gym.records.schema import Record, RecordProblems, parse_record
from m3gym.records.validate import RecordsError

__all__ = ["Record", "RecordProblems", "Records", "RecordsError", "check_records",
           "load_records", "parse_record", "record_split"]
