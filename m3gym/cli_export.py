"""``m3gym export verl|sft|m3bench-trajectories``: training data, or a run in a peer's format.

- ``m3gym export verl --env M3Bench-L2 --n 10000 --out data/`` writes the parquet verl's
  ``RLHFDataset`` reads (agent loop ``m3gym_agent``); needs ``pyarrow`` (``.[verl]``).
  ``--curriculum runs/sb3/curriculum.json`` (or ``'{"mode": "band"}'``) draws each row's family
  and difficulty from a curriculum; ``--env-arg difficulty=0.5`` builds every row at one.
- ``m3gym export sft --env M3Bench-L1 --episodes 100 --agent oracle --out sft/`` writes chat
  trajectories (``--format jsonl``: ``sft.jsonl`` + PNG files; ``parquet``: a ``datasets``
  parquet for TRL's ``SFTTrainer``); ``--success-only`` keeps correct episodes, ``--family`` /
  ``--level`` filter the tasks; ``--agent`` may be an ``m3gym eval`` run folder.
- ``m3gym export m3bench-trajectories RUN_DIR OUT.jsonl [--reference GT.json]`` writes a run's
  trajectories in M3-Bench's format with the arguments as the agent sent them
  (:mod:`m3gym.eval.m3bench_export`).
"""

from __future__ import annotations

import argparse
import sys
from typing import Any


def _cmd_export_verl(args: argparse.Namespace) -> int:
    from m3gym.eval.runner import parse_key_values
    from m3gym.integrations.export import write_verl

    curriculum = None
    if args.curriculum:
        from pathlib import Path

        from m3gym.config_errors import ConfigSource, parse_json_text

        text = args.curriculum
        if Path(text).is_file():
            curriculum = text
        elif text.lstrip().startswith("{"):
            curriculum = dict(ConfigSource("--curriculum").mapping(
                parse_json_text(text, "--curriculum"), what="a JSON object of settings"))
        else:
            raise FileNotFoundError(f"--curriculum {text}: no such file (give a saved state or "
                                    "the settings as a JSON object)")
    try:
        import pyarrow  # noqa: F401
    except ImportError:
        print("m3gym: error: export verl needs pyarrow: pip install 'm3gym[verl]' (or pyarrow)",
              file=sys.stderr)
        return 2
    path = write_verl(args.env, args.n or None, args.out, split=args.split, seed=args.seed,
                      curriculum=curriculum, images=args.images,
                      **parse_key_values(args.env_arg))
    from m3gym.integrations import export

    print(f"wrote {path}")
    print(f"final-text scoring only: reward.custom_reward_function.path={export.__file__} "
          "name=compute_score (the m3gym_agent loop's reward_score is the full episode return)")
    return 0


def _cmd_export_sft(args: argparse.Namespace) -> int:
    from m3gym.eval.runner import parse_key_values
    from m3gym.integrations.export import sft_records, write_sft

    records = sft_records(args.env, args.episodes, args.agent, split=args.split, seed=args.seed,
                          success_only=args.success_only, families=args.family or None,
                          levels=args.level or None, **parse_key_values(args.env_arg))
    counted: dict[str, int] = {"n": 0, "ok": 0}

    def counting() -> Any:
        for rec in records:
            counted["n"] += 1
            counted["ok"] += bool(rec.meta["success"])
            yield rec

    path = write_sft(counting(), args.out, fmt=args.format)
    print(f"wrote {counted['n']} trajectories ({counted['ok']} correct) to {path}")
    return 0


def _cmd_export_m3bench(args: argparse.Namespace) -> int:
    from m3gym.eval.m3bench_export import write_m3bench_trajectories

    n, missing = write_m3bench_trajectories(args.run, args.out, args.reference)
    print(f"wrote {n} trajectories to {args.out}"
          + (f" and their references to {args.reference}" if args.reference else ""))
    if missing:
        print(f"m3gym: warning: {missing} call(s) without recorded raw arguments (validated "
              "arguments written, marked raw_arguments=false)", file=sys.stderr)
    return 0


def add_export_parser(sub: Any) -> None:
    """Register ``m3gym export verl|sft`` on the main parser's subcommands."""
    p = sub.add_parser("export", help="write training data: verl parquet or SFT trajectories")
    kinds = p.add_subparsers(dest="kind", required=True)
    v = kinds.add_parser("verl", help="parquet for verl's RLHFDataset (agent loop m3gym_agent)")
    v.add_argument("--env", default="M3Bench-L1")
    v.add_argument("--n", type=int, default=1000, help="tasks (all of a frozen split if 0)")
    v.add_argument("--split", default="train", help="train (seeded draws) | test | val")
    v.add_argument("--seed", type=int, default=0)
    v.add_argument("--out", default="data")
    v.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE")
    v.add_argument("--curriculum", default=None, metavar="STATE.json|JSON",
                   help="draw each row's family and difficulty from a curriculum: a state file "
                        "saved by m3gym.curriculum / train_sb3, or its arguments as JSON")
    v.add_argument("--images", choices=("task", "embed"), default="task",
                   help="task: rows name their task, images are rebuilt on load (small; "
                        "default); embed: PNG bytes in an images column")
    v.set_defaults(func=_cmd_export_verl)
    s = kinds.add_parser("sft", help="chat trajectories for cold-start SFT")
    s.add_argument("--env", default="M3Bench-L1")
    s.add_argument("--episodes", type=int, default=100)
    s.add_argument("--agent", default="oracle",
                   help="oracle | heuristic | random | module:factory | an m3gym eval run folder")
    s.add_argument("--split", default="train")
    s.add_argument("--seed", type=int, default=0)
    s.add_argument("--out", default="sft")
    s.add_argument("--format", choices=("jsonl", "parquet"), default="jsonl")
    s.add_argument("--success-only", action="store_true", help="keep correct episodes only")
    s.add_argument("--family", action="append", default=[], help="keep this family (repeatable)")
    s.add_argument("--level", action="append", type=int, default=[], help="keep this level")
    s.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE")
    s.set_defaults(func=_cmd_export_sft)
    m = kinds.add_parser("m3bench-trajectories",
                         help="a run's trajectories in M3-Bench's format (raw arguments)")
    m.add_argument("run", help="an m3gym eval run folder")
    m.add_argument("out", help="output: .json (a list, as evaluate_trajectories.py reads) or "
                               ".jsonl (one trajectory a line)")
    m.add_argument("--reference", default=None, metavar="PATH",
                   help="also write the tasks' reference trajectories (M3-Bench's --gt) here")
    m.set_defaults(func=_cmd_export_m3bench)
