"""A run's settings: ``--agent-arg``/``--env-arg`` parsing and what a resumed run must keep."""

import json

import pytest

from m3gym.eval.config import EvalConfig, parse_key_values


def test_key_values_are_json_when_they_parse() -> None:
    assert parse_key_values(["a=1", "b=x", "c=[1, 2]", "d=true", "e= 2", "f=a=b"]) == \
        {"a": 1, "b": "x", "c": [1, 2], "d": True, "e": 2, "f": "a=b"}
    for bad in ("novalue", "=1", " =1"):
        with pytest.raises(ValueError, match="expected key=value"):
            parse_key_values([bad])


def test_identity_names_only_what_was_set() -> None:
    base = EvalConfig(envs=("M3Bench-L1",), agent="random")
    assert set(base.identity()) == {"agent", "agent_args", "split", "seed", "reward", "env_args"}
    more = EvalConfig(envs=("M3Bench-L1",), agent="random", samples=4, manifest="m.json",
                      judge_endpoint="http://judge", workers=8, episodes=3)
    ident = more.identity()
    assert ident["samples"] == 4 and ident["manifest"] == "m.json"
    assert ident["judge"] == {"endpoint": "http://judge", "model": None}
    assert "workers" not in ident and "episodes" not in ident  # free to change on --resume


def test_to_dict_is_json() -> None:
    cfg = EvalConfig(envs=("M3Bench-L1", "M3Bench-L2"), agent="random",
                     agent_args={"answer_prob": 0.5}, env_args={"max_images": 8})
    data = json.loads(json.dumps(cfg.to_dict()))
    assert data["envs"] == ["M3Bench-L1", "M3Bench-L2"]
    assert data["agent_args"] == {"answer_prob": 0.5} and data["env_args"] == {"max_images": 8}
    assert EvalConfig(**{**data, "envs": tuple(data["envs"])}) == cfg
