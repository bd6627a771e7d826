import dataclasses
import hashlib
import json
import pickle
import subprocess
import sys
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import m3gym
from m3gym.agents import OracleAgent

ENV_IDS = m3gym.env_ids()


def test_level_ids_registered():
    assert "M3Bench-L1-v4" in ENV_IDS
    for env_id in ENV_IDS:
        assert env_id in gym.registry


def test_make_with_module_prefix_in_fresh_process():
    code = "import gymnasium as gym; e = gym.make('m3gym:M3Bench-L1'); o, i = e.reset(seed=1); print(i['task_id'])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert "/" in out.stdout


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_check_env(env_id):
    env = gym.make(env_id)
    with warnings.catch_warnings():
        warnings.simplefilter("error", category=UserWarning)
        check_env(env.unwrapped, skip_render_check=True)
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", message=".*different from the unwrapped.*")
        check_env(gym.make(env_id), skip_render_check=True)


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_oracle_episode_obs_in_space_and_correct(env_id):
    env = gym.make(env_id)
    for seed in range(3):
        obs, info = env.reset(seed=seed)
        assert env.observation_space.contains(obs)
        agent = OracleAgent(env.unwrapped.task)
        agent.reset(obs, info)
        done = False
        while not done:
            obs, reward, term, trunc, info = env.step(agent.act(obs, info))
            assert env.observation_space.contains(obs)
            assert np.isfinite(reward)
            assert all(c["ok"] for c in info["calls"]), info["calls"]
            done = term or trunc
        assert term and info["answer_correct"]


def _episode_digest(env_id: str, seed: int) -> str:
    env = gym.make(env_id)
    obs, info = env.reset(seed=seed)
    h = hashlib.sha256()
    agent = OracleAgent(env.unwrapped.task)
    agent.reset(obs, info)
    done = False
    while True:
        h.update(obs["text"].encode())
        for img in obs["images"]:
            h.update(img.tobytes())
        if done:
            break
        obs, reward, term, trunc, info = env.step(agent.act(obs, info))
        h.update(repr(float(reward)).encode())
        done = term or trunc
    return h.hexdigest()


@pytest.mark.parametrize("env_id", ENV_IDS)
def test_same_seed_byte_identical(env_id):
    assert _episode_digest(env_id, 7) == _episode_digest(env_id, 7)


def test_byte_identical_across_processes_and_hash_seeds():
    code = ("import m3gym, sys; sys.path.insert(0, 'tests'); from test_env import _episode_digest; "
            "print([_episode_digest(e, 3) for e in m3gym.env_ids()])")
    outs = []
    for hs in ("1", "12345"):
        env = {"PYTHONHASHSEED": hs, "PATH": ""}
        r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env,
                           check=True)
        outs.append(r.stdout.strip())
    assert outs[0] == outs[1]
    assert outs[0] == str([_episode_digest(e, 3) for e in ENV_IDS])


def test_bad_input_never_crashes_and_is_reported():
    env = gym.make("M3Bench-L1")
    env.reset(seed=0)
    bad = [
        "no tags here",
        {"name": "nope", "arguments": {}},
        {"name": "crop", "arguments": {"image_index": 0}},
        {"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [500, 500, 100, 100]}},
        {"name": "crop", "arguments": {"image_index": -1, "bbox_2d": [0, 0, 10, 10]}},
        {"name": "crop", "arguments": {"image_index": 99, "bbox_2d": [0, 0, 10, 10]}},
        {"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [0, 0, 10, 10], "zoom_scale": 50}},
        {"name": "rotate", "arguments": {"image_index": 0, "angle": float("nan")}},
        {"name": "resize", "arguments": {"image_index": 0, "width": 10**6, "height": 10**6}},
        {"name": "grayscale", "arguments": {"image_index": 0, "extra": 1}},
    ]
    total_failed = 0
    for action in bad:
        obs, reward, term, trunc, info = env.step(action)
        failed = [c for c in info["calls"] if not c["ok"]] + info["parse_errors"]
        assert failed, action
        assert "rror" in obs["text"]
        total_failed += len(failed)
        if term or trunc:
            break
    assert total_failed >= 10


def test_same_step_image_is_refused():
    env = gym.make("M3Bench-L1")
    env.reset(seed=0)
    obs, *_ , info = env.step([{"name": "grayscale", "arguments": {"image_index": 0}},
                               {"name": "invert", "arguments": {"image_index": 1}}])
    assert info["calls"][0]["ok"] and not info["calls"][1]["ok"]
    assert "same step" in info["calls"][1]["error"]
    obs, *_ , info = env.step({"name": "invert", "arguments": {"image_index": 1}})
    assert info["calls"][0]["ok"]


def test_budgets_truncate():
    env = gym.make("M3Bench-L1", max_tool_calls=3, max_rounds=50)
    env.reset(seed=0)
    call = {"name": "grayscale", "arguments": {"image_index": 0}}
    *_, term, trunc, info = env.step([call, call, call])
    assert not trunc
    *_, term, trunc, info = env.step(call)
    assert trunc and not term and "budget" in info["calls"][0]["error"]
    env = gym.make("M3Bench-L1", max_rounds=2)
    env.reset(seed=0)
    assert not env.step(call)[3]
    assert env.step(call)[3]


def test_tool_schemas_and_action_space():
    env = gym.make("M3Bench-L1")
    _, info = env.reset(seed=0)
    names = {s["function"]["name"] for s in info["tool_schemas"]}
    for tool in ("crop", "rotate", "flip", "resize", "grayscale", "autocontrast", "invert",
                 "equalize", "threshold", "blur", "sharpen", "denoise", "edge_detect", "enhance",
                 "answer"):
        assert tool in names
    mcp = env.unwrapped.tool_schemas("mcp")
    assert all("inputSchema" in s for s in mcp)
    json.dumps(info["tool_schemas"])
    space = env.action_space
    space.seed(0)
    for _ in range(50):
        a = space.sample()
        assert space.contains(a)
        *_, info = env.step(a)
        if env.unwrapped._done:
            env.reset(seed=1)
    assert not space.contains({"name": "crop", "arguments": {"image_index": 0}})
    assert not space.contains("garbage")


def test_view_resolution_and_render():
    env = gym.make("M3Bench-L1", view_size=256, render_mode="rgb_array")
    obs, _ = env.reset(seed=0)
    full = env.unwrapped.state[0].array
    assert max(obs["images"][0].shape[:2]) == 256 < max(full.shape[:2])
    sheet = env.render()
    assert sheet.dtype == np.uint8 and sheet.ndim == 3 and sheet.std() > 0


def test_pickle_env():
    env = m3gym.M3BenchEnv(level=1)
    env.reset(seed=0)
    clone = pickle.loads(pickle.dumps(env))
    assert clone.task.task_id == env.task.task_id


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.one_of(
    st.text(max_size=60),
    st.builds(lambda n, a: {"name": n, "arguments": a},
              st.sampled_from(["crop", "rotate", "resize", "threshold", "blur", "web_search",
                               "fetch_webpage", "image_search", "download_image", "bogus"]),
              st.dictionaries(st.sampled_from(["image_index", "bbox_2d", "angle", "scale",
                                               "width", "height", "value", "mode", "query",
                                               "url", "radius", "zoom_scale"]),
                              st.one_of(st.integers(-5, 5000), st.floats(), st.text(max_size=5),
                                        st.lists(st.floats(-10, 2000), max_size=5)),
                              max_size=4))), min_size=1, max_size=6))
