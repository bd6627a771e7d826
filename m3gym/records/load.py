"""Read records from JSONL, JSON, CSV, parquet, a Hugging Face dataset or Python dicts.

:func:`load_records` returns a :class:`Records` (the accepted records, their source's sha256 and
the needs-no-tool warnings) or raises one :class:`~m3gym.records.validate.RecordsError` listing
every rejected record; it never drops a record silently. Images are not decoded: only their
headers are read (sizes), and pixels load when a task is built (:meth:`Records.task`).

Every image must resolve inside the records' folder (the file's folder, ``base_dir`` or, for
Python objects, the working directory) and fit the pixel budget
(:mod:`m3gym.records.guard`); ``allow_outside=True`` is the explicit opt-out of the folder
boundary, warned about and recorded on :class:`Records`.
"""

from __future__ import annotations

import csv
import hashlib
import io
import json
import math
import warnings
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from m3gym.records.guard import DEFAULT_BUDGET, PixelBudget
from m3gym.records.schema import Record, RecordProblems
from m3gym.records.validate import RecordsError, Validation, validate_rows
from m3gym.spec import Task
from m3gym.view import VIEW_SIZE

JSON_COLUMNS: tuple[str, ...] = ("images", "answer", "choices", "evidence", "knowledge", "level",
                                 "metadata", "source", "judge_checkpoints", "required_ops")
"""Columns of CSV/parquet rows that hold JSON-encoded lists or objects."""

TEST_FRACTION: float = 0.2
"""Share of records (by the sha256 of their id) in the ``test`` split."""

SPLITS: tuple[str, ...] = ("train", "test", "all")
"""Record splits: by id hash (:func:`record_split`), or every record."""


def record_split(record_id: str, test_fraction: float = TEST_FRACTION) -> str:
    """Return ``"train"`` or ``"test"`` for a record id: stable (sha256), any process."""
    digest = hashlib.sha256(record_id.encode("utf-8")).digest()
    u = int.from_bytes(digest[:8], "big") / float(1 << 64)
    return "test" if u < test_fraction else "train"


@dataclass(frozen=True)
class Records(Sequence[Record]):
    """Validated records from one source.

    ``source`` names it (a path, or ``<records>``), ``sha256`` hashes its bytes (or, for Python
    objects, their canonical JSON), ``warnings`` lists the needs-no-tool records. ``folder`` is
    the folder the images stay in, ``allow_outside`` whether they were allowed out of it, and
    ``budget`` the pixel budget tasks are built under.
    """

    records: tuple[Record, ...]
    source: str
    sha256: str
    warnings: tuple[str, ...] = ()
    sizes: Mapping[Path, tuple[int, int]] = field(default_factory=dict)
    folder: Path | None = None
    allow_outside: bool = False
    budget: PixelBudget = DEFAULT_BUDGET
    _splits: dict[str, tuple[Record, ...]] = field(default_factory=dict, compare=False,
                                                   repr=False)

    def __len__(self) -> int:
        return len(self.records)

    def __getitem__(self, index: Any) -> Any:
        return self.records[index]

    def by_id(self, record_id: str) -> Record:
        """Return the record called ``record_id``."""
        for r in self.records:
            if r.id == record_id:
                return r
        raise KeyError(f"no record {record_id!r} in {self.source}")

    def split(self, name: str) -> tuple[Record, ...]:
        """Return the records of split ``name`` (``train``, ``test`` or ``all``), in file order."""
        if name not in SPLITS:
            raise ValueError(f"unknown records split {name!r} (known: {', '.join(SPLITS)})")
        if name == "all":
            return self.records
        if name not in self._splits:  # cached: a seed's record is looked up per task
            self._splits[name] = tuple(r for r in self.records if record_split(r.id) == name)
        return self._splits[name]

    def task(self, record: Record | str, view_size: int = VIEW_SIZE) -> Task:
        """Return the task of ``record`` (or of the record with that id); decodes its images."""
        from m3gym.records.task import record_to_task

        rec = self.by_id(record) if isinstance(record, str) else record
        return record_to_task(rec, view_size=view_size, budget=self.budget)


def _table_cell(key: str, value: Any, where: str) -> Any:
    """Decode one CSV/parquet cell: JSON columns from their JSON text, arrays to lists."""
    value = _plain(value)
    if key == "level" and isinstance(value, float) and value.is_integer():
        return int(value)  # an integer column with gaps reads as floats
    if isinstance(value, str) and key in JSON_COLUMNS:
        text = value.strip()
        if not text:
            return None
        if key == "images" and not text.startswith("["):
            return [text]
        try:
            return json.loads(text)
        except json.JSONDecodeError as err:
            raise RecordProblems([f"column {key!r} is not valid JSON ({err.msg})"]) from None
        except RecursionError:
            raise RecordProblems([f"column {key!r} is nested too deeply"]) from None
    return value


