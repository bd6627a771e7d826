"""The ``m3gym`` command: list envs and tools, play an episode, level statistics, eval, report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def _cmd_list(args: argparse.Namespace) -> int:
    import m3gym
    from m3gym.tools import default_registry

    print("env ids:")
    for env_id in m3gym.env_ids():
        print(f"  {env_id}")
    print("families:")
    for name in m3gym.family_names():
        fam = m3gym.get_family(name)
        print(f"  L{fam.level} {name:<22} {', '.join(fam.domains)}")
    print("tools:")
    for spec in default_registry().specs():
        print(f"  {spec.kind:<9} {spec.name}")
    return 0


def _cmd_play(args: argparse.Namespace) -> int:
    import gymnasium as gym

    import m3gym  # noqa: F401
    from m3gym.agents import make_agent
    from m3gym.rollout import run_episode

    env = gym.make(args.env)
    agent = make_agent(args.agent, seed=args.seed)
    res = run_episode(env, agent, seed=args.seed)
    for step in res.trace["steps"]:
        for call in step:
            status = "ok " if call["ok"] else "ERR"
            print(f"  step {call['step']} {status} {call['name']}({call['arguments']}) -> "
                  f"{call['result_text'][:100]}")
    print(f"answer={res.trace['answer']!r} correct={res.final_info.get('answer_correct')} "
          f"reward={res.total_reward:.3f}")
    return 0


def _cmd_stats(args: argparse.Namespace) -> int:
    from m3gym.stats import level_stats, stats_markdown

    if args.markdown:
        print(stats_markdown(args.seeds))
        return 0
    levels = [args.level] if args.level else [1, 2, 3]
    for level in levels:
        total, fams = level_stats(level, args.seeds)
        for st in (total, *fams):
            r = st.row()
            print(f"{r['name']:<22} tasks={r['tasks']:<5} ref_calls={r['ref_calls']:.2f} "
                  f"checkpoints={r['checkpoints']:.2f} evidence<10%={r['evidence_lt_10pct']:.0%} "
                  f"parallel={r['parallel_share']:.0%} reset_ms={r['reset_ms_median']:.1f} "
                  f"domains={r['domains']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """Return the argument parser of the ``m3gym`` command."""
    parser = argparse.ArgumentParser(prog="m3gym", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("list", help="list env ids, task families and tools")
    p.set_defaults(func=_cmd_list)
    p = sub.add_parser("play", help="run one episode with an agent and print its trace")
    p.add_argument("--env", default="M3Bench-L1")
    p.add_argument("--agent", default="oracle")
    p.add_argument("--seed", type=int, default=0)
    p.set_defaults(func=_cmd_play)
    p = sub.add_parser("stats", help="level statistics over N seeds per family")
    p.add_argument("--level", type=int, choices=(1, 2, 3))
    p.add_argument("--seeds", type=int, default=100)
    p.add_argument("--markdown", action="store_true", help="print the README table")
    p.set_defaults(func=_cmd_stats)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``m3gym`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, KeyError, FileNotFoundError, FileExistsError) as exc:
        print(f"m3gym: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
