"""Keeping an MCP server's memory bounded: freed images go back to the OS (glibc).

Images are large allocations; freed by many threads they stay in glibc's arenas, so the
server's resident memory would stay at its peak. :func:`limit_heap_retention` (at start-up) and
:func:`release_memory` (after episodes end) hand them back (docs/mcp.md, Memory).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any

import gymnasium as gym

TRIM_INTERVAL_S = 2.0
"""Least seconds between two returns of freed heap memory to the OS (:func:`release_memory`)."""

_LIBC: Any = None


def release_memory() -> bool:
    """Return freed heap memory to the OS (glibc ``malloc_trim``); False where unavailable.

    Images are large allocations; freed by many threads they stay in glibc's arenas (the
    server's RSS then stays at its peak). Trimming hands the free pages back.
    """
    libc = _libc()
    if not libc:
        return False
    libc.malloc_trim(0)
    return True


MMAP_THRESHOLD = 4 * 1024 * 1024
"""Allocations from this size on get their own memory map (:func:`limit_heap_retention`)."""

_M_MMAP_THRESHOLD = -3
"""glibc's ``mallopt`` parameter number of ``M_MMAP_THRESHOLD``."""


def limit_heap_retention(threshold: int = MMAP_THRESHOLD) -> bool:
    """Give every allocation of ``threshold`` bytes or more its own map (glibc; process-wide).

    glibc raises its mmap threshold each time a large block is freed (up to 32 MiB), after which
    the images of an episode (a few MiB each) land in the heap arenas of the threads that made
    them, and freed ones stay resident. A fixed threshold returns each freed image to the OS at
    once. ``m3gym mcp`` calls it at start-up (docs/mcp.md, Memory). Returns False where it is
    unavailable.
    """
    libc = _libc()
    if not libc:
        return False
    return bool(libc.mallopt(_M_MMAP_THRESHOLD, int(threshold)))


def _libc() -> Any:
    """Return glibc (``malloc_trim`` and ``mallopt``), or False where there is none."""
    global _LIBC
    if _LIBC is None:
        _LIBC = False
        if sys.platform.startswith("linux"):
            try:
                lib = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
                lib.malloc_trim  # noqa: B018 - glibc only (musl has none)
                lib.mallopt  # noqa: B018
                _LIBC = lib
            except (OSError, AttributeError):
                pass
    return _LIBC


def release_episode_images(env: gym.Env) -> None:
    """Drop the images of an env's last episode (the env goes to the pool; reset rebuilds them)."""
    from m3gym.state import ImageState

    inner = env.unwrapped
    if hasattr(inner, "state") and hasattr(inner, "max_images"):
        inner.state = ImageState(inner.max_images, inner.max_bytes)
        inner._views = {}
        inner.task = None
        inner._ctx = None


def image_bytes(env: gym.Env) -> int:
    """Return the bytes of image data an env holds (its episode's image state)."""
    state = getattr(env.unwrapped, "state", None)
    return int(getattr(state, "bytes_used", 0))
