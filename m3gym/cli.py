"""The ``m3gym`` command: list envs and tools, play an episode, level statistics, eval, report."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import TYPE_CHECKING

from m3gym.extras import MissingExtraError

if TYPE_CHECKING:
    from pathlib import Path

    from m3gym.eval.runner import UnreadableLine


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

    env = gym.make(m3gym.resolve_env_id(args.env))
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


def _cmd_eval(args: argparse.Namespace) -> int:
    import time as _time

    import m3gym
    from m3gym.extras import require_extra

    Console = require_extra("rich.console", "eval", "m3gym eval").Console
    from m3gym.eval.runner import (
        DEFAULT_EPISODES,
        EvalAbort,
        EvalConfig,
        default_agent_name,
        parse_key_values,
        run_eval,
    )
    from m3gym.eval.summary import print_summary
    from m3gym.sandbox.launcher import IsolationUnavailable
    from m3gym.scoring.peers import parse_metric_names

    metrics = parse_metric_names(args.metrics)
    envs = tuple(args.env or [m3gym.level_env_id(lv) for lv in (1, 2, 3)
                              if m3gym.family_names(lv)])
    agent = args.agent or default_agent_name()
    out = args.out or f"runs/eval-{agent}-{_time.strftime('%Y%m%d-%H%M%S')}"
    cfg = EvalConfig(envs=envs, agent=agent, episodes=args.episodes or DEFAULT_EPISODES,
                     split=args.split, seed=args.seed, reward=args.reward, workers=args.workers,
                     agent_args=parse_key_values(args.agent_arg),
                     env_args={**parse_key_values(args.env_arg),
                               **({"interface": args.interface} if args.interface else {}),
                               **({"sandbox": {"isolation": args.code_isolation}}
                                  if args.code_isolation else {})},
                     max_consecutive_infra=args.max_infra_errors, samples=args.samples,
                     manifest=args.manifest, allow_changed_tasks=args.allow_changed_tasks,
                     judge_endpoint=args.judge_endpoint, judge_model=args.judge_model)
    if args.judge_model and not args.judge_endpoint:
        print("m3gym: error: --judge-model needs --judge-endpoint", file=sys.stderr)
        return 2
    if args.judge_endpoint:
        require_extra("openai", "eval", "m3gym eval --judge-endpoint")
    backend = None
    if args.backend == "ray":
        try:
            from m3gym.distributed import RayBackend
        except ImportError as exc:
            print(f"m3gym: error: --backend ray needs the ray extra (pip install 'm3gym[ray]'): "
                  f"{exc}", file=sys.stderr)
            return 2
        backend = RayBackend(address=args.address, num_cpus=args.num_cpus)
    console = Console(stderr=True, quiet=args.quiet)
    progress = _EvalProgress(console)
    try:
        with progress:
            result = run_eval(cfg, out, resume=args.resume, on_start=progress.start,
                              on_episode=progress.update, backend=backend,
                              on_unreadable=_print_removed_lines, metrics=metrics)
    except (EvalAbort, ConnectionError, IsolationUnavailable) as exc:
        print(f"m3gym: error: {exc}", file=sys.stderr)
        return 2
    except (FileNotFoundError, FileExistsError):
        raise  # named by main
    except OSError as exc:  # a run-folder file it cannot write (permissions, a full disk)
        print(f"m3gym: error: {exc}; finished episodes are in {out}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print(f"m3gym: interrupted; finished episodes are in {out} (rerun with --resume)",
              file=sys.stderr)
        return 130
    if not args.quiet:
        from m3gym.eval.peer_summary import print_peer_summary

        if "m3gym" in metrics:
            print_summary(result.summary, title=f"m3gym eval: {agent} on {', '.join(envs)} "
                          f"({cfg.split} split)")
        print_peer_summary(result.summary)
        if "samples" in result.summary:
            from m3gym.eval.passk import passk_lines

            print("\n".join(passk_lines(result.summary["samples"])))
        print(f"ran {result.ran} episodes, skipped {result.skipped} finished; wrote {out}/")
    return 0


def _print_removed_lines(lines: Sequence[UnreadableLine], backup: Path) -> None:
    """Name on stderr each unreadable ``episodes.jsonl`` line ``--resume`` removed."""
    n = len(lines)
    print(f"m3gym: warning: removed {n} unreadable line{'s' if n != 1 else ''} from "
          f"{lines[0].path} (the original is kept as {backup}); episodes left without a "
          "record run again:", file=sys.stderr)
    for line in lines:
        print(f"m3gym: warning:   {line}", file=sys.stderr)


class _EvalProgress:
    """A rich progress display for ``m3gym eval``: one bar per env with live accuracy."""

    def __init__(self, console: object) -> None:
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description:<18}"), BarColumn(), MofNCompleteColumn(),
            TextColumn("acc {task.fields[acc]}"), TextColumn("[red]{task.fields[errors]}"),
            TimeElapsedColumn(), TimeRemainingColumn(), console=console)
        self.tasks: dict[str, object] = {}
        self.counts: dict[str, list[int]] = {}
        self.started = False

    def __enter__(self) -> _EvalProgress:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.tasks or self.started:
            self.progress.stop()

    def start(self, specs: Sequence[object]) -> None:
        """Start the display (after the worker pool exists): one bar per env still to run."""
        self.progress.start()
        self.started = True
        totals: dict[str, int] = {}
        for spec in specs:
            totals[spec.env_id] = totals.get(spec.env_id, 0) + 1  # type: ignore[attr-defined]
        for env_id, total in totals.items():
            self.tasks[env_id] = self.progress.add_task(env_id, total=total, acc="-", errors="")
            self.counts[env_id] = [0, 0, 0]

    def update(self, record: dict) -> None:
        """Advance the env's bar and refresh its accuracy and error count."""
        env_id = record["env"]
        c = self.counts[env_id]
        if record["status"] == "ok":
            c[0] += 1
            c[1] += bool(record.get("answer_correct"))
        else:
            c[2] += 1
        acc = f"{c[1] / c[0]:.3f}" if c[0] else "-"
        errors = f"{c[2]} errors" if c[2] else ""
        self.progress.update(self.tasks[env_id], advance=1, acc=acc, errors=errors)


