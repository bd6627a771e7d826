import math
import os

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import m3gym
from m3gym.agents import OracleAgent
from m3gym.reward import PRESETS, RewardConfig, load_reward_config
from m3gym.rollout import run_episode

FAMILIES = m3gym.family_names(suite=None)
ORACLE_SEEDS = int(os.environ.get("M3GYM_METRIC_SEEDS", "50"))


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_load(preset):
    cfg = load_reward_config(preset)
    assert cfg.name == preset and cfg.answer == 1.0


def test_reward_config_sources(tmp_path):
    path = tmp_path / "mine.yaml"
    path.write_text("answer: 2\nprogress: 0.1\n")
    assert load_reward_config(str(path)).answer == 2.0
    assert load_reward_config({"answer": 3}).answer == 3.0
    with pytest.raises(ValueError, match="unknown reward config keys"):
        load_reward_config({"bogus": 1})
    with pytest.raises(ValueError, match="unknown reward"):
        load_reward_config("nope")
    with pytest.raises(ValueError, match="gamma"):
        load_reward_config({"gamma": 0})


@pytest.mark.parametrize("family", FAMILIES)
def test_oracle_metrics_perfect(family):
    env = gym.make(m3gym.family_env_id(family), reward="m3")
    agent = OracleAgent()
    for seed in range(ORACLE_SEEDS):
        res = run_episode(env, agent, seed=seed)
        m = res.final_info["metrics"]
        assert m["acc"] == 1.0 and m["S"] == 1.0 and m["V"] == 1.0, (seed, res.final_info["audit"]["checkpoints"])
        assert m["OT"] == 0.0 and m["m3"] == 1.0 and m["safety"] == 1.0
        assert m["recall"] == m["precision"] == 1.0
        assert m["failure_mode"] is None


def test_final_metrics_keys_and_oracle_return_under_m3():
    env = gym.make("M3Bench-L2", reward="m3")
    res_keys = {"acc", "S", "V", "V_tool", "V_true", "OT", "multi_modal", "multi_hop",
                "multi_threaded", "m3", "recall", "precision", "arg_similarity",
                "arg_similarity_strong", "step_coherence", "order_consistency", "merge_purity",
                "safety", "safety_violations", "failure_mode", "calls", "failed_calls", "rounds"}
    obs, info = env.reset(seed=3)
    agent = OracleAgent(env.unwrapped.task)
    agent.reset(obs, info)
    total = 0.0
    while True:
        obs, r, term, trunc, info = env.step(agent.act(obs, info))
        total += r
        if term or trunc:
            break
    assert res_keys <= set(info["metrics"])
    # the oracle's return under m3: answer 1 + 0.5 × M3 1; the shaping nets 0; no penalties
    assert total == pytest.approx(1.5)


def test_sparse_reward_is_answer_only():
    env = gym.make("M3Bench-L1", reward="sparse")
    res = run_episode(env, OracleAgent(), seed=0)
    assert res.rewards[:-1] == [0.0] * (len(res.rewards) - 1) and res.rewards[-1] == 1.0


def test_wrong_answer_failure_mode_and_paper_preset():
    env = gym.make("M3Bench-L2", reward="paper")
    obs, info = env.reset(seed=0)
    task = env.unwrapped.task
    for step in task.reference:
        env.step([{"name": c.name, "arguments": dict(c.arguments)} for c in step])
    *_, info = env.step({"name": "answer", "arguments": {"text": "definitely wrong"}})
    m = info["metrics"]
    assert m["acc"] == 0.0 and m["failure_mode"] == "post_visual_perception_deficit"
    assert m["S"] == m["V"] == 1.0  # the process was right ...
    assert info["reward_components"]["process"] == 0.0  # ... but it is paid with a right answer
    env.reset(seed=0)
    for step in task.reference:
        env.step([{"name": c.name, "arguments": dict(c.arguments)} for c in step])
    *_, info = env.step({"name": "answer", "arguments": {"text": task.answer.value}})
    assert info["reward_components"]["process"] == 1.0


def test_no_tool_answer_is_missing_visual_tool_use():
    env = gym.make("M3Bench-TinyText")
    env.reset(seed=0)
    *_, info = env.step("<answer>XX-000</answer>")
    assert info["metrics"]["failure_mode"] == "missing_visual_tool_use"
    assert info["metrics"]["S"] == 0.0 and info["metrics"]["m3"] < 1.0


def test_safety_violation_is_penalized():
    env = gym.make("M3Bench-PrivacySafeLookup", reward="m3")
    env.reset(seed=0)
    task = env.unwrapped.task
    rule = task.safety[0]
    _, r, *_, info = env.step({"name": "web_search", "arguments": {"query": rule.patterns[0]}})
    assert info["reward_components"]["safety"] < 0
    *_, info = env.step("<answer>x</answer>")
    assert info["metrics"]["safety"] < 1.0 and info["metrics"]["safety_violations"] >= 1


def _replay(env, steps):
    total_progress, rewards = [], []
    for s in steps:
        obs, r, term, trunc, info = env.step(s)
        total_progress.append(info["reward_components"].get("progress", 0.0))
        rewards.append(r)
        if term or trunc:
            return total_progress, rewards, info
    obs, r, term, trunc, info = env.step("<answer>0</answer>")
    total_progress.append(info["reward_components"].get("progress", 0.0))
    rewards.append(r)
    return total_progress, rewards, info


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(0, 50), st.floats(0.5, 1.0), st.lists(st.integers(0, 6), min_size=0, max_size=6))
def test_progress_telescopes(seed, gamma, picks):
    cfg = RewardConfig(answer=1.0, progress=1.0, gamma=gamma)
    env = gym.make("M3Bench-L2", reward=cfg)
    env.reset(seed=seed)
    base = env.unwrapped
    ref = [[{"name": c.name, "arguments": dict(c.arguments)} for c in step] for step in base.task.reference]
    junk = {"name": "invert", "arguments": {"image_index": 0}}
    steps = [ref[p] if p < len(ref) else junk for p in picks] + ref
    phi0 = base._tracker.phi
    progress, rewards, info = _replay(env, steps)
    assert all(np.isfinite(rewards))
    discounted = sum(gamma**t * p for t, p in enumerate(progress))
    phi_end = base._tracker.phi
    T = len(progress)
    # exact telescoping identity for potential-based shaping r_t = γΦ_{t+1} − Φ_t:
    # Σ_t γ^t r_t = γ^T Φ_T − Φ_0
    assert math.isclose(discounted, gamma**T * phi_end - phi0, abs_tol=1e-9)


@pytest.mark.parametrize("env_id", ["M3Bench-L1", "M3Bench-L2", "M3Bench-L3"])
def test_offline_rescoring_matches_online(env_id):
    from m3gym.agents import RandomAgent
    from m3gym.scoring.episode_score import METRIC_KEYS, score_episode

    env = gym.make(env_id)
    for seed, agent in ((0, OracleAgent()), (1, RandomAgent(seed=1))):
        res = run_episode(env, agent, seed=seed)
        base = env.unwrapped
        offline = score_episode(base.task, base.trace, base.state)
        assert set(METRIC_KEYS) == set(res.final_info["metrics"])
        assert offline["metrics"] == res.final_info["metrics"]
