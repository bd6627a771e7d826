"""``m3gym audit-reward``: the reward audit's table and PASS/FAIL per target, per env and preset."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register the ``audit-reward`` subcommand on the ``m3gym`` parser."""
    p = sub.add_parser("audit-reward",
                       help="what scripted blind policies earn under each reward preset")
    p.add_argument("--env", action="append",
                   help="env id (repeatable; default: M3Bench-L1/L2/L3 and M3Bench-Classic)")
    p.add_argument("--episodes", type=int, default=30, help="episodes per policy (default 30)")
    p.add_argument("--preset", action="append",
                   help="reward preset (repeatable; default: every YAML in configs/reward)")
    p.add_argument("--policy", action="append",
                   help="policies to run (repeatable; default: all; the yardsticks oracle, "
                        "random and answer_now always run)")
    p.add_argument("--seed", type=int, default=0, help="first env seed (and the policies' seed)")
    p.add_argument("--z", type=float, default=0.0,
                   help="allow z standard errors of the paired difference (default 0)")
    p.add_argument("--by-family", action="store_true",
                   help="also print each policy's %% of the oracle per task family")
    p.add_argument("--interface", choices=("atomic", "code"), default="atomic",
                   help="code: the env in code mode, every tool step sent as a run_python cell")
    p.add_argument("--code-isolation", choices=("auto", "bwrap", "none"), default="auto",
                   help="code mode's isolation: auto/bwrap need bubblewrap (refused without it); "
                        "none is the explicit, recorded opt-out")
    p.add_argument("--scenes", choices=("flat", "photo"), default=None,
                   help="photo: every env draws its families with photo scenes into the bundled "
                        "photographs (passed to gym.make for every env)")
    p.add_argument("--backgrounds", default=None, metavar="FOLDER",
                   help="a folder of JPEG/PNG photos to draw the scenes into (implies photo)")
    p.add_argument("--json", default=None, help="write every table, check and episode here")
    p.set_defaults(func=run_cli)


def run_cli(args: argparse.Namespace) -> int:
    """Run the audit; print the tables and checks; return 1 if any target fails, else 0."""
    from m3gym.audit.reward_audit import (
        DEFAULT_ENVS,
        audit_env,
        audit_json,
        check_targets,
        episode_tasks,
        format_checks,
        format_family_table,
        format_table,
        reward_presets,
        summary_markdown,
    )

    envs = args.env or list(DEFAULT_ENVS)
    presets = args.preset or reward_presets()
    records, failed, audits, all_checks = [], 0, [], {}
    start = time.perf_counter()
    if args.scenes is not None or args.backgrounds is not None:
        where = args.backgrounds or "the bundled photographs"
        print(f"Scenes: {args.scenes or 'photo'} ({where}), passed to gym.make for every env\n")
    for env_id in envs:
        tasks = episode_tasks(env_id, args.episodes, args.seed, args.scenes, args.backgrounds)
        for preset in presets:
            audit = audit_env(env_id, preset, args.episodes, seed=args.seed,
                              policies=args.policy, tasks=tasks, interface=args.interface,
                              sandbox={"isolation": args.code_isolation},
                              scenes=args.scenes, backgrounds=args.backgrounds)
            checks = check_targets(audit, z=args.z)
            failed += sum(not c.passed for c in checks)
            print(format_table(audit))
            print()
            if args.by_family:
                print(format_family_table(audit))
                print()
            print(format_checks(checks))
            print(flush=True)
            records.append(audit_json(audit, checks))
            audits.append(audit)
            all_checks[(env_id, preset)] = checks
    wall = time.perf_counter() - start
    print("## Summary\n")
    print(summary_markdown(audits, all_checks))
    print(f"{failed} target check(s) failed; {len(envs)} env(s) x {len(presets)} preset(s), "
          f"{args.episodes} episodes per policy, {wall:.0f} s")
    if args.json:
        Path(args.json).write_text(json.dumps({"episodes": args.episodes, "seed": args.seed,
                                               "z": args.z, "wall_s": wall, "audits": records,
                                               **({"scenes": args.scenes,
                                                   "backgrounds": args.backgrounds}
                                                  if args.scenes or args.backgrounds else {})},
                                              indent=1))
        print(f"wrote {args.json}", file=sys.stderr)
    return 1 if failed else 0
