"""The one episode loop: every runner of m3gym (local workers, Ray workers, the MCP recorder).

(It was ``m3gym.eval.episode``; that path still imports, with a deprecation warning.)

An :class:`EpisodeRecorder` wraps an env for one episode. Whoever acts — an agent object in
:func:`record_episode`, or an MCP client whose calls arrive one by one — goes through its
:meth:`~EpisodeRecorder.reset` and :meth:`~EpisodeRecorder.step`, which record every step the same
way, so a run's ``episodes.jsonl`` means the same whatever ran it.

What an agent sees is what a policy sees: the observation, and of the env's info only
:data:`AGENT_RESET_KEYS` (tool schemas, choices, budgets) at reset and :data:`AGENT_STEP_KEYS`
(call records, parse errors, budget use) after a step — never the task id, family, level, domain,
seed or the reward's checkpoint names. The oracle alone is handed its task, explicitly
(:class:`~m3gym.agents.base.OracleAgent`).
"""

from __future__ import annotations

import time
import traceback
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

from m3gym.agents.base import Agent, OracleAgent
from m3gym.agents.errors import InfrastructureError, ModelOutputError

AGENT_RESET_KEYS: tuple[str, ...] = ("choices", "tool_schemas", "max_tool_calls", "max_rounds")
"""Keys of the env's reset info an agent is given (what a policy sees)."""

AGENT_STEP_KEYS: tuple[str, ...] = ("calls", "parse_errors", "calls_used", "rounds", "code_cells")
"""Keys of the env's step info an agent is given (the results of its own calls)."""

MAX_STEPS_GUARD: int = 1000
"""Hard bound on agent steps per episode (the env truncates far earlier)."""

_INFRA_MODULES = ("openai", "httpx", "httpcore", "requests", "urllib3", "aiohttp")
_INFRA_NAME_PARTS = ("Connection", "Timeout", "RateLimit", "InternalServerError",
                     "ServiceUnavailable", "APIStatusError")


def agent_info(info: Mapping[str, Any], keys: tuple[str, ...]) -> dict[str, Any]:
    """Return the part of an env info dict an agent may see (``keys`` that are present)."""
    return {k: info[k] for k in keys if k in info}