def test_fuzzed_actions_never_raise(actions):
    env = gym.make("M3Bench-L1")
    env.reset(seed=0)
    for a in actions:
        obs, reward, term, trunc, info = env.step(a)
        assert np.isfinite(reward)
        if term or trunc:
            break


AUTOCONTRAST_0 = {"name": "autocontrast", "arguments": {"image_index": 0}}


def _contrast_before(env, task) -> float | None:
    """Autocontrast Image 0 (evidence below legible scale) and return its measured contrast."""
    env.reset(options={"task": task})
    env.step(AUTOCONTRAST_0)  # fills the cache with Image 0's measurement
    return env._tracker.checkpoints._native_contrast(env.state[0], task.evidence[0])


def test_input_measure_cache_never_serves_another_task():
    env = gym.make(m3gym.family_env_id("tiny_faint_text")).unwrapped
    task = m3gym.make_task("tiny_faint_text", 5)
    before = _contrast_before(env, task)
    assert before is not None and len(env._input_measures) == 1
    assert _contrast_before(env, task) == before and len(env._input_measures) == 1  # a hit
    # same task id, different pixels (the evidence restored by hand): must be measured anew
    legible = np.array(task.images[0])
    x0, y0, x1, y1 = (int(v) for v in task.evidence[0].box)
    legible[y0:y1, x0:x1] = task.evidence[0].clean[:, :, None]
    legible.setflags(write=False)
    after = _contrast_before(env, dataclasses.replace(task, images=(legible,)))
    assert after is not None and after > before + 50


def test_pickle_env_with_a_warm_input_measure_cache():
    from m3gym.spec import Checkpoint
    from m3gym.tools.catalogue import CONTRAST_TOOLS

    env = gym.make(m3gym.family_env_id("tiny_faint_text")).unwrapped
    task = m3gym.make_task("tiny_faint_text", 3)
    # a contrast checkpoint on the tiny label (its reference is one crop now): it measures
    # Image 0's native ink contrast when a contrast op runs on it
    task = dataclasses.replace(task, checkpoints=(*task.checkpoints, Checkpoint(
        "s_contrast", "S", "contrast_op", {"evidence": "label", "tools": list(CONTRAST_TOOLS)},
        "a contrast op on an image holding the label")))
    for _ in range(2):  # autocontrast of Image 0 measures the input's native ink contrast
        env.reset(options={"task": task})
        env.step(AUTOCONTRAST_0)
    assert len(env._input_measures) == 1
    clone = pickle.loads(pickle.dumps(env))
    assert len(clone._input_measures) == 0  # a cache pickles empty (its keys are weak)
    assert clone._tracker.checkpoints.input_views is clone._input_measures
    clone.reset(options={"task": task})
    clone.step(AUTOCONTRAST_0)
    _, _, _, _, a = clone.step({"name": "answer", "arguments": {"text": "1"}})
    env.reset(options={"task": task})
    env.step(AUTOCONTRAST_0)
    _, _, _, _, b = env.step({"name": "answer", "arguments": {"text": "1"}})
    assert a["metrics"] == b["metrics"]
