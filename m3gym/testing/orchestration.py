"""``check_family`` (every check on one family, in order) and its command line ``main``."""

from __future__ import annotations

import os
import sys
from collections.abc import Sequence

from m3gym.tasks.registry import get_family
from m3gym.testing.audit_checks import PROBE_TASKS, check_probes, check_tool_necessity
from m3gym.testing.config_checks import check_docstring, check_knobs, check_validate
from m3gym.testing.determinism import check_cross_process, check_in_process
from m3gym.testing.errors import FamilyCheckError
from m3gym.testing.monotone import check_monotone
from m3gym.testing.report import FamilyReport, frozen_split_levels
from m3gym.testing.task_checks import (
    check_oracle_and_legibility,
    check_photo_scenes,
    check_task,
    config_of,
)


# ------------------------------------------------------------------------------ entry point
def check_family(name: str, *, seeds: Sequence[int] | None = None, quick: bool = False,
                 cross_process: bool = True, monotone_episodes: int | None = None,
                 probes: int | None = None) -> FamilyReport:
    """Check every guarantee of family ``name``; raise :class:`FamilyCheckError` on the first miss.

    Args:
        name: a registered family.
        seeds: task seeds for the per-task checks (default 2 when ``quick``, else 6).
        quick: fewer seeds and difficulties (``None``, 0, 1) and 6 heuristic episodes per end
            (12 otherwise) — the per-family test's setting.
        cross_process: also rebuild the tasks in a fresh interpreter (a ~2 s start-up; the test
            suite checks all families in one child with :func:`check_cross_process` instead).
        monotone_episodes: heuristic episodes per end of the difficulty range (0 skips); the
            heuristic reads with :data:`MONOTONE_OCR`. Where that reader is not installed the
            check is skipped, and the report says so with the reason (:attr:`FamilyReport.skipped`);
            an absent optional reader never fails a family.
        probes: held-out tasks per leak probe (default :data:`PROBE_TASKS`; 0 skips them).

    Returns:
        A :class:`FamilyReport`: the probes' accuracies and bounds, and the frozen test split's
        levels that hold the family (a warning line when none does).
    """
    cls = get_family(name)
    n_probe = PROBE_TASKS if probes is None else int(probes)
    if n_probe < 0:
        raise ValueError(f"probes must be >= 0 (0 skips the leak probes), got {probes}")
    seeds = list(seeds if seeds is not None else (range(2) if quick else range(6)))
    if not seeds:
        raise ValueError("check_family needs at least one seed")
    check_docstring(cls)
    check_validate(cls)
    check_knobs(cls)
    from m3gym.env import M3BenchEnv

    difficulties: tuple[float | None, ...] = (None, 0.0, 1.0) if quick else (None, 0.0, 0.5, 1.0)
    env = M3BenchEnv(family=name)
    for d in difficulties:
        config = config_of(cls, d)
        for seed, task in zip(seeds, check_in_process(name, seeds, d)):
            where = f"seed {seed}, difficulty {d}"
            check_task(cls, task, config, where)
            check_oracle_and_legibility(name, task, where, env)
    check_photo_scenes(name, seeds, env)
    env.close()
    if cross_process:
        check_cross_process([name], seeds[:2], (None, 1.0))
    n = monotone_episodes if monotone_episodes is not None else (6 if quick else 12)
    skipped: list[str] = []
    if n > 0:
        from m3gym.agents.ocr import OcrUnavailable

        try:
            check_monotone(name, range(n))
        except OcrUnavailable as exc:
            skipped.append(f"monotone difficulty: {exc}")
    checks = check_probes(name, n_probe) if n_probe > 0 else ()
    necessity = check_tool_necessity(name)
    return FamilyReport(name, tuple(checks), frozen_split_levels(name), tuple(skipped),
                        necessity)


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m m3gym.testing FAMILY [...] [--quick] [--probes N] [--import MODULE]``.

    Checks each family (default: every registered one) and prints its report.
    """
    import argparse

    from m3gym.tasks.registry import family_names

    parser = argparse.ArgumentParser(prog="python -m m3gym.testing",
                                     description="check_family for each named family")
    parser.add_argument("families", nargs="*", help="family names (default: every family)")
    parser.add_argument("--quick", action="store_true", help="the test suite's small sample")
    parser.add_argument("--probes", type=int, default=PROBE_TASKS,
                        help=f"held-out tasks per leak probe (default {PROBE_TASKS}; 0 skips)")
    parser.add_argument("--import", dest="modules", action="append", default=[],
                        metavar="MODULE", help="import MODULE first (a family defined outside "
                        "m3gym, e.g. examples.example_family); repeatable")
    args = parser.parse_args(argv)
    if args.probes < 0:
        parser.error(f"--probes must be >= 0 (0 skips the leak probes), got {args.probes}")
    import importlib

    if args.modules and os.getcwd() not in sys.path:
        sys.path.insert(0, os.getcwd())  # a module of the project being checked
    for module in args.modules:
        try:
            importlib.import_module(module)
        except ImportError as exc:
            parser.error(f"--import {module}: {exc}")
    known = family_names(suite=None)
    unknown = [n for n in args.families if n not in known]
    if unknown:
        parser.error(f"unknown family {', '.join(map(repr, unknown))}; known: {', '.join(known)}"
                     " (a family outside m3gym needs --import MODULE)")
    failed = 0
    for name in args.families or known:
        try:
            report = check_family(name, quick=args.quick, probes=args.probes)
        except FamilyCheckError as exc:
            failed += 1
            print(f"FAIL {exc}", flush=True)
        else:
            print(f"ok   {name}", flush=True)
            for line in report.lines()[1:]:
                print(f"     {line}", flush=True)
    return 1 if failed else 0
