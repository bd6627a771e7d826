"""Tests of the shared LRU cache."""

from __future__ import annotations

import copy
import pickle

from m3gym.cache import LRUCache


def test_lru_evicts_least_recent_and_lookup_refreshes() -> None:
    cache = LRUCache(2)
    cache["a"], cache["b"] = 1, 2
    assert cache.lookup("a") == 1  # "a" is now the most recent
    cache["c"] = 3
    assert list(cache) == ["a", "c"] and cache.lookup("b") is None
    cache["a"] = 10  # overwriting refreshes too
    cache["d"] = 4
    assert dict(cache) == {"a": 10, "d": 4}
    assert LRUCache(0).maxsize == 1


def test_lru_pickles_and_copies_empty_with_its_size() -> None:
    cache = LRUCache(3)
    cache["k"] = object()
    for clone in (pickle.loads(pickle.dumps(cache)), copy.deepcopy(cache)):
        assert isinstance(clone, LRUCache) and len(clone) == 0 and clone.maxsize == 3
