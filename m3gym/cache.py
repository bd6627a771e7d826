"""One bounded least-recently-used cache for the per-task caches that survive resets."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any


class LRUCache(OrderedDict):
    """An ``OrderedDict`` that keeps at most ``maxsize`` entries, evicting the least recent.

    Setting an entry makes it the most recent and evicts the oldest beyond ``maxsize``;
    :meth:`lookup` returns an entry (or ``None``) and marks it recent. Plain ``get`` and ``[]``
    read without touching the order.
    """

    def __init__(self, maxsize: int) -> None:
        super().__init__()
        self.maxsize = max(1, int(maxsize))

    def __setitem__(self, key: Any, value: Any) -> None:
        """Store ``value`` as the most recent entry and evict beyond ``maxsize``."""
        super().__setitem__(key, value)
        self.move_to_end(key)
        while len(self) > self.maxsize:
            self.popitem(last=False)

    def lookup(self, key: Any) -> Any:
        """Return the entry of ``key`` (marking it recent), or ``None``."""
        value = self.get(key)
        if value is not None:
            self.move_to_end(key)
        return value

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickle (and copy) as an empty cache of the same size: a cache is only a cache."""
        return (type(self), (self.maxsize,))
