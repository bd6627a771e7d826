"""The agent interface and the two reference agents: random and oracle."""

from __future__ import annotations

from typing import Any, Protocol, runtime_checkable

import numpy as np

from m3gym.spaces import ToolCallSpace
from m3gym.spec import Task


@runtime_checkable
class Agent(Protocol):
    """An agent: ``reset`` at the start of an episode, then ``act`` once per step.

    ``act`` receives the latest observation and info and returns an action in any form the env
    accepts (a call dict, a list of calls, OpenAI tool calls, or text). The one episode loop
    (:func:`m3gym.eval.episode_loop.record_episode`, used by local and Ray workers) hands an
    agent what a policy sees: the observation, and of the info only the tool schemas, the choices
    and the budgets at reset (``AGENT_RESET_KEYS``) and its calls' records and budget use after a
    step (``AGENT_STEP_KEYS``) — never the task id, family, level or seed. Two optional hooks:
    ``bind_space(action_space)`` (agents that sample calls from the action space) and, for
    :class:`OracleAgent` alone, ``set_task(task)``.
    """

    name: str

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Start a new episode from the reset observation."""

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Return the next action."""


class RandomAgent:
    """Issues random schema-valid calls, then answers a random choice (or a random guess).

    With ``answer_prob`` per step it answers: one of the task's ``choices`` when the reset info
    lists them, else a random short code. It is the chance floor of every benchmark table.
    """

    name = "random"

    def __init__(self, seed: int = 0, answer_prob: float = 0.3, max_steps: int = 8) -> None:
        self.rng = np.random.default_rng(seed)
        self.answer_prob = answer_prob
        self.max_steps = max_steps
        self._space: ToolCallSpace | None = None
        self._choices: tuple[str, ...] | None = None
        self._steps = 0
        self._num_images = 1

    def bind_space(self, space: ToolCallSpace) -> None:
        """Sample calls from ``space`` (the env's action space), seeded from this agent's rng."""
        self._space = space
        space.seed(int(self.rng.integers(2**31)))

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Remember the task's choices and the number of input images."""
        self._choices = tuple(info.get("choices") or ()) or None
        self._steps = 0
        self._num_images = len(observation.get("image_indices", ())) or 1

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Return a random call, or a random answer."""
        self._steps += 1
        self._num_images += len(observation.get("image_indices", ())) if self._steps > 1 else 0
        if self._space is None or self._steps >= self.max_steps or \
                self.rng.random() < self.answer_prob:
            return {"name": "answer", "arguments": {"text": self._guess()}}
        self._space.num_images = self._num_images
        return self._space.sample()

    def _guess(self) -> str:
        if self._choices:
            return self._choices[int(self.rng.integers(len(self._choices)))]
        alphabet = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"
        return "".join(alphabet[int(i)] for i in self.rng.integers(len(alphabet), size=5))


class OracleAgent:
    """Replays the task's reference trajectory step by step, then gives the true answer.

    It is the only agent that reads the task; it is handed the task explicitly at construction
    (or through :meth:`set_task`). In code mode (``code=True``, or ``None`` = when the env offers
    ``run_python`` but not the atomic tools) each reference step is sent as one ``run_python``
    cell that calls the step's tools as functions (:func:`reference_step_code`).
    """

    name = "oracle"

    def __init__(self, task: Task | None = None, code: bool | None = None) -> None:
        self.task = task
        self.code = code
        self._code_mode = bool(code)
        self._step = 0

    def set_task(self, task: Task) -> None:
        """Give the oracle the task of the next episode."""
        self.task = task

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Start replaying from the first reference step."""
        self._step = 0
        if self.code is None:
            names = {s.get("function", {}).get("name") for s in info.get("tool_schemas") or ()}
            self._code_mode = "run_python" in names and "crop" not in names
        else:
            self._code_mode = self.code

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Return the next reference step's calls (in parallel), then the answer."""
        if self.task is None:
            raise RuntimeError("OracleAgent needs the task: pass it or call set_task()")
        if self._step < len(self.task.reference):
            step = self.task.reference[self._step]
            self._step += 1
            if self._code_mode:
                return {"name": "run_python", "arguments": {"code": reference_step_code(step)}}
            return [{"id": c.id, "name": c.name, "arguments": dict(c.arguments)} for c in step]
        return {"name": "answer", "arguments": {"text": self.task.answer.value}}


def reference_step_code(step: Any) -> str:
    """Return one reference step (its calls) as a code cell calling the tools as functions."""
    lines = []
    for call in step:
        args = ", ".join(f"{k}={v!r}" for k, v in call.arguments.items())
        lines.append(f"{call.name}({args})")
    return "\n".join(lines)


AGENTS = ("random", "oracle", "heuristic", "openai")


def agent_class(name: str) -> type[Agent]:
    """Return the class of a registered agent (imported lazily; unknown names raise)."""
    if name == "random":
        return RandomAgent
    if name == "oracle":
        return OracleAgent
    if name == "heuristic":
        from m3gym.agents.heuristic import HeuristicAgent

        return HeuristicAgent
    if name == "openai":
        from m3gym.agents.openai_agent import OpenAIAgent  # lazy: builds an HTTP client

        return OpenAIAgent
    raise ValueError(f"unknown agent {name!r}; available: {', '.join(AGENTS)}")


def make_agent(name: str, seed: int = 0, **kwargs: Any) -> Agent:
    """Return an agent by name (the oracle takes no seed: it replays the reference)."""
    cls = agent_class(name)
    return cls(**kwargs) if cls is OracleAgent else cls(seed=seed, **kwargs)