def _plain(value: Any) -> Any:
    """Return ``value`` with NumPy arrays/scalars turned into lists/Python scalars, None dropped."""
    if hasattr(value, "tolist") and not isinstance(value, (str, bytes)):
        value = value.tolist()
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items() if _plain(v) is not None}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, float) and math.isnan(value):
        return None
    return value


def _table_row(row: Mapping[str, Any], where: str) -> Any:
    try:
        out = {}
        for k, v in row.items():
            if k is None:
                raise RecordProblems(["the row has more cells than the header"])
            cell = _table_cell(str(k), v, where)
            if cell is not None and cell != "":
                out[str(k)] = cell
        return out
    except RecordProblems as err:
        return err


def _jsonl_rows(text: str) -> Iterator[tuple[str, Any]]:
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            yield f"line {n}", json.loads(line)
        except json.JSONDecodeError as err:
            yield f"line {n}", RecordProblems([f"invalid JSON ({err.msg}, column {err.colno})"])
        except RecursionError:
            yield f"line {n}", RecordProblems(["invalid JSON (nested too deeply)"])


def _csv_rows(text: str, name: str) -> list[tuple[str, Any]]:
    reader = csv.DictReader(io.StringIO(text, newline=""))
    try:
        rows = [(f"line {reader.line_num}", _table_row(row, f"line {reader.line_num}"))
                for row in reader]
    except csv.Error as err:
        raise RecordsError(name, [f"line {reader.line_num}: malformed CSV ({err})"]) from None
    if reader.fieldnames is not None and any(not f for f in reader.fieldnames):
        raise RecordsError(name, ["the CSV header has an empty column name"])
    return rows


def _frame_rows(frame: Any) -> Iterator[tuple[str, Any]]:
    for n, row in enumerate(frame.to_dict(orient="records"), start=1):
        yield f"row {n}", _table_row(row, f"row {n}")


def _is_hf_dataset(obj: Any) -> bool:
    return type(obj).__module__.split(".")[0] == "datasets" and hasattr(obj, "features")


def _hf_rows(ds: Any) -> Iterator[tuple[str, Any]]:
    for n, row in enumerate(ds, start=1):
        yield f"row {n}", _table_row(row, f"row {n}")


def _need(module: str, what: str) -> Any:
    import importlib

    try:
        return importlib.import_module(module)
    except ImportError:
        raise RecordsError(what, [f"reading {what} needs the {module!r} package "
                                  f"(pip install {module})"]) from None


def read_source(source: Any, base_dir: str | Path | None = None
                ) -> tuple[list[tuple[str, Any]], Path | None, str, str]:
    """Return ``(rows, base_dir, name, sha256)`` of a records source (nothing validated yet).

    ``source``: a path (``.jsonl``, ``.json``, ``.csv``, ``.parquet``, a folder holding
    ``records.jsonl``, or a ``datasets`` folder saved with ``save_to_disk``), a list of dicts, or
    a ``datasets.Dataset``.
    """
    base = Path(base_dir) if base_dir is not None else None
    if isinstance(source, (str, Path)):
        path = Path(source).expanduser()
        if path.is_dir():
            if (path / "records.jsonl").is_file():
                path = path / "records.jsonl"
            elif (path / "dataset_info.json").is_file() or (path / "state.json").is_file():
                datasets = _need("datasets", str(path))
                ds = datasets.load_from_disk(str(path))
                rows = list(_hf_rows(ds))
                return rows, base or path, str(path), _rows_sha(rows)
            else:
                raise RecordsError(str(path), ["the folder holds no records.jsonl"])
        if not path.is_file():
            raise RecordsError(str(path), [f"no such records file {str(path)!r}"])
        data = path.read_bytes()
        sha = hashlib.sha256(data).hexdigest()
        base = base or path.resolve().parent
        suffix = path.suffix.lower()
        if suffix == ".parquet":
            pandas = _need("pandas", str(path))
            if not (_has("pyarrow") or _has("fastparquet")):
                raise RecordsError(str(path), ["reading parquet needs 'pyarrow' "
                                               "(pip install pyarrow)"])
            return list(_frame_rows(pandas.read_parquet(path))), base, str(path), sha
        try:
            text = data.decode("utf-8-sig")
        except UnicodeDecodeError as err:
            raise RecordsError(str(path), [f"not UTF-8 text ({err.reason} at byte "
                                           f"{err.start})"]) from None
        if suffix == ".csv":
            return _csv_rows(text, str(path)), base, str(path), sha
        if suffix == ".json":
            try:
                items = json.loads(text)
            except json.JSONDecodeError as err:
                raise RecordsError(str(path), [f"invalid JSON ({err.msg}, line {err.lineno})"]
                                   ) from None
            except RecursionError:
                raise RecordsError(str(path), ["invalid JSON (nested too deeply)"]) from None
            if not isinstance(items, list):
                raise RecordsError(str(path), ["a .json records file must hold a list"])
            return [(f"item {i}", r) for i, r in enumerate(items)], base, str(path), sha
        if suffix not in (".jsonl", ".ndjson"):
            raise RecordsError(str(path), [f"unknown records format {suffix or path.name!r} "
                                           "(use .jsonl, .json, .csv or .parquet)"])
        return list(_jsonl_rows(text)), base, str(path), sha
    if _is_hf_dataset(source):
        rows = list(_hf_rows(source))
        return rows, base, "<datasets.Dataset>", _rows_sha(rows)
    if isinstance(source, Sequence) and not isinstance(source, (bytes, bytearray)):
        rows = [(f"item {i}", r) for i, r in enumerate(source)]
        return rows, base, "<records>", _rows_sha(rows)
    raise RecordsError(repr(type(source).__name__),
                       ["records must be a path, a list of dicts or a datasets.Dataset"])


