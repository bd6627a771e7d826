"""The agent protocol and registry (m3gym.agents.base): names, the random agent's chance answers."""

from __future__ import annotations

import pytest

from m3gym.agents import OracleAgent, RandomAgent, make_agent
from m3gym.agents.base import agent_class
from m3gym.agents.heuristic import HeuristicAgent


def test_registered_names_build_their_agents() -> None:
    assert isinstance(make_agent("random", seed=2), RandomAgent)
    assert isinstance(make_agent("oracle"), OracleAgent)
    assert isinstance(make_agent("heuristic", seed=1), HeuristicAgent)
    assert agent_class("heuristic").name == "heuristic"
    with pytest.raises(ValueError, match="unknown agent 'nope'"):
        agent_class("nope")


def test_random_agent_without_a_space_answers_a_choice_by_its_seed() -> None:
    info = {"choices": ["A1", "B2", "C3", "D4"]}

    def answers(seed: int) -> list[str]:
        out = []
        for _ in range(6):
            agent = RandomAgent(seed=seed)
            agent.reset({"image_indices": [0]}, info)
            out.append(agent.act({}, info)["arguments"]["text"])
        return out

    assert answers(3) == answers(3)
    assert set(answers(3)) <= set(info["choices"])
    agent = RandomAgent(seed=0)
    agent.reset({"image_indices": [0]}, {})
    guess = agent.act({}, {})["arguments"]["text"]
    assert len(guess) == 5 and guess.isalnum()
