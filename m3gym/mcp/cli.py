"""The ``m3gym mcp`` subcommand: serve episodes over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import signal
import sys
from types import FrameType

from m3gym.mcp import DEFAULT_RESPONSE_BYTES, IMAGE_FORMATS


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``m3gym mcp`` on the CLI's subparsers."""
    p = sub.add_parser("mcp", help="serve m3gym episodes over MCP (stdio, or HTTP with --http)")
    p.add_argument("--http", type=int, default=None, metavar="PORT",
                   help="serve streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio")
    p.add_argument("--record", default=None, metavar="RUN_DIR",
                   help="write every finished episode into this run folder (as m3gym eval); "
                        "episodes in progress are recorded as interrupted when the server stops")
    p.add_argument("--max-episodes", type=int, default=32, help="episodes in progress at once")
    p.add_argument("--idle-s", type=float, default=900.0, help="evict episodes idle this long")
    p.add_argument("--max-response-bytes", type=int, default=DEFAULT_RESPONSE_BYTES,
                   help="cap on one reply as sent, JSON with base64 images (default 768 KiB: "
                        "the official MCP client takes 1 MiB per server-sent event)")
    p.add_argument("--image-format", choices=IMAGE_FORMATS, default="auto",
                   help="image encoding in replies: auto = PNG when it fits, else JPEG")
    p.add_argument("--image-quality", type=int, default=85,
                   help="first JPEG/WebP quality tried, 1-100 (lower ones follow to fit)")
    add_operator_choices(p)
    p.add_argument("--shared-episodes", action="store_true",
                   help="let any client act on any episode it has the id of (recorded in "
                        "--record's config.json); by default an episode answers only the MCP "
                        "session that started it")
    p.set_defaults(func=run)


def add_operator_choices(p: argparse.ArgumentParser) -> None:
    """Add what an episode server's operator chooses and its clients pick from.

    ``--env-arg`` (operator only), ``--env`` (the env ids clients may start) and ``--reward``
    (the rewards clients may name); shared by ``m3gym mcp`` and ``m3gym openenv``.
    """
    p.add_argument("--env-arg", action="append", default=[], metavar="KEY=VALUE",
                   help="keyword argument of every env the server makes, value parsed as JSON "
                        "when it parses (repeatable; operator only, as m3gym eval), e.g. "
                        "records=data.jsonl for M3Bench-Records episodes")
    p.add_argument("--env", action="append", default=None, metavar="ID", dest="envs",
                   help="an env id clients may start (repeatable; an OpenEnv reset without "
                        "one takes the first; default: every m3gym id, M3Bench-Records only "
                        "with --env-arg records=...)")
    p.add_argument("--reward", action="append", default=None, metavar="PRESET_OR_PATH",
                   dest="rewards",
                   help="a reward clients may name (repeatable; the first is the default, m3 "
                        "without any): a preset, or a YAML file offered by its file stem "
                        "(NAME=PATH names it); every preset is offered, a path never")


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


def run(args: argparse.Namespace) -> int:
    """Run the server until its transport closes, SIGINT or SIGTERM; then record what is live."""
    from m3gym.eval.config import parse_key_values
    from m3gym.mcp.choices import check_server_env_args
    from m3gym.mcp.episode_table import EpisodeTable
    from m3gym.mcp.limits import McpLimits
    from m3gym.mcp.memory import limit_heap_retention

    try:  # a bad --env-arg stops the server here, not every episode
        env_args = parse_key_values(getattr(args, "env_arg", None) or [])
        check_server_env_args(env_args)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        from m3gym.mcp.server import build_server
    except ImportError as exc:
        print(f"m3gym mcp needs the mcp extra (pip install 'm3gym[mcp]'): {exc}", file=sys.stderr)
        return 2
    try:
        limits = McpLimits(max_episodes=args.max_episodes, idle_s=args.idle_s,
                           max_response_bytes=args.max_response_bytes,
                           image_format=args.image_format, image_quality=args.image_quality)
        table = EpisodeTable(limits, record=args.record, env_args=env_args,
                             envs=getattr(args, "envs", None),
                             rewards=getattr(args, "rewards", None),
                             shared=bool(getattr(args, "shared_episodes", False)))
    except (ValueError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    server = build_server(table)
    limit_heap_retention()  # freed images go back to the OS (docs/mcp.md, Memory)
    if table.shared:
        print("m3gym mcp: --shared-episodes: any client may act on any episode it has the id "
              "of", file=sys.stderr)
    table.start_reaper()
    # SIGTERM as SIGINT: the transport stops (uvicorn handles both and re-raises them after
    # its shutdown), and the finally below records the episodes still in progress
    signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        if args.http is None:
            server.run("stdio")
        else:
            server.run("streamable-http", host="127.0.0.1", port=int(args.http))
    except KeyboardInterrupt:
        pass
    finally:
        ended = table.close()
        if ended and table.folder is not None:
            print(f"recorded {len(ended)} episode(s) in progress as interrupted in "
                  f"{table.folder.path}", file=sys.stderr)
    return 0
