"""The ``m3gym mcp`` subcommand: serve episodes over stdio (default) or streamable HTTP."""

from __future__ import annotations

import argparse
import sys


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``m3gym mcp`` on the CLI's subparsers."""
    p = sub.add_parser("mcp", help="serve m3gym episodes over MCP (stdio, or HTTP with --http)")
    p.add_argument("--http", type=int, default=None, metavar="PORT",
                   help="serve streamable HTTP on 127.0.0.1:PORT (path /mcp) instead of stdio")
    p.add_argument("--record", default=None, metavar="RUN_DIR",
                   help="write every finished episode into this run folder (as m3gym eval)")
    p.add_argument("--max-episodes", type=int, default=32, help="episodes in progress at once")
    p.add_argument("--idle-s", type=float, default=900.0, help="evict episodes idle this long")
    p.add_argument("--max-response-bytes", type=int, default=2 * 1024 * 1024,
                   help="cap on encoded image bytes in one response")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Run the server until its transport closes."""
    try:
        from m3gym.mcp.server import build_server
    except ImportError as exc:
        print(f"m3gym mcp needs the mcp extra (pip install 'm3gym[mcp]'): {exc}", file=sys.stderr)
        return 2
    from m3gym.mcp.episodes import EpisodeTable, McpLimits

    try:
        limits = McpLimits(max_episodes=args.max_episodes, idle_s=args.idle_s,
                           max_response_bytes=args.max_response_bytes)
        table = EpisodeTable(limits, record=args.record)
    except (ValueError, FileExistsError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    server = build_server(table)
    if args.http is None:
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=int(args.http))
    return 0
