"""One episode driven by a trainer: reset from a dataset row, act, finish, read the return.

Trainers (TRL's ``environment_factory``, verl's agent loop, the SFT exporter) all need the same
thing from m3gym: put an env on the task a dataset row names, feed it the model's actions, and
read the episode return and metrics at the end, without an exception ever escaping for bad model
output. :class:`EpisodeSession` is that, shared by every adapter; it needs no extra dependency.

A row names its task in one of two ways, each with its own word (the seed rule every entry point
follows: ``docs/environments.md#one-seed-rule``):

* ``env_id`` plus ``seed``: the **reset seed**, exactly ``gym.make(env_id).reset(seed=seed)`` (the
  env draws the family and the task seed from it), as MCP's ``start_episode(seed=)`` does;
* ``task_seed`` (the **task seed**, the family's own seed): with ``family`` (a frozen split entry),
  or ``task_id`` = ``"family/task_seed"``, or with ``env_id`` alone (the family is then drawn from
  the env's families with the task seed as reset seed).

A row may not give both a ``seed`` and a task seed. An optional ``difficulty`` in ``[0, 1]`` builds
the task at that difficulty. Same row ⇒ the byte-identical task, which is what a GRPO group needs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import gymnasium as gym
import numpy as np

DEFAULT_ENV_ID = "M3Bench-L1"
"""Env id used when neither the session nor the row names one."""

METRIC_TERMS: tuple[str, ...] = ("acc", "S", "V", "m3", "OT", "safety")
"""Final metrics each adapter reports as its own column (accuracy, S, V, M3, overthink, safety)."""


@dataclass(frozen=True)
class TaskRef:
    """Where a row's task comes from: an env id, the reset seed and the reset options."""

    env_id: str
    seed: int | None
    options: dict[str, Any]


def _as_int(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, np.integer, str)):
        raise ValueError(f"row field {key!r} must be an integer, got {type(value).__name__}")
    try:
        return int(value)
    except ValueError:
        raise ValueError(f"row field {key!r} must be an integer, got {value!r}") from None


def task_ref(row: Mapping[str, Any], default_env_id: str = DEFAULT_ENV_ID) -> TaskRef:
    """Return the task a dataset row names (see the module docstring); bad fields raise ValueError.

    Reads ``extra_info`` (verl rows keep the fields there) when the row itself lacks them.
    """
    extra = row.get("extra_info")
    fields = {**(extra if isinstance(extra, Mapping) else {}), **row}
    env_id = fields.get("env_id") or default_env_id
    if not isinstance(env_id, str):
        raise ValueError(f"row field 'env_id' must be a string, got {type(env_id).__name__}")
    family = fields.get("family")
    task_seed = fields.get("task_seed")
    task_id = fields.get("task_id")
    if task_id is not None and (family is None or task_seed is None):
        fam, sep, seed_text = str(task_id).rpartition("/")
        if not sep or not fam:
            raise ValueError(f"row field 'task_id' must be 'family/task_seed', got {task_id!r}")
        family, task_seed = fam, seed_text
    options: dict[str, Any] = {}
    seed = None
    reset_seed = fields.get("seed")
    if reset_seed is not None:
        if task_seed is not None or family is not None:
            raise ValueError("a row gives either 'seed' (the reset seed: the env draws the family "
                             "and task) or 'task_seed' / 'family' / 'task_id' (the task), not both")
        seed = _as_int(reset_seed, "seed")
        if seed < 0:
            raise ValueError(f"row field 'seed' must be an integer >= 0, got {seed}")
    if task_seed is not None:
        seed = _as_int(task_seed, "task_seed")
        options["task_seed"] = seed
    if family is not None:
        if not isinstance(family, str):
            raise ValueError(f"row field 'family' must be a string, got {type(family).__name__}")
        options["family"] = family
    difficulty = fields.get("difficulty")
    if difficulty is not None:
        if isinstance(difficulty, bool) or not isinstance(difficulty, (int, float)):
            raise ValueError(f"row field 'difficulty' must be a number in [0, 1], got "
                             f"{difficulty!r}")
        options["difficulty"] = float(difficulty)
    return TaskRef(env_id=env_id, seed=seed, options=options)


@dataclass
class StepResult:
    """What one action did: the result text, new images (view resolution), reward, end flag."""

    text: str
    images: list[np.ndarray] = field(default_factory=list)
    image_indices: list[int] = field(default_factory=list)
    reward: float = 0.0
    done: bool = False
    ok: bool = True


