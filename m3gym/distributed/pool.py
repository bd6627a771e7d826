"""``RayEnvPool``: N m3gym envs as Ray actors, stepped in batches through futures.

For RL rollouts where generation runs elsewhere (a GPU trainer): ``reset(seeds)`` and
``step(actions)`` return one Ray future per env at once; ``wait`` hands back the finished ones as
they complete (``ray.wait``), ``get`` their results. Each actor owns one env built by
``gym.make`` with the pool's arguments, so results and determinism are those of local envs: the
same seeds and actions give the same observations and rewards, byte for byte.

Objects that ``ray.get`` returns hold read-only numpy arrays; :meth:`RayEnvPool.get` copies
arrays into writable ones (in-place OpenCV operations need that).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import ray

from m3gym.distributed.eval import ONE_THREAD_ENV


class EnvActor:
    """One env in a Ray actor (built once; its offline world stays warm)."""

    def __init__(self, env_id: str, env_kwargs: Mapping[str, Any]) -> None:
        import cv2
        import gymnasium as gym

        cv2.setNumThreads(1)
        from m3gym.registration import resolve_env_id

        self.env = gym.make(resolve_env_id(env_id), disable_env_checker=True, **dict(env_kwargs))

    def reset(self, seed: int | None, options: Mapping[str, Any] | None) -> tuple[Any, Any]:
        """Reset the env; return ``(obs, info)``."""
        return self.env.reset(seed=seed, options=dict(options) if options else None)

    def step(self, action: Any) -> tuple[Any, float, bool, bool, Any]:
        """Step the env; return ``(obs, reward, terminated, truncated, info)``."""
        return self.env.step(action)

    def tool_schemas(self, fmt: str) -> list[dict[str, Any]]:
        """Return the env's tool schemas."""
        return self.env.unwrapped.tool_schemas(fmt)


def writable(value: Any) -> Any:
    """Return ``value`` with every numpy array (in dicts, lists, tuples) copied writable."""
    if isinstance(value, np.ndarray):
        return value.copy() if not value.flags.writeable else value
    if isinstance(value, dict):
        return {k: writable(v) for k, v in value.items()}
    if isinstance(value, list):
        return [writable(v) for v in value]
    if isinstance(value, tuple):
        return tuple(writable(v) for v in value)
    return value


class RayEnvPool:
    """``num_envs`` remote envs of ``env_id`` (see the module docstring).

    Args:
        env_id: an m3gym env id.
        num_envs: actors (one env each).
        env_kwargs: ``gym.make`` keyword arguments of every env.
        num_cpus: CPUs each actor reserves.
        address: connect to this cluster (when Ray is not initialized yet).
        ray_num_cpus: CPUs of the local cluster started when Ray is not initialized yet and
            no ``address`` is given.
    """

    def __init__(self, env_id: str, num_envs: int, env_kwargs: Mapping[str, Any] | None = None,
                 num_cpus: float = 1.0, address: str | None = None,
                 ray_num_cpus: int | None = None) -> None:
        from m3gym.distributed.eval import connect
        from m3gym.eval.runner import env_scope

        if num_envs < 1:
            raise ValueError("num_envs must be >= 1")
        env_scope(env_id)  # unknown ids fail here, not in an actor
        connect(address, ray_num_cpus)
        actor = ray.remote(num_cpus=num_cpus, max_restarts=0,
                           runtime_env={"env_vars": dict(ONE_THREAD_ENV)})(EnvActor)
        self.env_id = env_id
        self.actors = [actor.remote(env_id, dict(env_kwargs or {})) for _ in range(num_envs)]

    @property
    def num_envs(self) -> int:
        """Number of envs."""
        return len(self.actors)

    def _check(self, values: Sequence[Any], what: str) -> None:
        if len(values) != self.num_envs:
            raise ValueError(f"{what}: expected {self.num_envs} values (one per env), "
                             f"got {len(values)}")

    def reset(self, seeds: Sequence[int | None],
              options: Sequence[Mapping[str, Any] | None] | None = None) -> list[Any]:
        """Reset every env; return one future of ``(obs, info)`` per env."""
        self._check(seeds, "reset(seeds)")
        opts = list(options) if options is not None else [None] * self.num_envs
        self._check(opts, "reset(options)")
        return [a.reset.remote(s, o) for a, s, o in zip(self.actors, seeds, opts)]

    def reset_at(self, index: int, seed: int | None,
                 options: Mapping[str, Any] | None = None) -> Any:
        """Reset env ``index``; return the future of its ``(obs, info)``."""
        return self.actors[index].reset.remote(seed, options)

    def step(self, actions: Sequence[Any]) -> list[Any]:
        """Step every env with its action; return one future of the 5-tuple per env."""
        self._check(actions, "step(actions)")
        return [a.step.remote(act) for a, act in zip(self.actors, actions)]

    def step_at(self, index: int, action: Any) -> Any:
        """Step env ``index``; return the future of its ``(obs, reward, term, trunc, info)``."""
        return self.actors[index].step.remote(action)

    @staticmethod
    def wait(futures: Sequence[Any], num_returns: int = 1,
             timeout: float | None = None) -> tuple[list[Any], list[Any]]:
        """Return ``(ready, not_ready)`` futures, as ``ray.wait``."""
        return ray.wait(list(futures), num_returns=num_returns, timeout=timeout)

    @staticmethod
    def get(futures: Any, timeout: float | None = None) -> Any:
        """Return the results of one future or a list of them, arrays copied writable."""
        return writable(ray.get(futures, timeout=timeout))

    def close(self) -> None:
        """Kill the actors."""
        for a in self.actors:
            ray.kill(a)
        self.actors = []
