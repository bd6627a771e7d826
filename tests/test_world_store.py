"""The world's logo store: built once per machine, memory-mapped, identical to a fresh build."""

from __future__ import annotations

import multiprocessing as mp
import os
from dataclasses import dataclass

import numpy as np
import pytest

from m3gym.web import build_world, render_logo
from m3gym.web.logos import build_logo_index
from m3gym.web.store import CACHE_ENV, cache_dir, entry_name, load_logo_store


@dataclass(frozen=True)
class Spec:
    """A stand-in logo spec: its repr keys the cache entry."""

    seed: int
    size: int = 24


def render(specs: list[Spec]) -> list[np.ndarray]:
    """Deterministic small 'logos' (uint8 RGB) drawn from each spec's seed."""
    return [np.random.default_rng(s.seed).integers(0, 256, (s.size, s.size, 3), dtype=np.uint8)
            for s in specs]


SPECS = [Spec(i, 24 + 4 * (i % 3)) for i in range(7)]


def test_store_round_trip_matches_a_fresh_index(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, str(tmp_path))
    store = load_logo_store("t", SPECS, lambda: iter(render(SPECS)))
    fresh = render(SPECS)
    index = build_logo_index(fresh)
    assert len(store) == 7
    for i, logo in enumerate(fresh):
        got = store.logo(i)
        assert got.shape == logo.shape and np.array_equal(got, logo)
        assert not got.flags.writeable and type(got) is np.ndarray
    for name in ("coarse", "fine", "colour"):
        assert np.array_equal(getattr(store.index, name), getattr(index, name))
    entries = [p.name for p in tmp_path.iterdir() if p.is_dir()]
    assert entries == [entry_name("t", SPECS)]
    # a second load maps the entry and never renders
    again = load_logo_store("t", SPECS, lambda: pytest.fail("rendered again"))
    assert np.array_equal(again.index.fine, store.index.fine)


def test_entry_name_follows_the_specs():
    assert entry_name("t", SPECS) == entry_name("t", list(SPECS))
    assert entry_name("t", SPECS) != entry_name("t", SPECS[:-1] + [Spec(99)])
    assert entry_name("t", SPECS).startswith("world-t-")


def _build_in_child(root: str, queue) -> None:
    os.environ[CACHE_ENV] = root
    store = load_logo_store("race", SPECS, lambda: iter(render(SPECS)))
    queue.put(store.index.fine.tobytes() + store.pixels.tobytes())


def test_concurrent_first_builds_agree_and_leave_one_entry(tmp_path):
    ctx = mp.get_context("fork")
    queue = ctx.Queue()
    procs = [ctx.Process(target=_build_in_child, args=(str(tmp_path), queue)) for _ in range(4)]
    for p in procs:
        p.start()
    results = [queue.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert len(set(results)) == 1
    names = sorted(p.name for p in tmp_path.iterdir())
    assert names == [entry_name("race", SPECS), entry_name("race", SPECS) + ".lock"]


def test_cache_off_and_unusable_cache_build_in_memory(tmp_path, monkeypatch):
    monkeypatch.setenv(CACHE_ENV, "off")
    assert cache_dir() is None
    store = load_logo_store("t", SPECS, lambda: iter(render(SPECS)))
    assert np.array_equal(store.logo(3), render(SPECS)[3])
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv(CACHE_ENV, str(blocker / "cache"))
    with pytest.warns(RuntimeWarning, match="unusable"):
        store = load_logo_store("t", SPECS, lambda: iter(render(SPECS)))
    assert np.array_equal(store.logo(6), render(SPECS)[6])


def test_world_logos_and_index_equal_a_fresh_render():
    world = build_world(0, "train")
    picks = [world.entities[i] for i in (0, 7, len(world.entities) - 1)]
    for e in picks:
        logo = world.logo(e)
        assert np.array_equal(logo, render_logo(e.logo)) and not logo.flags.writeable
    fresh = build_logo_index(render_logo(e.logo) for e in world.entities)
    for name in ("coarse", "fine", "colour"):
        assert np.array_equal(getattr(world.logo_descriptors, name), getattr(fresh, name))


def test_the_suite_reads_only_a_cache_it_created():
    """conftest points every test process at a fresh cache directory (never ~/.cache/m3gym)."""
    root = cache_dir()
    assert root is not None and root.name.startswith("m3gym-test-cache-")
    assert os.environ[CACHE_ENV] == str(root)