class EpisodeSession:
    """Drive one m3gym episode at a time for a trainer (never raises for bad model output).

    Args:
        env_id: env used for rows that name none (rows may name another; envs are cached).
        reward: reward preset name, YAML path or dict (as for ``gym.make``).
        **env_kwargs: further ``gym.make`` keyword arguments (``max_tool_calls``, ``tools``, ...).

    After :meth:`start`, :meth:`act` steps the env; :meth:`finish` ends an unanswered episode as a
    truncation; :attr:`episode_return` is the sum of the step rewards (terminal terms included).
    An exception inside the env (a bug, not bad input) marks :attr:`infra_error`: such an episode
    must not be scored, and :attr:`episode_return` is then ``None``.
    """

    def __init__(self, env_id: str = DEFAULT_ENV_ID, reward: Any = "m3",
                 **env_kwargs: Any) -> None:
        self.env_id = env_id
        self.reward = reward
        self.env_kwargs = dict(env_kwargs)
        self._envs: dict[str, gym.Env] = {}
        self.env: Any = None
        self.prompt = ""
        self.input_images: list[np.ndarray] = []
        self.info: dict[str, Any] = {}
        self.rewards: list[float] = []
        self.components: dict[str, float] = {}
        self.final_info: dict[str, Any] = {}
        self.infra_error: str | None = None
        self.done = True
        self.started = False
        self.ended_by = ""

    # ------------------------------------------------------------------ episode
    def _env(self, env_id: str) -> Any:
        if env_id not in self._envs:
            from m3gym import registration

            resolved = registration.resolve_env_id(env_id)
            if resolved not in gym.registry:
                known = ", ".join(registration.env_ids())
                raise ValueError(f"unknown env {env_id!r}; known: {known}")
            self._envs[env_id] = gym.make(resolved, reward=self.reward, disable_env_checker=True,
                                          **self.env_kwargs).unwrapped
        return self._envs[env_id]

    def start(self, row: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Reset onto the task ``row`` names; return the reset observation (bad rows raise)."""
        ref = task_ref(row or {}, self.env_id)
        env = self._env(ref.env_id)
        obs, info = env.reset(seed=ref.seed, options=ref.options)
        self.env = env
        self.prompt = obs["text"]
        self.input_images = [env.view(i) for i in obs["image_indices"]]
        self.info = info
        self.rewards, self.components, self.final_info = [], {}, {}
        self.infra_error = None
        self.done, self.started, self.ended_by = False, True, ""
        return obs

    def act(self, action: Any) -> StepResult:
        """Step the env with ``action`` (any form m3gym parses); errors come back as text."""
        if not self.started:
            return StepResult("Error: no episode has started; reset first", ok=False)
        if self.done:
            why = {"answer": "the answer was given", "budget": "the tool-call/round budget ran "
                   "out", "finish": "the rollout ended", "error": "of an internal error"}
            reason = why.get(self.ended_by, "it finished")
            return StepResult(f"Error: the episode has ended because {reason}; no further tool "
                              "calls are run", done=True, ok=False)
        try:
            obs, reward, terminated, truncated, info = self.env.step(action)
        except Exception as exc:  # a bug in the env, not bad model output: never scored
            self._fail(exc)
            return StepResult(f"Error: internal environment error ({type(exc).__name__}); this "
                              "episode will not be scored", done=True, ok=False)
        self._book(float(reward), info)
        if terminated or truncated:
            self.done = True
            self.ended_by = "answer" if terminated else "budget"
            self.final_info = info
        ok = all(c.get("ok", False) for c in info.get("calls", [])) and not info.get("parse_errors")
        indices = list(obs["image_indices"])
        return StepResult(text=obs["text"], images=[self.env.view(i) for i in indices],
                          image_indices=indices, reward=float(reward), done=self.done, ok=ok)

    def finish(self) -> None:
        """End the episode if it is still open (the model stopped without answering)."""
        if not self.started or self.done:
            return
        try:
            reward, info = self.env.finish()
        except Exception as exc:
            self._fail(exc)
            return
        self._book(reward, info)
        self.done, self.ended_by, self.final_info = True, "finish", info

    def _book(self, reward: float, info: Mapping[str, Any]) -> None:
        self.rewards.append(reward)
        for key, value in (info.get("reward_components") or {}).items():
            self.components[key] = self.components.get(key, 0.0) + float(value)

    def _fail(self, exc: BaseException) -> None:
        self.infra_error = f"{type(exc).__name__}: {exc}"
        self.done, self.ended_by = True, "error"

    # ------------------------------------------------------------------ results
    @property
    def episode_return(self) -> float | None:
        """Sum of the step rewards, or ``None`` for an episode hit by an internal error."""
        if self.infra_error is not None or not self.started:
            return None
        return float(sum(self.rewards))

    @property
    def metrics(self) -> dict[str, Any]:
        """The final ``info["metrics"]`` (empty before the end or after an internal error)."""
        if self.infra_error is not None:
            return {}
        return dict(self.final_info.get("metrics") or {})

    def metric(self, name: str) -> float | None:
        """Return one final metric as a float (``None`` when unavailable)."""
        value = self.metrics.get(name)
        if isinstance(value, bool):
            return float(value)
        return float(value) if isinstance(value, (int, float)) else None

    @property
    def task(self) -> Any:
        """The current task (``None`` before the first start)."""
        return None if self.env is None else self.env.task
