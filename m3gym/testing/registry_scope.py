"""``registered``: family classes in the registry for the duration of a ``with`` block only."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

from m3gym.tasks import registry
from m3gym.tasks.registry import FamilyConfig, register_family

_HELD: Counter[type[FamilyConfig]] = Counter()
"""How many enclosing :func:`registered` blocks hold each class (an inner block keeps them)."""


@contextmanager
def registered(*classes: type[FamilyConfig]) -> Iterator[None]:
    """Register ``classes`` for the duration of a ``with`` block, then restore the registry.

    For tests of families defined outside ``m3gym.tasks.families`` (examples, toy families whose
    module registers them on import): on exit the registry is what it was on entry *without*
    ``classes`` (even when importing their module had registered them before the block) and
    without anything registered inside the block, so nothing leaks into ``family_names()`` (the
    level envs draw from it) for the rest of the process. Blocks nest: a class an enclosing
    block holds stays registered.
    """
    registry._load_builtin_families()
    before = {n: c for n, c in registry._FAMILIES.items() if c not in classes or _HELD[c] > 0}
    try:
        for cls in classes:
            _HELD[cls] += 1
            register_family(cls)
        yield
    finally:
        for cls in classes:
            _HELD[cls] -= 1
        registry._FAMILIES.clear()
        registry._FAMILIES.update(before)
