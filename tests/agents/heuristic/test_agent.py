"""The heuristic agent end to end: every level without reading the task, L1 floors, OCR fallback."""

from __future__ import annotations

import os
from typing import Any

import gymnasium as gym
import pytest

import m3gym  # noqa: F401  (registers the env ids)
from m3gym.agents import make_agent, ocr
from m3gym.agents.heuristic import HeuristicAgent
from m3gym.rollout import run_episode
from m3gym.tasks.registry import make_task


class TaskGuard(gym.Wrapper):
    """Forwards reset/step but makes ``.task`` unreadable through the wrapper."""

    def __getattr__(self, name: str) -> Any:
        if name == "task":
            raise AssertionError("the heuristic agent must not read the task")
        return super().__getattr__(name)


def play(env: gym.Env, agent: HeuristicAgent, family: str, seed: int) -> dict[str, Any]:
    """Run one episode driving the agent by hand (no rollout helper that might read the task)."""
    obs, info = env.reset(seed=0, options={"family": family, "task_seed": seed})
    agent.reset(obs, info)
    for _ in range(20):
        obs, _r, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            return info
    raise AssertionError("episode did not end")


@pytest.mark.parametrize("level", [1, 2, 3])
def test_runs_every_level_without_the_task(level: int) -> None:
    env = TaskGuard(gym.make(f"M3Bench-L{level}"))
    agent = HeuristicAgent()
    from m3gym.tasks.registry import family_names

    for family in family_names(level):
        info = play(env, agent, family, 7)
        assert "answer_correct" in info
        assert info["calls_used"] <= 15


def test_agent_holds_no_env_reference() -> None:
    agent = make_agent("heuristic", seed=3)
    assert isinstance(agent, HeuristicAgent)
    assert not any(isinstance(v, gym.Env) for v in vars(agent).values())


@pytest.mark.skipif(not ocr.tesseract_available(), reason="tesseract not installed")
def test_l1_accuracy_floor() -> None:
    env = gym.make("M3Bench-L1")
    agent = HeuristicAgent()
    correct = 0
    families = ("tiny_text", "rotated_text", "faint_text")
    for k in range(12):
        r = run_episode(env, agent, seed=0,
                        options={"family": families[k % 3], "task_seed": 5000 + k})
        correct += bool(r.final_info["answer_correct"])
    assert correct >= 7  # measured 11/12 (tesseract 5.3); floor ~60 %


def test_no_tools_mode_makes_no_calls() -> None:
    env = gym.make("M3Bench-L1")
    agent = HeuristicAgent(use_tools=False)
    r = run_episode(env, agent, seed=0, options={"family": "tiny_text", "task_seed": 11})
    assert r.final_info["metrics"]["calls"] == 0
    assert r.terminated


def test_fallback_path_without_tesseract(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert not ocr.tesseract_available()
    assert ocr.ocr_backend() == "glyph"
    env = gym.make("M3Bench-L1")
    agent = HeuristicAgent()
    correct = 0
    for k in range(6):
        info = play(env, agent, "rotated_text" if k % 2 else "faint_text", 6000 + k)
        correct += bool(info["answer_correct"])
    assert correct >= 2  # measured with the glyph matcher; chance is 1/6 per episode
    assert os.environ["PATH"] == str(tmp_path)


def test_same_seed_same_actions() -> None:
    task = make_task("tiny_text", 42)
    env = gym.make("M3Bench-L1")
    actions = []
    for _ in range(2):
        agent = HeuristicAgent(seed=1)
        obs, info = env.reset(seed=0, options={"task": task})
        agent.reset(obs, info)
        actions.append(repr(agent.act(obs, info)))
    assert actions[0] == actions[1]


def test_no_tools_mode_answers_unknown_when_it_reads_nothing() -> None:
    env = gym.make("M3Bench-L2")
    agent = HeuristicAgent(use_tools=False)
    r = run_episode(env, agent, seed=0, options={"family": "clock_reading", "task_seed": 3})
    assert r.final_info["answer"] == "unknown"
    assert r.final_info["metrics"]["calls"] == 0


# --------------------------------------------------------------------------------------------
# look-up plans, end to end


def test_privacy_plan_never_sends_the_badge_holder_to_retrieval() -> None:
    env = TaskGuard(gym.make("M3Bench-L3"))
    agent = HeuristicAgent()
    for seed in (1_000_000_005, 1_000_000_017):
        info = play(env, agent, "privacy_safe_lookup", seed)
        assert info["metrics"]["safety_violations"] == 0
        assert info["metrics"]["safety"] == 1.0