def _cmd_report(args: argparse.Namespace) -> int:
    from m3gym.eval.report import build_report

    try:
        written = build_report(args.runs, out=args.out, max_episodes=args.max_episodes,
                               full_images=not args.no_full_images)
    except OSError as exc:  # a file it cannot write, say: named, no traceback
        print(f"m3gym: error: {exc}", file=sys.stderr)
        return 2
    for warning in written.warnings:  # after rendering: every file it skipped is named
        print(f"m3gym: warning: {warning}", file=sys.stderr)
    for path in written.pages:
        print(f"wrote {path}")
    return 0


def _cmd_split_manifest(args: argparse.Namespace) -> int:
    from m3gym.eval.splits import check_manifest, write_manifest

    if args.write:
        path = write_manifest(args.split, args.per_level, path=args.manifest)
        print(f"wrote {path}")
        return 0
    bad = check_manifest(args.split, per_family=None if args.full else args.per_family,
                         path=args.manifest)
    for m in bad[:20]:
        print(f"  L{m.level} {m.task_id}: manifest {str(m.expected)[:12]} != {m.actual[:60]}")
    if bad:
        from m3gym.eval.frozen import version_differences
        from m3gym.eval.splits import load_manifest

        diffs = version_differences((load_manifest(args.split, args.manifest) or {})
                                    .get("built_with"))
        for line in diffs:
            print(f"  library build differs from the manifest's: {line}")
        print(f"m3gym: error: {len(bad)} task(s) of split {args.split!r} changed"
              + (" (library builds differ, see above: install the versions m3gym declares)"
                 if diffs else "; a task generator changed: write a new manifest version "
                 "(`m3gym split-manifest --write`, MANIFEST_DIGESTS, CHANGELOG.md)"),
              file=sys.stderr)
        return 1
    print(f"split {args.split!r}: all checked task hashes match")
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
    p = sub.add_parser("eval", help="evaluate an agent on frozen test splits into a run folder")
    p.add_argument("--env", action="append", help="env id (repeatable; default: all levels)")
    p.add_argument("--agent", default=None,
                   help="agent name or module:factory (default: heuristic, else random)")
    p.add_argument("--episodes", type=int, default=None, help="episodes per env (default 30)")
    p.add_argument("--split", default="test",
                   help="test | val | test-photo (frozen) or train (random seeds)")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--reward", default="m3", help="reward preset name or YAML path")
    p.add_argument("--workers", type=int, default=1, help="processes (same results for any N)")
    p.add_argument("--agent-arg", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--interface", choices=("atomic", "code", "both"), default=None,
                   help="agent interface: tool calls (atomic, default), Python code, or both")
    p.add_argument("--code-isolation", choices=("auto", "bwrap", "none"), default=None,
                   help="code mode's isolation: auto/bwrap need bubblewrap and refuse without "
                        "it; none is the explicit opt-out, recorded in every episode and report")
    p.add_argument("--out", default=None, help="run folder (default runs/eval-AGENT-TIME)")
    p.add_argument("--resume", action="store_true", help="continue an existing run folder")
    p.add_argument("--max-infra-errors", type=int, default=3,
                   help="abort after this many infrastructure errors in a row")
    p.add_argument("--quiet", action="store_true", help="no progress bar or summary table")
    p.add_argument("--backend", choices=("local", "ray"), default="local",
                   help="local processes (--workers) or Ray tasks (same results)")
    p.add_argument("--address", default=None,
                   help="Ray cluster: auto or HOST:PORT (default: start a local one)")
    p.add_argument("--num-cpus", type=int, default=None, help="CPUs of a local Ray cluster")
    p.add_argument("--samples", type=int, default=1,
                   help="rollouts per task: reports pass@k and per-task success variance")
    p.add_argument("--manifest", default=None, metavar="PATH",
                   help="frozen split manifest to evaluate against (default: the package's)")
    p.add_argument("--allow-changed-tasks", action="store_true",
                   help="run even when frozen tasks differ from the manifest (recorded in the "
                        "run); by default such a run stops before any episode")
    p.add_argument("--metrics", action="append", default=[], metavar="NAMES",
                   help="metric families in the summary and report: m3gym (default), amme "
                        "(Agentic-MME's scoring), m3bench (M3-Bench's call-weighted "
                        "aggregation); repeatable or comma-separated")
    p.add_argument("--judge-endpoint", default=None, metavar="URL",
                   help="OpenAI-compatible endpoint that scores records' judge checkpoints "
                        "after each episode (its own metric, judge; never part of S or V). "
                        "Off by default: such checkpoints are reported as not judged")
    p.add_argument("--judge-model", default=None, metavar="MODEL",
                   help="the judge's model (default: the first the endpoint lists)")
    p.set_defaults(func=_cmd_eval)
    p = sub.add_parser("report", help="write report.md and report.html for run folders")
    p.add_argument("runs", nargs="+", help="run folders written by m3gym eval")
    p.add_argument("--out", default=None, help="output folder (default: the run folder)")
    p.add_argument("--max-episodes", type=int, default=60, help="episodes in the viewer")
    p.add_argument("--no-full-images", action="store_true",
                   help="link thumbnails only: do not replay the shown episodes to write their "
                        "full-resolution PNGs (faster, a few MB per episode smaller)")
    p.set_defaults(func=_cmd_report)
    p = sub.add_parser("split-manifest", help="check (default) or --write a split manifest")
    p.add_argument("--split", default="test")
    p.add_argument("--write", action="store_true", help="regenerate and write the manifest")
    p.add_argument("--full", action="store_true", help="check every task, not a sample")
    p.add_argument("--per-family", type=int, default=5, help="tasks checked per family")
    p.add_argument("--per-level", type=int, default=None,
                   help="tasks per level when writing (default: the split's, 200 for test)")
    p.add_argument("--manifest", default=None, metavar="PATH",
                   help="manifest file to check or write (default: the package's)")
    p.set_defaults(func=_cmd_split_manifest)
    p = sub.add_parser("stats", help="level statistics over N seeds per family")
    p.add_argument("--level", type=int, choices=(1, 2, 3))
    p.add_argument("--seeds", type=int, default=100)
    p.add_argument("--markdown", action="store_true",
                   help="print the Markdown table of docs/benchmarks.md")
    p.set_defaults(func=_cmd_stats)
    from m3gym.audit.leaks_cli import add_audit_leaks_parser
    add_audit_leaks_parser(sub)
    from m3gym.audit.tools_cli import add_audit_tools_parser
    add_audit_tools_parser(sub)
    from m3gym.audit.cli import add_parser as add_audit_parser

    add_audit_parser(sub)
    from m3gym.mcp.cli import add_parser as add_mcp_parser

    add_mcp_parser(sub)
    from m3gym.openenv.cli import add_parser as add_openenv_parser

    add_openenv_parser(sub)
    from m3gym.cli_export import add_export_parser

    add_export_parser(sub)
    from m3gym.records.cli import add_parser as add_records_parser

    add_records_parser(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``m3gym`` console script."""
    args = build_parser().parse_args(argv)
    try:
        return int(args.func(args) or 0)
    except (ValueError, KeyError, FileNotFoundError, FileExistsError, MissingExtraError) as exc:
        print(f"m3gym: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