def json_safe(value: Any) -> Any:
    """Return ``value`` as JSON-compatible data (arrays → shape notes, unknown → ``str``)."""
    if isinstance(value, np.ndarray):
        return f"<array {value.dtype} {list(value.shape)}>"
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Mapping):
        return {str(k): json_safe(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_safe(v) for v in value]
    if isinstance(value, float) and value != value:
        return None
    if value is None or isinstance(value, (str, int, float, bool)):
        return value
    return str(value)


def is_infrastructure_error(exc: BaseException) -> bool:
    """Return whether ``exc`` is a failure of the machinery (endpoint, network), not the agent."""
    if isinstance(exc, (InfrastructureError, ConnectionError, TimeoutError)):
        return True
    for cls in type(exc).__mro__:
        if cls.__module__.split(".")[0] in _INFRA_MODULES and \
                any(p in cls.__name__ for p in _INFRA_NAME_PARTS):
            return True
    return False


class AgentFailure(Exception):
    """An exception raised by the agent (wrapped so the loop can tell it from an env error)."""

    def __init__(self, cause: BaseException) -> None:
        super().__init__(str(cause))
        self.cause = cause


def _by_agent(fn: Callable[..., Any], *args: Any) -> Any:
    try:
        return fn(*args)
    except Exception as exc:
        raise AgentFailure(exc) from exc


def step_record(index: int, action: Any, reward: float, obs: Mapping[str, Any],
                info: Mapping[str, Any]) -> dict[str, Any]:
    """Return the trace record of one step (the ``steps`` entries of a run's traces).

    ``action`` keeps a text action; ``raw_action`` a dict / list action as the agent sent it.
    """
    return {
        "step": index, "action": json_safe(action) if isinstance(action, str) else None,
        # a structured action as sent (raw tool arguments, before validation fills defaults);
        # text actions are ``action`` itself. Nothing scores it: exports read it.
        **({"raw_action": json_safe(action)} if isinstance(action, (Mapping, list, tuple))
           else {}),
        "reward": float(reward),
        "reward_components": json_safe(info.get("reward_components", {})),
        "checkpoints_passed": list(info.get("checkpoints_passed", [])),
        "calls": json_safe(info.get("calls", [])),
        "parse_errors": list(info.get("parse_errors", [])),
        "observation_text": obs.get("text", ""),
        "new_images": list(obs.get("image_indices", ())),
        **({"code_cells": json_safe(info["code_cells"])} if "code_cells" in info else {}),
    }


@dataclass
class EpisodeRecorder:
    """One episode of ``env``, stepped by whoever acts, recorded step by step.

    Attributes:
        env: the env (a ``gym.make`` env or a bare :class:`~m3gym.env.M3BenchEnv`).
        prompt: the reset observation's text.
        task: the episode's task (for scoring and the oracle; never shown to agents).
        steps: one :func:`step_record` per step.
        final: the env's info of the last step (metrics, answer, audit).
        status: ``ok``, ``agent_error``, ``env_error`` or ``infra_error``.
        error: the error message when ``status`` is not ``ok``, or the reason of a model failure
            (:meth:`model_failure`; the status stays ``ok``: the episode is scored, its label in
            ``final["metrics"]["failure_mode"]``).
    """

    env: gym.Env
    prompt: str = ""
    task: Any = None
    steps: list[dict[str, Any]] = field(default_factory=list)
    final: dict[str, Any] = field(default_factory=dict)
    terminated: bool = False
    truncated: bool = False
    reward_total: float = 0.0
    status: str = "ok"
    error: str | None = None
    started: float = field(default_factory=time.perf_counter)
    ended: float | None = None

    @property
    def base(self) -> Any:
        """The unwrapped env."""
        return self.env.unwrapped

    @property
    def done(self) -> bool:
        """Whether the episode has ended (terminated, truncated or failed)."""
        return self.terminated or self.truncated or self.status != "ok"

    @property
    def wall_s(self) -> float:
        """Seconds from the recorder's creation to the end of the episode (or now)."""
        return (self.ended or time.perf_counter()) - self.started

    def reset(self, seed: int | None = None,
              options: dict[str, Any] | None = None) -> tuple[dict[str, Any], dict[str, Any]]:
        """Reset the env; return the observation and the agent's part of the info."""
        obs, info = self.env.reset(seed=seed, options=options)
        self.task = self.base.task
        self.prompt = obs["text"]
        return obs, agent_info(info, AGENT_RESET_KEYS)

    def step(self, action: Any) -> tuple[dict[str, Any], float, bool, bool, dict[str, Any]]:
        """Step the env, record the step; return the observation and the agent's info part.

        The full info of the last step is kept in :attr:`final`.
        """
        obs, reward, terminated, truncated, info = self.env.step(action)
        self.reward_total += float(reward)
        self.steps.append(step_record(len(self.steps), action, reward, obs, info))
        if terminated or truncated:
            self.terminated, self.truncated = bool(terminated), bool(truncated)
            self.final = dict(info)
            self.ended = time.perf_counter()
        return obs, float(reward), terminated, truncated, agent_info(info, AGENT_STEP_KEYS)

    def model_failure(self, exc: ModelOutputError) -> bool:
        """End the episode as the model's failure (scored, not an error); return whether it could.

        The endpoint refused the model's own output or an overlong prompt
        (:class:`~m3gym.agents.errors.ModelOutputError`): the env ends the episode without an
        answer, as a truncation (``finish``), and the episode's ``failure_mode`` is the error's
        label. Returns ``False`` (nothing changed) for an env without ``finish`` or one whose
        episode is already over.
        """
        finish = getattr(self.base, "finish", None)
        if finish is None or getattr(self.base, "episode_over", True):
            return False
        reward, info = finish()
        self.reward_total += float(reward)
        self.truncated = True
        self.final = dict(info)
        metrics = dict(self.final.get("metrics") or {})
        metrics["failure_mode"] = exc.failure_mode
        self.final["metrics"] = metrics
        self.error = f"{type(exc).__name__}: {exc}"
        self.ended = time.perf_counter()
        return True

    def fail(self, exc: BaseException) -> None:
        """Record that the episode stopped on ``exc`` (an :class:`AgentFailure` or env error)."""
        cause = exc.cause if isinstance(exc, AgentFailure) else exc
        if is_infrastructure_error(cause):
            self.status = "infra_error"
        elif isinstance(exc, AgentFailure):
            self.status = "agent_error"
        else:
            self.status = "env_error"
        self.error = f"{type(cause).__name__}: {cause}"
        if self.status != "infra_error":
            self.error += "\n" + "".join(traceback.format_exception(cause)[-3:])
        self.ended = time.perf_counter()


def record_episode(env: gym.Env, agent: Agent | Callable[[], Agent], seed: int | None = None,
                options: dict[str, Any] | None = None, max_steps: int = MAX_STEPS_GUARD,
                catch: bool = True) -> EpisodeRecorder:
    """Reset ``env`` and let ``agent`` act until the episode ends; return the recording.

    ``agent`` is an agent or a zero-argument factory of one (its construction then counts as the
    agent's: a failure is an ``agent_error``). The agent gets the observations and the agent's
    part of the info only; an :class:`~m3gym.agents.base.OracleAgent` is also handed the task.
    Agents with a ``bind_space`` method (sampling agents) are given the env's action space. With
    ``catch`` (the default) errors end the episode with a status; otherwise they propagate. An
    agent's :class:`~m3gym.agents.errors.ModelOutputError` (the endpoint refused the model's own
    output) ends the episode as a scored failure in either case (:meth:`EpisodeRecorder.
    model_failure`).
    """
    rec = EpisodeRecorder(env)
    try:
        if not hasattr(agent, "act"):
            agent = _by_agent(agent)
        obs, info = rec.reset(seed=seed, options=options)
        if isinstance(agent, OracleAgent):
            agent.set_task(rec.task)
        bind = getattr(agent, "bind_space", None)
        if bind is not None:
            _by_agent(bind, rec.base.action_space)
        _by_agent(agent.reset, obs, info)
        for _ in range(max_steps):
            action = _by_agent(agent.act, obs, info)
            obs, _reward, terminated, truncated, info = rec.step(action)
            if terminated or truncated:
                break
    except Exception as exc:
        if isinstance(exc, AgentFailure) and isinstance(exc.cause, ModelOutputError) \
                and rec.model_failure(exc.cause):
            return rec
        if not catch:
            raise exc.cause if isinstance(exc, AgentFailure) else exc from None
        rec.fail(exc)
    return rec
