"""The ``m3gym openenv`` subcommand: serve m3gym through OpenEnv's own ``create_app``."""

from __future__ import annotations

import argparse
import sys

from m3gym.mcp.cli import add_operator_choices


def add_parser(sub: argparse._SubParsersAction) -> None:
    """Register ``m3gym openenv`` on the CLI's subparsers."""
    p = sub.add_parser("openenv", help="serve m3gym episodes through OpenEnv (HTTP + WebSocket)")
    p.add_argument("--port", type=int, required=True, help="port to serve on")
    p.add_argument("--host", default="127.0.0.1", help="address to bind (default 127.0.0.1)")
    add_operator_choices(p)
    p.add_argument("--max-sessions", type=int, default=None,
                   help="WebSocket sessions served at once (default 8)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    """Serve until SIGINT or SIGTERM."""
    from m3gym.eval.runner import parse_key_values

    try:
        env_args = parse_key_values(getattr(args, "env_arg", None) or [])
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    try:
        import uvicorn

        from m3gym.openenv.server import DEFAULT_MAX_SESSIONS, build_app, server_config
    except ImportError as exc:
        print(f"m3gym openenv needs the openenv extra (pip install 'm3gym[openenv]'): {exc}",
              file=sys.stderr)
        return 2
    try:
        config = server_config(args.envs, args.rewards, env_args)
        app = build_app(config, args.max_sessions or DEFAULT_MAX_SESSIONS)
    except ValueError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    print(f"m3gym openenv: serving {', '.join(config.env_names())} on "
          f"http://{args.host}:{args.port} (WebSocket /ws)", file=sys.stderr)
    uvicorn.run(app, host=args.host, port=int(args.port), log_level="warning")
    return 0
