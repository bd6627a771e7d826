"""m3gym served through OpenEnv (needs ``pip install .[openenv]``; scripts/ci_extra.sh openenv tests/test_integration_openenv.py).

The real server (``m3gym openenv``) runs in a subprocess and is reached with OpenEnv's own
``GenericEnvClient`` and m3gym's typed ``M3GymEnv``: oracle episodes equal local ``gym.make``
episodes (return, metrics, pixels), sessions stay apart, refusals are one line, and
``openenv validate`` passes on the running server and on the package folder.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest

if os.environ.get("M3GYM_REQUIRE_EXTRA") == "openenv":  # CI's .[openenv] venv: never skip
    import openenv  # noqa: F401
else:
    pytest.importorskip("openenv")

from openenv.core.generic_client import GenericEnvClient  # noqa: E402

import m3gym  # noqa: E402, F401
from m3gym.openenv.client import M3GymEnv, decode_image  # noqa: E402
from m3gym.openenv.models import M3GymAction, ToolCall  # noqa: E402
from m3gym.openenv.oracle import oracle_actions  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]
BIN = Path(sys.executable).parent


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@pytest.fixture(scope="module")
def url():
    port = _free_port()
    proc = subprocess.Popen([str(BIN / "m3gym"), "openenv", "--port", str(port),
                             "--env", "M3Bench-L1", "--env", "M3Bench-L2", "--env", "M3Bench-L3",
                             "--max-sessions", "4"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    base = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    while True:
        try:
            urllib.request.urlopen(base + "/health", timeout=1)
            break
        except OSError:
            if proc.poll() is not None or time.monotonic() > deadline:
                proc.kill()
                pytest.fail("server did not start:\n" + (proc.stdout.read() or ""))
            time.sleep(0.3)
    yield base
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()


def _local(env_id, seed):
    env = gym.make(m3gym.resolve_env_id(env_id), disable_env_checker=True).unwrapped
    obs, info = env.reset(seed=seed)
    return env, obs, info


@pytest.mark.parametrize("env_id, seed", [("M3Bench-L1", 3), ("M3Bench-L2", 7),
                                          ("M3Bench-L3", 11)])
def test_oracle_episode_equals_local_gym_make(url, env_id, seed):
    env, obs, info = _local(env_id, seed)
    rewards, final = [], {}
    with M3GymEnv(base_url=url).sync() as client:
        res = client.reset(env_id=env_id, seed=seed)
        assert res.observation.metadata["task_id"] == info["task_id"]
        assert res.observation.text == obs["text"]
        assert res.observation.image_indices == list(obs["image_indices"])
        for k, data in zip(res.observation.image_indices, res.observation.images):
            assert np.array_equal(decode_image(data), env.view(k))
        for action in oracle_actions(env.task):
            _, reward, terminated, truncated, final = env.step(action.env_action())
            rewards.append(reward)
            res = client.step(action)
            assert res.reward == pytest.approx(reward, abs=1e-12)
            assert res.done == (terminated or truncated)
            for k, data in zip(res.observation.image_indices, res.observation.images):
                assert np.array_equal(decode_image(data), env.view(k))
            if res.done:
                break
        meta = res.observation.metadata
    assert meta["terminated"] is True and meta["truncated"] is False
    assert meta["episode_return"] == pytest.approx(sum(rewards), abs=1e-9)
    assert meta["episode_return"] == pytest.approx(1.5)
    assert meta["metrics"] == final["metrics"]
    assert set(meta["reward_components"]) == set(final["reward_components"])


def test_generic_client_plays_a_task_seed_row(url):
    from m3gym.integrations.session import EpisodeSession

    local = EpisodeSession()
    local.start({"env_id": "M3Bench-L1", "task_seed": 4})
    with GenericEnvClient(base_url=url).sync() as client:
        res = client.reset(env_id="M3Bench-L1", task_seed=4)
        assert res.metadata["task_id"] == local.task.task_id
        call = {"name": "answer", "arguments": {"text": local.task.answer.value}}
        res = client.step({"tool_calls": [call]})
        local.act(call)
    assert res.done is True
    assert res.metadata["episode_return"] == pytest.approx(local.episode_return)
    assert res.metadata["metrics"]["acc"] == 1.0


def test_two_sessions_at_once_stay_apart(url):
    results = {}

    def play(env_id, seed):
        env, _, info = _local(env_id, seed)
        with M3GymEnv(base_url=url).sync() as client:
            first = client.reset(env_id=env_id, seed=seed)
            res = None
            for action in oracle_actions(env.task):
                res = client.step(action)
                if res.done:
                    break
            state = client.state()
        results[env_id] = (first.observation.metadata["task_id"], info["task_id"],
                           res.observation.metadata, state)

    threads = [threading.Thread(target=play, args=a) for a in (("M3Bench-L1", 21),
                                                                ("M3Bench-L2", 22))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert set(results) == {"M3Bench-L1", "M3Bench-L2"}
    for env_id, (served, local, meta, state) in results.items():
        assert served == local
        assert meta["episode_return"] == pytest.approx(1.5)
        assert state.task_id == local and state.env_id.startswith(env_id) and state.terminated


def test_schema_invalid_action_raises_and_bad_call_is_scored(url):
    with M3GymEnv(base_url=url).sync() as client:
        client.reset(env_id="M3Bench-L1", seed=1)
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            client.step({"tool_calls": [{"nme": "crop"}]})
        with pytest.raises(RuntimeError, match="VALIDATION_ERROR"):
            client.step({"tool_calls": [], "text": "x"})
        res = client.step(M3GymAction(tool_calls=[ToolCall(name="no_such_tool")]))
        assert res.done is False and res.observation.metadata["ok"] is False
        assert res.reward < 0  # the m3 preset charges an invalid call
        res = client.step(M3GymAction(text="no tool call at all"))
        assert res.observation.metadata["ok"] is False


def test_refusals_are_one_line_naming_the_allowed_values(url, tmp_path):
    secret = tmp_path / "reward.yaml"
    secret.write_text("answer: 7.0\n# secret-content\n")
    with GenericEnvClient(base_url=url).sync() as client:
        with pytest.raises(RuntimeError) as err:
            client.reset(env_id="M3Bench-L1", seed=0, reward=str(secret))
        msg = str(err.value)
        assert "unknown reward" in msg and "m3" in msg and "sparse" in msg
        assert str(secret) not in msg and "secret" not in msg and "\n" not in msg
        with pytest.raises(RuntimeError) as err:
            client.reset(env_id="M3Bench-Classic", seed=0)
        msg = str(err.value)
        assert "unknown env" in msg and "M3Bench-L1, M3Bench-L2, M3Bench-L3" in msg
        assert "\n" not in msg
        with pytest.raises(RuntimeError, match="unknown reset option 'records'"):
            client.reset(env_id="M3Bench-L1", seed=0, records=str(secret))
        with pytest.raises(RuntimeError, match="not both"):
            client.reset(env_id="M3Bench-L1", seed=0, task_seed=1)
        res = client.reset(env_id="M3Bench-L1", seed=0, reward="sparse")
        assert res.metadata["reward"] == "sparse"


def test_openenv_validate_url_and_package(url):
    cli = str(BIN / "openenv")
    run = subprocess.run([cli, "validate", "--url", url], capture_output=True, text=True,
                         timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "Verdict: PASS" in run.stdout
    run = subprocess.run([cli, "validate", str(ROOT / "m3gym" / "openenv")],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stdout + run.stderr
    assert "PASS  static.manifest" in run.stdout
