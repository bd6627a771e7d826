"""``m3gym records import-amme`` and ``m3gym records export-amme`` (Agentic-MME task folders).

- ``m3gym records import-amme SRC OUT.jsonl``: an Agentic-MME folder (``json/`` + ``image/``)
  into a records file; prints the count and one line per task it could not import. Exit 0: every
  task written; 1: some skipped (the rest written); 2: nothing imported (no ``json/`` tasks, or
  ``OUT`` outside a folder holding ``SRC`` without ``--allow-outside``).
- ``m3gym records export-amme --env ID --seeds N OUT`` (or ``--records PATH``): m3gym tasks into
  an Agentic-MME folder its own harness runs.
"""

from __future__ import annotations

import argparse
import sys

from m3gym.records.cli import add_trust_flags


def _cmd_import(args: argparse.Namespace) -> int:
    """Import an Agentic-MME folder into a records JSONL file."""
    import warnings

    from m3gym.records.amme import AmmeError, import_amme

    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            result = import_amme(args.src, args.out, allow_outside=args.allow_outside)
    except AmmeError as exc:
        print(f"m3gym records import-amme: {exc}", file=sys.stderr)
        return 2
    for w in caught:
        print(f"warning {w.message}", file=sys.stderr)
    judged = sum(len(r.get("judge_checkpoints", ())) for r in result.records)
    print(f"{args.out}: {len(result.records)} record(s) written, {len(result.skipped)} task(s) "
          f"skipped, {judged} judge checkpoint(s) (scored only with a judge endpoint)")
    for name, reason in result.skipped:
        print(f"skipped {name}: {reason}")
    return 1 if result.skipped else 0


def _env_tasks(env_id: str, seeds: int, seed_start: int) -> list:
    import gymnasium as gym

    from m3gym.registration import resolve_env_id

    resolved = resolve_env_id(env_id)
    if resolved not in gym.registry:
        raise ValueError(f"unknown env id {env_id!r} (m3gym list shows them)")
    env = gym.make(resolved, disable_env_checker=True).unwrapped
    tasks = []
    try:
        for seed in range(seed_start, seed_start + seeds):
            env.reset(seed=seed)
            tasks.append(env.task)
    finally:
        env.close()
    return tasks


def _cmd_export(args: argparse.Namespace) -> int:
    """Export m3gym tasks (env seeds or a records file) as an Agentic-MME folder."""
    from m3gym.records.amme import export_amme

    if (args.env is None) == (args.records is None):
        print("m3gym records export-amme: give exactly one of --env ID or --records PATH",
              file=sys.stderr)
        return 2
    if args.records is not None:
        from m3gym.records.load import load_records
        from m3gym.records.validate import RecordsError

        try:
            records = load_records(args.records, allow_outside=args.allow_outside)
        except RecordsError as exc:
            print(f"m3gym records export-amme: {exc}", file=sys.stderr)
            return 1
        tasks = [records.task(r) for r in records]
    else:
        if args.seeds < 1:
            print("m3gym records export-amme: --seeds must be >= 1", file=sys.stderr)
            return 2
        try:
            tasks = _env_tasks(args.env, args.seeds, args.seed_start)
        except ValueError as exc:
            print(f"m3gym records export-amme: {exc}", file=sys.stderr)
            return 2
    files = export_amme(tasks, args.out)
    print(f"{args.out}: {len(files)} Agentic-MME task(s) written (json/ and image/)")
    return 0


def add_import_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``m3gym records import-amme SRC OUT``."""
    p = sub.add_parser("import-amme", help="convert an Agentic-MME folder (json/ + image/) "
                                           "into a records JSONL file")
    p.add_argument("src", help="Agentic-MME dataset folder holding json/ and image/ (or images/)")
    p.add_argument("out", help="records file to write (.jsonl); image paths are relative to it")
    add_trust_flags(p)
    p.set_defaults(func=_cmd_import)


def add_export_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``m3gym records export-amme (--env ID --seeds N | --records PATH) OUT``."""
    p = sub.add_parser("export-amme", help="write m3gym tasks as an Agentic-MME folder")
    p.add_argument("out", help="folder to write json/ and image/ into")
    p.add_argument("--env", default=None, help="env id whose tasks to export (e.g. M3Bench-L1)")
    p.add_argument("--seeds", type=int, default=10, help="number of seeds (with --env)")
    p.add_argument("--seed-start", type=int, default=0, help="first seed (with --env)")
    p.add_argument("--records", default=None, help="records file whose tasks to export")
    add_trust_flags(p)
    p.set_defaults(func=_cmd_export)
