"""The error :func:`~m3gym.testing.check_family` raises, and how each check builds it."""

from __future__ import annotations


class FamilyCheckError(AssertionError):
    """A family broke a guarantee (the message names the check, the seed and the difficulty)."""


def _fail(name: str, check: str, message: str) -> FamilyCheckError:
    return FamilyCheckError(f"check_family({name!r}) [{check}]: {message}")
