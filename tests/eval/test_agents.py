"""Building a run's agent and checking the arguments a run hands to its agent and env."""

import pytest

import m3gym  # noqa: F401  (registers the env ids)
from m3gym.config_errors import ConfigError
from m3gym.eval.agents import (
    agent_factory,
    build_agent,
    check_agent_args,
    check_code_isolation,
    check_env_args,
    default_agent_name,
)


def test_agents_are_built_by_name_or_module_attr() -> None:
    assert default_agent_name() in ("heuristic", "random")
    agent = build_agent("random", 3, {"answer_prob": 0.5})
    assert type(agent).__name__ == "RandomAgent"
    factory = agent_factory("m3gym.agents.base:RandomAgent")
    assert type(factory(seed=1)).__name__ == "RandomAgent"
    with pytest.raises(ValueError, match="cannot load agent 'no_such_module:x'"):
        agent_factory("no_such_module:x")


@pytest.mark.parametrize(("args", "message"), [
    ({"seed": 1}, r"key 'seed': set by the run \(--seed\)"),
    ({"bogus": 1}, r"unknown key 'bogus' \(known: answer_prob, max_steps\)"),
    ({"answer_prob": "half"}, "key 'answer_prob': expected a number"),
    ({"max_steps": 2.5}, "key 'max_steps': expected an integer"),
])
def test_agent_arguments_are_checked_by_key(args: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_agent_args("random", args)
    with pytest.raises(ConfigError, match=message):
        build_agent("random", 0, args)


@pytest.mark.parametrize(("args", "message"), [
    ({"reward": "m3"}, r"key 'reward': set by the run \(--reward\)"),
    ({"bogus": 1}, "unknown key 'bogus'"),
    ({"max_images": "x"}, "key 'max_images': expected an integer, got 'x'"),
])
def test_env_arguments_are_checked_by_key(args: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        check_env_args("M3Bench-L1", args)


def test_good_arguments_pass_and_atomic_runs_need_no_isolation() -> None:
    check_agent_args("random", {"answer_prob": 1, "max_steps": 3})
    check_env_args("M3Bench-L1", {"max_images": 8, "show_choices": True})
    assert check_code_isolation({}) is None
    assert check_code_isolation({"interface": "atomic"}) is None
