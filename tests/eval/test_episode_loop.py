"""The one episode loop: what agents see, the oracle's task, error statuses."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import gymnasium as gym
import pytest

import m3gym  # noqa: F401  (registers the env ids)
from m3gym.agents.base import OracleAgent
from m3gym.agents.errors import InfrastructureError
from m3gym.eval.episode_loop import AGENT_RESET_KEYS, AGENT_STEP_KEYS, record_episode


class Spy:
    """Records what it is shown, answers at once; has a set_task that must never be called."""

    name = "spy"

    def __init__(self) -> None:
        self.seen: list[dict[str, Any]] = []
        self.task = None

    def set_task(self, task: Any) -> None:
        self.task = task

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        self.seen.append(dict(info))

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        self.seen.append(dict(info))
        return {"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [0, 0, 500, 500]}} \
            if len(self.seen) == 2 else {"name": "answer", "arguments": {"text": "x"}}


def test_agents_see_only_what_a_policy_sees() -> None:
    agent = Spy()
    rec = record_episode(gym.make("M3Bench-L1"), agent, seed=3)
    assert rec.status == "ok" and rec.terminated
    reset_info, step_info = agent.seen[0], agent.seen[2]
    assert set(reset_info) == set(AGENT_RESET_KEYS)
    assert set(step_info) == set(AGENT_STEP_KEYS) - {"code_cells"}  # code mode only
    for info in agent.seen:
        assert not {"task_id", "family", "level", "domain", "seed", "metrics"} & set(info)
    assert agent.task is None  # only the oracle is handed the task
    assert "metrics" in rec.final  # the loop keeps the full info for scoring


def test_the_oracle_alone_gets_its_task() -> None:
    rec = record_episode(gym.make("M3Bench-L2"), OracleAgent(), seed=5)
    assert rec.status == "ok"
    assert rec.final["metrics"]["acc"] == 1.0


class Failing:
    name = "failing"

    def __init__(self, exc: Exception) -> None:
        self.exc = exc

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        pass

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        raise self.exc


@pytest.mark.parametrize(("exc", "status"), [(ValueError("bad"), "agent_error"),
                                              (InfrastructureError("down"), "infra_error"),
                                              (TimeoutError("slow"), "infra_error")])
def test_errors_end_the_episode_with_a_status(exc: Exception, status: str) -> None:
    rec = record_episode(gym.make("M3Bench-L1"), Failing(exc), seed=0)
    assert rec.status == status
    assert rec.error is not None and str(exc) in rec.error
    assert rec.done


def test_errors_propagate_without_catch() -> None:
    with pytest.raises(ValueError, match="bad"):
        record_episode(gym.make("M3Bench-L1"), Failing(ValueError("bad")), seed=0, catch=False)


def test_a_failing_factory_is_an_agent_error() -> None:
    def factory() -> Any:
        raise TypeError("no such argument")

    rec = record_episode(gym.make("M3Bench-L1"), factory, seed=0)
    assert rec.status == "agent_error" and rec.task is None


def test_the_core_imports_neither_mcp_nor_ray() -> None:
    import subprocess
    import sys

    code = ("import sys, m3gym, m3gym.cli, m3gym.eval.runner, m3gym.mcp.episode_table, "
            "m3gym.distributed; m3gym.cli.build_parser(); "
            "print(sorted(m for m in ('mcp', 'ray') if m in sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         cwd=Path(__file__).parents[2], check=True)
    assert out.stdout.strip() == "[]"
