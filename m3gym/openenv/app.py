"""The ASGI app of the OpenEnv package (``openenv.yaml``'s ``app:``; the Dockerfile's server).

Every m3gym env id except those needing operator data, every reward preset (``m3`` by default)
and :data:`~m3gym.openenv.server.DEFAULT_MAX_SESSIONS` sessions; ``m3gym openenv`` takes the
operator's choices instead.
"""

from __future__ import annotations

from m3gym.openenv.server import build_app

app = build_app()


def main() -> None:
    """Serve :data:`app` on ``0.0.0.0:8000`` (``python -m m3gym.openenv.app``)."""
    import uvicorn

    uvicorn.run(app, host="0.0.0.0", port=8000)


if __name__ == "__main__":
    main()
