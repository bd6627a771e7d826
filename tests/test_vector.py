"""Vector envs with Gymnasium's defaults: async (shared memory on) matches sync exactly."""

from __future__ import annotations

import gc
import os

import gymnasium as gym
import numpy as np

import m3gym  # noqa: F401  (registers the ids)
from m3gym.vector import ObservationSlots

ACTIONS = [
    ({"name": "grayscale", "arguments": {"image_index": 0}},
     {"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [0, 0, 500, 500]}}),
    ({"name": "flip", "arguments": {"image_index": 1}},
     {"name": "answer", "arguments": {"text": "no idea"}}),
    ({"name": "answer", "arguments": {"text": "x"}},
     {"name": "invert", "arguments": {"image_index": 0}}),
]


def run(mode: str, **kwargs) -> list:
    """Reset with fixed seeds, run the scripted actions, return every output."""
    env = gym.make_vec("M3Bench-L1", num_envs=2, vectorization_mode=mode, **kwargs)
    try:
        out = [env.reset(seed=[3, 4])[0]]
        for action in ACTIONS:
            obs, reward, term, trunc, _ = env.step(action)
            out.append((obs, reward.tolist(), term.tolist(), trunc.tolist()))
        return out
    finally:
        env.close()


def same(a, b) -> bool:
    """Deep equality of observations (arrays by value and dtype)."""
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return (isinstance(a, np.ndarray) and isinstance(b, np.ndarray) and a.dtype == b.dtype
                and np.array_equal(a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(same(a[k], b[k]) for k in a)
    if isinstance(a, (tuple, list)):
        return type(a) is type(b) and len(a) == len(b) and all(map(same, a, b))
    return a == b


def test_async_with_defaults_matches_sync():
    sync, async_ = run("sync"), run("async")
    assert same(sync, async_)
    # the scripted episode really ran: images were observed and one env answered at step 2
    assert len(sync[1][0]["images"][0]) == 1 and sync[1][0]["images"][0][0].ndim == 3
    assert sync[2][2] == [False, True]


def test_async_without_shared_memory_still_matches():
    assert same(run("sync"), run("async", vector_kwargs={"shared_memory": False}))


def test_live_batch_without_copy_and_slots_cleaned_up():
    env = gym.make_vec("M3Bench-L1", num_envs=2, vectorization_mode="async",
                       vector_kwargs={"copy": False})
    obs, _ = env.reset(seed=[5, 6])
    first = obs["text"]
    env.step(ACTIONS[0])
    assert obs["text"] != first and obs["text"][0].startswith("[")  # reads the newest batch
    directory = env.observations._slots.directory
    assert os.path.isdir(directory)
    env.close()
    del env, obs
    gc.collect()
    assert not os.path.exists(directory)


def test_slots_round_trip_by_hand(tmp_path):
    slots = ObservationSlots(2)
    slots.write(1, {"text": "a", "images": (), "image_indices": ()})
    assert slots.read(1) == {"text": "a", "images": (), "image_indices": ()}
    assert sorted(os.listdir(slots.directory)) == ["slot1.pkl"]
