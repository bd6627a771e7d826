"""The OpenEnv server of m3gym: an ``Environment`` over ``EpisodeSession`` in ``create_app``.

Each WebSocket session gets its own :class:`M3GymEnvironment` (OpenEnv's
``SUPPORTS_CONCURRENT_SESSIONS``), and OpenEnv runs its sync ``reset`` / ``step`` in that
session's own worker thread, so one session's rendering never blocks the event loop or another
session. HTTP ``/reset`` and ``/step`` are stateless in OpenEnv (a fresh environment per request):
an episode lives on the WebSocket (``M3GymEnv``, ``GenericEnvClient``).

Trust rules (as ``m3gym mcp``, with the same functions): a client names only env ids and reward
names the operator allowed, never a path; a refused value gets one line naming the allowed
values and quoting nothing from disk; env arguments are the operator's (``--env-arg``).
"""

from __future__ import annotations

import base64
import functools
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
from fastapi import FastAPI
from openenv.core.env_server.http_server import create_app
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata

from m3gym.codec import png_bytes
from m3gym.integrations.session import EpisodeSession, task_ref
from m3gym.mcp.episode_table import (
    MAX_SEED,
    allowed_env_ids,
    check_server_env_args,
    quote,
    reward_choices,
    unversioned,
)
from m3gym.openenv.models import M3GymAction, M3GymObservation, M3GymState

RESET_OPTIONS: tuple[str, ...] = ("env_id", "seed", "task_seed", "family", "difficulty",
                                  "reward", "episode_id")
"""The keys a client may give ``reset`` (anything else is refused with one line)."""

DEFAULT_MAX_SESSIONS = 8
"""WebSocket sessions served at once when the operator names no ``--max-sessions``."""


class RefusedError(ValueError):
    """A reset the server refuses (a value the operator did not allow, a malformed option)."""


@dataclass(frozen=True)
class ServerConfig:
    """What the operator allows: env ids, reward choices (by name) and the env arguments.

    Build it with :func:`server_config` (the checks of ``m3gym mcp``).
    """

    envs: Mapping[str, str]
    rewards: Mapping[str, Any]
    reward_sources: Mapping[str, str]
    default_reward: str
    env_args: Mapping[str, Any] = field(default_factory=dict)

    def env_names(self) -> list[str]:
        """Return the env ids a client may name (unversioned, in the operator's order)."""
        return [name for name in self.envs if name == unversioned(name)]

    def default_env(self) -> str:
        """Return the env id used when a client names none (the first allowed)."""
        return self.env_names()[0] if self.env_names() else next(iter(self.envs))


def server_config(envs: Sequence[str] | None = None, rewards: Sequence[str] | None = None,
                  env_args: Mapping[str, Any] | None = None) -> ServerConfig:
    """Return the server's :class:`ServerConfig`; an operator value that cannot work raises.

    ``envs`` and ``rewards`` are as ``m3gym mcp --env`` / ``--reward`` (every m3gym id and every
    preset by default, a reward file offered by its name); ``env_args`` as ``--env-arg``.
    """
    env_args = dict(env_args or {})
    check_server_env_args(env_args)
    allowed = allowed_env_ids(envs, env_args)
    configs, sources, default = reward_choices(rewards)
    return ServerConfig(envs=allowed, rewards=configs, reward_sources=sources,
                        default_reward=default, env_args=env_args)


def png_data_url(image: np.ndarray) -> str:
    """Return an RGB/gray ``uint8`` image as a ``data:image/png;base64,`` URL."""
    return "data:image/png;base64," + base64.b64encode(png_bytes(image)).decode("ascii")


def plain(value: Any) -> Any:
    """Return ``value`` with numpy scalars, arrays and tuples made JSON-plain."""
    if isinstance(value, Mapping):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return value.tolist()
    if isinstance(value, np.generic):
        return value.item()
    return value


class _Session(EpisodeSession):
    """An :class:`EpisodeSession` that keeps the last step's ``info`` (its reward components)."""

    last_info: Mapping[str, Any] = {}

    def _book(self, reward: float, info: Mapping[str, Any]) -> None:
        self.last_info = info
        super()._book(reward, info)


