"""The ``m3gym audit-leaks`` command: choices-only and view-only probes per family, vs chance."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from m3gym.audit.leaks import (
    TRAIN_TASKS,
    ProbeResult,
    binomial_upper_bound,
    choices_only_probe,
    view_only_probe,
)

Z_NOISE: float = 3.09
"""One-sided normal quantile of a 0.001 false-alarm rate: above ``chance + Z * sd`` is a leak."""


def format_row(r: ProbeResult) -> str:
    """Return one table row: family, probe, n, accuracy, chance, excess, noise bound, verdict.

    The noise bound is the accuracy a blind guesser exceeds with probability 0.001 over ``n``
    tasks; above the target but under it is "above target, within noise". A view-only miss on a
    family whose reference output the reset view already explains (a quarter turn, a flip, a
    point operation: :attr:`ProbeResult.structural`) is reported as structural, not as a leak.
    """
    if r.n == 0:
        return (f"| {r.family} | {r.probe} | 0 | - | - | - | - | "
                "n/a (answer not drawn / no choices) |")
    bound = binomial_upper_bound(r.chance, r.n, Z_NOISE)
    if r.passes:
        verdict = "ok"
    elif r.accuracy <= bound:
        verdict = f"above chance + {r.margin * 100:.0f}, within noise"
    elif r.structural:
        verdict = (f"over, structural (the reference's output is the view turned or re-levelled:"
                   f" 1 - R^2 = {r.unexplained:.3f})")
    else:
        verdict = f"LEAK (> chance + {r.margin * 100:.0f})"
    return (f"| {r.family} | {r.probe} | {r.n} | {r.accuracy:.3f} | {r.chance:.3f} | "
            f"{r.excess * 100:+.1f} | {bound:.3f} | {verdict} |")


def scene_config(args: argparse.Namespace) -> dict[str, Any] | None:
    """Return the ``make_task`` scene config of ``--scenes`` / ``--backgrounds`` (None: flat).

    A bad ``--backgrounds`` folder raises :class:`~m3gym.tasks.render.photos.PhotoSourceError`.
    """
    from m3gym.env import scene_options

    options = scene_options(getattr(args, "scenes", None), getattr(args, "backgrounds", None))
    return dict(options) or None


def photo_header(config: dict[str, Any], families: list[str], default: bool) -> str:
    """Return the line printed above the table when the probes run on photographic scenes."""
    source = (f"the photographs in {config['backgrounds']}" if "backgrounds" in config
              else "the bundled photographs")
    which = ("only the families with photo scenes (photo_scenes = True)" if default
             else "the families asked for")
    return (f"Scenes: photo ({source}); probing {which}: {len(families)} "
            f"famil{'y' if len(families) == 1 else 'ies'}.\n")


def run(args: argparse.Namespace) -> int:
    """Run the probes requested by ``args`` and print a markdown table; 1 when a target fails.

    With ``--scenes photo`` or ``--backgrounds`` every task is built in a photographic scene and,
    unless ``--family`` names them, only the families with ``photo_scenes`` are probed (a line
    above the table says so). Without them the output is the flat audit's, unchanged.
    """
    from m3gym.tasks.registry import family_names, get_family

    config = scene_config(args)
    families = args.family or family_names(suite=None)
    if config is not None:
        if not args.family:
            families = [f for f in families if get_family(f).photo_scenes]
        print(photo_header(config, list(families), not args.family))
    probes = ("choices-only", "view-only") if args.probe == "both" else (args.probe,)
    print("| family | probe | n | accuracy | chance | excess (points) | noise bound | target |")
    print("|---|---|---|---|---|---|---|---|")
    failed = False
    for family in families:
        get_family(family)  # unknown names fail here with the list of families
        for probe in probes:
            if probe == "choices-only":
                r = choices_only_probe(family, args.tasks, args.train_tasks, config)
            else:
                r = view_only_probe(family, args.tasks, config)
            failed |= r.n > 0 and not r.passes and not r.structural
            print(format_row(r), flush=True)
    return 1 if failed and args.strict else 0


def add_audit_leaks_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``audit-leaks`` on the ``m3gym`` sub-command parser."""
    p = sub.add_parser("audit-leaks", help="choices-only and view-only leak probes per family")
    p.add_argument("--family", action="append", help="family name (repeatable; default: all)")
    p.add_argument("--tasks", type=int, default=300, help="held-out tasks per family")
    p.add_argument("--train-tasks", type=int, default=TRAIN_TASKS,
                   help="training tasks per family for the choices-only classifier")
    p.add_argument("--probe", choices=("both", "choices-only", "view-only"), default="both")
    p.add_argument("--scenes", choices=("flat", "photo"), default=None,
                   help="photo: build every task in a photographic scene (bundled photographs) "
                        "and, by default, probe only the families with photo scenes")
    p.add_argument("--backgrounds", default=None, metavar="FOLDER",
                   help="a folder of JPEG/PNG photos to draw the scenes into (implies photo)")
    p.add_argument("--strict", action="store_true",
                   help="exit 1 when a family misses a target (structural view-only misses, "
                        "where the tool shows nothing the view lacks, are reported, not failed)")
    p.set_defaults(func=run)


if __name__ == "__main__":  # pragma: no cover
    parser = argparse.ArgumentParser(prog="m3gym-audit-leaks")
    add_audit_leaks_parser(parser.add_subparsers(dest="command", required=True))
    ns = parser.parse_args(["audit-leaks", *sys.argv[1:]])
    sys.exit(ns.func(ns))
