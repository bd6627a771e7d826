"""``m3gym records ...``: the records command group (``check``; others plug in).

A subcommand is a function ``add(sub)`` that registers its parser on the group's subparsers (and
sets ``func``); list it in :data:`SUBCOMMANDS` as ``"module:function"`` (imported lazily).
"""

from __future__ import annotations

import argparse
import importlib
import sys

SUBCOMMANDS: tuple[str, ...] = ("m3gym.records.cli:add_check_parser",
                                "m3gym.records.amme_cli:add_import_parser",
                                "m3gym.records.amme_cli:add_export_parser")
"""The ``records`` subcommands, as ``"module:function"`` adders."""


def _cmd_check(args: argparse.Namespace) -> int:
    """Print the accepted count, every rejected record and the needs-no-tool warnings.

    Every image is decoded in full (a truncated file is rejected here, not at reset); image
    paths must stay inside the records' folder unless ``--allow-outside``.
    """
    import warnings

    from m3gym.records.guard import pixel_budget
    from m3gym.records.load import check_records
    from m3gym.records.validate import RecordsError

    try:
        budget = pixel_budget(args.max_image_pixels, args.max_record_pixels)
    except ValueError as err:
        print(f"m3gym records check: {err}", file=sys.stderr)
        return 2
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", UserWarning)
            result, name, sha = check_records(args.path, base_dir=args.base_dir,
                                              view_size=args.view_size,
                                              allow_outside=args.allow_outside, budget=budget,
                                              decode=True)
    except RecordsError as err:
        print(f"m3gym records check: {name_of(err)}: " + "; ".join(err.problems),
              file=sys.stderr)
        return 1
    print(f"{name}: {len(result.records)} accepted, {len(result.problems)} rejected, "
          f"{len(result.warnings)} warning(s) (sha256 {sha[:16]})")
    for line in result.problems:
        print(f"rejected {line}")
    for line in result.warnings:
        print(f"warning {line}")
    for w in caught:
        print(f"warning {w.message}")
    return 1 if result.problems else 0


def name_of(err: object) -> str:
    """Return the source an error names (``RecordsError.source``)."""
    return str(getattr(err, "source", ""))


def add_check_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``m3gym records check PATH``."""
    p = sub.add_parser("check", help="validate a records file: accepted count, every rejected "
                                     "record with its reason, needs-no-tool warnings")
    p.add_argument("path", help="records file (.jsonl, .json, .csv, .parquet) or folder")
    p.add_argument("--base-dir", default=None,
                   help="folder relative image paths are resolved against "
                        "(default: the records file's folder)")
    p.add_argument("--view-size", type=int, default=768,
                   help="the agent's view (longest side) for the needs-no-tool check")
    add_trust_flags(p, budget=True)
    p.set_defaults(func=_cmd_check)


def add_trust_flags(p: argparse.ArgumentParser, budget: bool = False) -> None:
    """Add ``--allow-outside`` (and, with ``budget``, the pixel-budget flags) to ``p``."""
    from m3gym.records.guard import DEFAULT_IMAGE_PIXELS, DEFAULT_RECORD_PIXELS

    p.add_argument("--allow-outside", action="store_true",
                   help="let image paths leave their folder (absolute paths, '..', symlinks); "
                        "refused by default: those pixels would reach the agent")
    if budget:
        p.add_argument("--max-image-pixels", type=int, default=None,
                       help=f"pixel budget of one image (default {DEFAULT_IMAGE_PIXELS})")
        p.add_argument("--max-record-pixels", type=int, default=None,
                       help="pixel budget of one record's images together "
                            f"(default {DEFAULT_RECORD_PIXELS})")


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``m3gym records`` and its subcommands on the CLI's subparsers."""
    p = sub.add_parser("records", help="user records as m3gym tasks (check, ...)")
    group = p.add_subparsers(dest="records_command", required=True)
    for target in SUBCOMMANDS:
        module, func = target.split(":")
        getattr(importlib.import_module(module), func)(group)