class M3GymEnvironment(Environment[M3GymAction, M3GymObservation, M3GymState]):
    """One OpenEnv session of m3gym: resets onto a task, steps it, reports the end.

    Args:
        config: what the operator allows (:func:`server_config`).

    ``reset(env_id=, seed=)``: ``seed`` is the reset seed, exactly
    ``gym.make(env_id).reset(seed=seed)`` (the env draws family and task); or ``task_seed`` with
    an optional ``family``: the dataset-row rule of :func:`m3gym.integrations.session.task_ref`.
    ``reward`` names one of the operator's reward choices; ``difficulty`` in ``[0, 1]``.
    """

    SUPPORTS_CONCURRENT_SESSIONS = True

    def __init__(self, config: ServerConfig) -> None:
        super().__init__()
        self.config = config
        self._sessions: dict[str, _Session] = {}
        self._session: _Session | None = None
        self._state = M3GymState()

    # ------------------------------------------------------------------ reset
    def _reward(self, reward: Any) -> str:
        if reward is None:
            return self.config.default_reward
        if isinstance(reward, str) and reward in self.config.rewards:
            return reward
        # one line for any refused value (a path, a dict, an unknown name): nothing is echoed
        raise RefusedError("unknown reward: this server offers "
                           f"{', '.join(sorted(self.config.rewards))} (default "
                           f"{self.config.default_reward}); name one of them")

    def _env_id(self, env_id: Any) -> str:
        if env_id is None:
            return self.config.envs[self.config.default_env()]
        if isinstance(env_id, str) and env_id in self.config.envs:
            return self.config.envs[env_id]
        raise RefusedError(f"unknown env {quote(env_id)}: this server offers "
                           f"{', '.join(self.config.env_names())}")

    def _row(self, env_id: str, seed: Any, options: Mapping[str, Any]) -> dict[str, Any]:
        if seed is not None and (isinstance(seed, bool) or not isinstance(seed, int)
                                 or not 0 <= seed <= MAX_SEED):
            raise RefusedError(f"seed must be an integer in [0, {MAX_SEED}], got {quote(seed)}")
        row: dict[str, Any] = {"env_id": env_id}
        if seed is not None:
            row["seed"] = seed
        for key in ("task_seed", "family", "difficulty"):
            if options.get(key) is not None:
                row[key] = options[key]
        if seed is not None and ("task_seed" in row or "family" in row):
            raise RefusedError("give either seed (the reset seed: the env draws family and "
                               "task) or task_seed with an optional family, not both")
        if "family" in row and "task_seed" not in row:
            raise RefusedError("family goes with task_seed")
        try:
            task_ref(row, env_id)
        except ValueError as exc:
            raise RefusedError(str(exc)) from None
        return row

    def _session_for(self, reward: str) -> _Session:
        if reward not in self._sessions:
            self._sessions[reward] = _Session(reward=self.config.rewards[reward],
                                              **dict(self.config.env_args))
        return self._sessions[reward]

    def reset(self, seed: int | None = None, episode_id: str | None = None,
              **kwargs: Any) -> M3GymObservation:
        """Start an episode on the task the options name (a refused option raises one line)."""
        unknown = sorted(set(kwargs) - set(RESET_OPTIONS))
        if unknown:
            raise RefusedError(f"unknown reset option {quote(unknown[0])}: this server takes "
                               f"{', '.join(RESET_OPTIONS)}")
        env_id = self._env_id(kwargs.get("env_id"))
        reward = self._reward(kwargs.get("reward"))
        row = self._row(env_id, seed, kwargs)
        session = self._session_for(reward)
        try:
            obs = session.start(row)
        except Exception as exc:  # a task that cannot be built: refused, the server keeps going
            raise RefusedError(f"cannot start {env_id}: the task could not be built "
                               f"({type(exc).__name__})") from None
        self._session = session
        info = session.info
        self._state = M3GymState(episode_id=episode_id or str(uuid.uuid4()), step_count=0,
                                 env_id=env_id, task_id=str(info.get("task_id")),
                                 reward=reward)
        meta = {key: plain(info[key]) for key in ("task_id", "family", "level", "domain",
                                                  "choices", "max_tool_calls", "max_rounds",
                                                  "difficulty", "tool_schemas") if key in info}
        meta.update(env_id=env_id, reward=reward, episode_id=self._state.episode_id,
                    terminated=False, truncated=False)
        return M3GymObservation(text=obs["text"], images=[png_data_url(im) for im in
                                                          session.input_images],
                                image_indices=[int(i) for i in obs["image_indices"]],
                                reward=None, done=False, metadata=meta)

    # ------------------------------------------------------------------ step
    def step(self, action: M3GymAction, timeout_s: float | None = None,
             **kwargs: Any) -> M3GymObservation:
        """Run one step; bad tool calls are scored by the env, never raised."""
        session = self._session
        if session is None:
            return M3GymObservation(text="Error: no episode has started; reset first",
                                    metadata={"ok": False})
        before = session.done
        session.last_info = {}
        result = session.act(action.env_action())
        self._state.step_count += 1
        terminated = session.ended_by == "answer"
        truncated = session.ended_by in ("budget", "finish")
        meta: dict[str, Any] = {"terminated": terminated, "truncated": truncated,
                                "ok": bool(result.ok),
                                "reward_components": plain(session.last_info.get(
                                    "reward_components") or {})}
        if session.done and not before:
            meta["episode_return"] = session.episode_return
            meta["metrics"] = plain(session.metrics)
            if session.infra_error is not None:
                meta["infra_error"] = True
        self._state.done = session.done
        self._state.terminated, self._state.truncated = terminated, truncated
        self._state.episode_return = session.episode_return
        return M3GymObservation(text=result.text,
                                images=[png_data_url(im) for im in result.images],
                                image_indices=list(result.image_indices),
                                reward=float(result.reward), done=bool(result.done),
                                metadata=meta)

    @property
    def state(self) -> M3GymState:
        """The episode's state (env id, task, reward choice, how it ended)."""
        return self._state

    def get_metadata(self) -> EnvironmentMetadata:
        """Name, description and version of the served environment."""
        from m3gym.versions import __version__

        return EnvironmentMetadata(
            name="m3gym", version=__version__,
            description="m3gym: multimodal tool-using tasks with exactly verifiable answers "
                        f"(envs: {', '.join(self.config.env_names())})")

    def close(self) -> None:
        """Close the session's envs."""
        for session in self._sessions.values():
            for env in session._envs.values():
                env.close()
        self._sessions.clear()
        self._session = None


def build_app(config: ServerConfig | None = None,
              max_sessions: int = DEFAULT_MAX_SESSIONS) -> FastAPI:
    """Return OpenEnv's FastAPI app serving m3gym (``max_sessions`` WebSocket sessions)."""
    if max_sessions < 1:
        raise ValueError("max_sessions must be >= 1")
    return create_app(functools.partial(M3GymEnvironment, config or server_config()),
                      M3GymAction, M3GymObservation, env_name="m3gym",
                      max_concurrent_envs=max_sessions, state_cls=M3GymState)
