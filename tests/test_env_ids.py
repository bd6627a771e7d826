"""Env ids carry the frozen tasks' version: a pinned id gets exactly its tasks or fails."""

from __future__ import annotations

import gymnasium as gym
import pytest
from gymnasium import error
from gymnasium.envs.registration import parse_env_id

import m3gym
from m3gym.versions import MANIFEST_VERSION
from m3gym.wrappers import discrete_env_ids


def _m3gym_ids() -> list[str]:
    return [i for i in gym.registry if i.startswith("M3Bench-")]


def test_every_registered_id_carries_the_manifest_version():
    assert m3gym.ENV_VERSION == MANIFEST_VERSION
    ids = _m3gym_ids()
    assert set(m3gym.env_ids()) | set(discrete_env_ids()) == set(ids)
    for env_id in ids:
        assert parse_env_id(env_id)[2] == MANIFEST_VERSION, env_id


def test_unversioned_ids_resolve_to_the_newest_version():
    assert m3gym.resolve_env_id("M3Bench-L2") == f"M3Bench-L2-v{MANIFEST_VERSION}"
    assert m3gym.resolve_env_id("M3Bench-L2-Discrete") == \
        f"M3Bench-L2-Discrete-v{MANIFEST_VERSION}"
    assert m3gym.resolve_env_id("M3Bench-Nope") == "M3Bench-Nope"
    with pytest.warns(UserWarning, match="latest versioned environment"):
        env = gym.make("M3Bench-L2", disable_env_checker=True)
    assert env.spec.id == m3gym.level_env_id(2)
    env.close()


def test_an_older_version_is_refused():
    with pytest.raises(error.DeprecatedEnv, match=f"M3Bench-L1-v{MANIFEST_VERSION}"):
        gym.make(f"M3Bench-L1-v{MANIFEST_VERSION - 1}")


def test_eval_accepts_versioned_and_unversioned_ids():
    from m3gym.eval.runner import env_scope

    assert env_scope("M3Bench-L3") == env_scope(m3gym.level_env_id(3))
    with pytest.raises(ValueError, match="unknown env"):
        env_scope("M3Bench-L9")
