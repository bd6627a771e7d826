"""Record or check a byte baseline of generated tasks: every family, many seeds and difficulties.

Run: python benchmarks/task_bytes_baseline.py --write /tmp/task_bytes.json [--seeds 60]
     python benchmarks/task_bytes_baseline.py --check /tmp/task_bytes.json [--families a,b]

For every registered family (both suites) it builds ``--seeds`` tasks: half with the default
config (the frozen levels' config), the rest spread over difficulties 0, 0.5 and 1, with seeds in
the training range and a few held-out seeds (test world). It records ``Task.content_hash()`` and a
SHA-256 of every image's exact bytes (shape, dtype and pixels) plus every evidence array. A check
prints each task whose hashes differ from the baseline and exits with status 1 when any does.
Optimisations of task generation must leave this baseline unchanged.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from m3gym.spec import Task  # noqa: E402
from m3gym.tasks.registry import TRAIN_SEED_LIMIT, family_names, make_task  # noqa: E402

DIFFICULTIES: tuple[float, ...] = (0.0, 0.5, 1.0)
"""Difficulties the non-default half of the seeds is spread over."""


def array_digest(arr: np.ndarray) -> str:
    """Return a SHA-256 of an array's shape, dtype and exact bytes."""
    h = hashlib.sha256(f"{arr.shape} {arr.dtype}".encode())
    h.update(np.ascontiguousarray(arr).tobytes())
    return h.hexdigest()


def task_record(task: Task) -> dict[str, object]:
    """Return the content hash and per-array digests of ``task``."""
    arrays = [array_digest(img) for img in task.images]
    for ev in task.evidence:
        arrays += [array_digest(a) for a in (ev.clean, ev.mask) if a is not None]
    return {"content_hash": task.content_hash(), "arrays": arrays}


def cases(family: str, seeds: int) -> list[tuple[str, int, float | None]]:
    """Return ``(key, seed, difficulty)`` of the tasks checked for ``family``."""
    out: list[tuple[str, int, float | None]] = []
    n_default = max(1, seeds // 2)
    for s in range(n_default):
        seed = s if s % 10 != 9 else TRAIN_SEED_LIMIT + 7_000_000 + s  # every tenth held out
        out.append((f"{family}/{seed}", seed, None))
    for i in range(seeds - n_default):
        d = DIFFICULTIES[i % len(DIFFICULTIES)]
        seed = 500 + i
        out.append((f"{family}/{seed}@{d}", seed, d))
    return out


def build(families: list[str], seeds: int) -> dict[str, dict[str, object]]:
    """Return the records of every case of ``families`` (errors recorded as text)."""
    records: dict[str, dict[str, object]] = {}
    for family in families:
        t = time.perf_counter()
        for key, seed, diff in cases(family, seeds):
            try:
                records[key] = task_record(make_task(family, seed, difficulty=diff))
            except (NotImplementedError, ValueError) as err:  # a family without knobs
                records[key] = {"error": f"{type(err).__name__}: {err}"}
        print(f"  {family:<24} {time.perf_counter() - t:6.1f} s", file=sys.stderr)
    return records


def main() -> int:
    """Write or check the baseline."""
    ap = argparse.ArgumentParser(description=__doc__,
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    g = ap.add_mutually_exclusive_group(required=True)
    g.add_argument("--write", type=Path, help="write the baseline to this JSON file")
    g.add_argument("--check", type=Path, help="compare against this baseline JSON file")
    ap.add_argument("--seeds", type=int, default=60, help="tasks per family (default 60)")
    ap.add_argument("--families", default="", help="comma-separated subset (default: all)")
    args = ap.parse_args()
    if args.seeds < 1:
        ap.error(f"--seeds must be >= 1, got {args.seeds}")
    families = args.families.split(",") if args.families else family_names(suite=None)
    if args.write:
        records = build(families, args.seeds)
        args.write.write_text(json.dumps({"seeds": args.seeds, "records": records},
                                         indent=0, sort_keys=True))
        print(f"wrote {len(records)} task records to {args.write}")
        return 0
    base = json.loads(args.check.read_text())
    records = build(families, base["seeds"])
    bad = [k for k, v in records.items() if base["records"].get(k) != v]
    for k in bad[:50]:
        old, new = base["records"].get(k, {}), records[k]
        print(f"  DIFFERS {k}: content hash {str(old.get('content_hash'))[:12]} -> "
              f"{str(new.get('content_hash', new.get('error')))[:60]}")
    print(f"checked {len(records)} tasks of {len(families)} families: "
          f"{'all identical' if not bad else f'{len(bad)} differ'}")
    return 1 if bad else 0


if __name__ == "__main__":
    raise SystemExit(main())
