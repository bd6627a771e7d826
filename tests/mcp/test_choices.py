"""What an MCP server's operator lets clients choose: env ids by name, rewards by name."""

import pytest

import m3gym  # noqa: F401  (registers the env ids)
from m3gym.config_errors import ConfigError
from m3gym.mcp.choices import (
    DEFAULT_REWARD,
    allowed_env_ids,
    check_server_env_args,
    default_env_ids,
    reward_choices,
    unversioned,
)
from m3gym.reward import PRESETS


def test_env_ids_go_by_both_names() -> None:
    assert unversioned("M3Bench-L2-v4") == "M3Bench-L2"
    assert unversioned("M3Bench-L2") == "M3Bench-L2"
    assert unversioned("Odd-vx") == "Odd-vx"
    allowed = allowed_env_ids(["M3Bench-L1"])
    assert set(allowed) == {"M3Bench-L1", allowed["M3Bench-L1"]}
    assert allowed["M3Bench-L1"].startswith("M3Bench-L1-v")
    assert set(allowed_env_ids(None)) >= set(default_env_ids())
    with pytest.raises(ValueError, match="'CartPole-v1' is not an m3gym env id"):
        allowed_env_ids(["CartPole-v1"])
    with pytest.raises(ValueError, match="offers no env id"):
        allowed_env_ids([])


def test_rewards_are_presets_and_named_files(tmp_path) -> None:
    configs, sources, default = reward_choices(None)
    assert default == DEFAULT_REWARD and set(configs) == set(sources) == set(PRESETS)
    assert reward_choices(["sparse"])[2] == "sparse"
    strict = tmp_path / "strict.yaml"
    strict.write_text("name: strict\nanswer: 2.0\n")
    configs, sources, default = reward_choices([str(strict)])
    assert default == "strict" and sources["strict"] == str(strict)
    assert reward_choices([f"mine={strict}"])[2] == "mine"
    with pytest.raises(ValueError, match="unknown reward 'm4'"):
        reward_choices(["m4"])  # neither a preset nor a file
    with pytest.raises(ValueError, match="not a preset"):
        reward_choices(["m4="])
    with pytest.raises(ValueError, match="letters, digits"):
        reward_choices([f"a b={strict}"])


@pytest.mark.parametrize(("env_args", "message"), [
    ({"reward": "m3"}, "key 'reward': set by the server"),
    ({"max_images": 4}, "key 'max_images': set by the server"),
    ({"bogus": 1}, "unknown key 'bogus'"),
    ({"records": "/no/such/records.jsonl"}, "--env-arg records="),
])
def test_server_env_args_are_checked_at_start_up(env_args: dict, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_server_env_args(env_args)


def test_good_server_env_args_pass() -> None:
    check_server_env_args({"show_choices": True, "max_tool_calls": 9})
    assert issubclass(ConfigError, ValueError)
