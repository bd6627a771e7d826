"""``python -m m3gym.testing FAMILY [...]``: :func:`~m3gym.testing.orchestration.main`."""

from m3gym.testing.orchestration import main

if __name__ == "__main__":
    raise SystemExit(main())