def _has(module: str) -> bool:
    import importlib.util

    return importlib.util.find_spec(module) is not None


def _rows_sha(rows: Sequence[tuple[str, Any]]) -> str:
    h = hashlib.sha256()
    for _, raw in rows:
        h.update(json.dumps(raw, sort_keys=True, default=str).encode())
        h.update(b"\n")
    return h.hexdigest()


def check_records(source: Any, base_dir: str | Path | None = None,
                  view_size: int = VIEW_SIZE, *, allow_outside: bool = False,
                  budget: PixelBudget = DEFAULT_BUDGET,
                  decode: bool = False) -> tuple[Validation, str, str]:
    """Return ``(validation, name, sha256)`` of a source without raising on rejected records.

    A source that cannot be read at all still raises :class:`RecordsError`. ``allow_outside``
    lets image paths leave the records' folder (warned about); ``budget`` bounds the pixels per
    image and per record (from the headers); ``decode`` decodes every image in full, so a
    truncated one is rejected here rather than when its task is built.
    """
    rows, base, name, sha = read_source(source, base_dir)
    result = validate_rows(rows, base, view_size=view_size, allow_outside=allow_outside,
                           budget=budget, decode=decode)
    if allow_outside:
        warnings.warn(f"records {name}: allow_outside=True lets image paths leave the folder "
                      f"{base if base is not None else Path.cwd()} ({len(result.outside)} image "
                      "path(s) do)", UserWarning, stacklevel=2)
    return result, name, sha


def load_records(source: Any, base_dir: str | Path | None = None,
                 view_size: int = VIEW_SIZE, *, allow_outside: bool = False,
                 budget: PixelBudget = DEFAULT_BUDGET) -> Records:
    """Return the :class:`Records` of ``source``; raise :class:`RecordsError` otherwise.

    The error lists every rejected record (or says why the source is unreadable). A
    :class:`Records` is returned as is. Images must resolve inside the records' folder unless
    ``allow_outside`` (see :func:`check_records`) and fit ``budget``.
    """
    if isinstance(source, Records):
        return source
    result, name, sha = check_records(source, base_dir, view_size, allow_outside=allow_outside,
                                      budget=budget)
    if result.problems:
        raise RecordsError(name, result.problems, accepted=len(result.records))
    if not result.records:
        raise RecordsError(name, ["no records"])
    return Records(records=tuple(result.records), source=name, sha256=sha,
                   warnings=tuple(result.warnings), sizes=dict(result.sizes),
                   folder=result.records[0].folder, allow_outside=allow_outside, budget=budget)


def records_fingerprint(source: Any) -> dict[str, Any]:
    """Return ``{"source": name, "sha256": digest}`` of a records source (a run records it).

    A path is hashed as bytes (nothing is validated); Python objects by their canonical JSON.
    Loaded :class:`Records` that were allowed outside their folder add ``"allow_outside": True``.
    """
    if isinstance(source, Records):
        out: dict[str, Any] = {"source": source.source, "sha256": source.sha256}
        return {**out, "allow_outside": True} if source.allow_outside else out
    if isinstance(source, (str, Path)) and Path(source).expanduser().is_file():
        path = Path(source).expanduser()
        return {"source": str(path), "sha256": hashlib.sha256(path.read_bytes()).hexdigest()}
    _, _, name, sha = read_source(source)
    return {"source": name, "sha256": sha}
