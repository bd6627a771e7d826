"""How an eval run builds its agent, and checks the arguments it hands to its agent and env.

An agent is a registered name (:func:`m3gym.agents.make_agent`) or ``module:attr`` of a factory.
Before anything is written, the constructor (or factory) of the agent and of the env class is
introspected: an argument it does not take, or a value of a plainly wrong type, is refused with
the key named (:func:`check_agent_args`, :func:`check_env_args`).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

import gymnasium as gym


def default_agent_name() -> str:
    """Return ``heuristic`` when that agent exists, else ``random``."""
    from m3gym.agents import base

    names = getattr(base, "AGENTS", ())
    return "heuristic" if "heuristic" in names else "random"


def agent_factory(name: str) -> Callable[..., Any]:
    """Return a callable ``(seed=..., **kw) -> agent`` for a registered name or ``module:attr``."""
    if ":" in name:
        module, _, attr = name.partition(":")
        try:
            return getattr(importlib.import_module(module), attr)
        except (ImportError, AttributeError) as exc:
            raise ValueError(f"cannot load agent {name!r}: {exc}") from None
    from m3gym.agents import make_agent

    def build(seed: int = 0, **kwargs: Any) -> Any:
        return make_agent(name, seed=seed, **kwargs)

    return build


def _agent_parameters(name: str) -> tuple[dict[str, Any], bool] | None:
    """Return ``({argument: annotation}, takes **kwargs)`` of an agent, or ``None`` if unknown."""
    import typing

    if ":" in name:
        try:
            target: Any = agent_factory(name)
        except ValueError:
            return None
        return _parameters(target)
    from m3gym.agents.base import agent_class

    try:
        target = agent_class(name)
    except ValueError:
        return None
    if name == "openai":  # takes its settings as **kwargs of OpenAIAgentConfig
        from dataclasses import fields as dc_fields

        from m3gym.agents.openai_agent import OpenAIAgentConfig

        hints = typing.get_type_hints(OpenAIAgentConfig)
        return {f.name: hints.get(f.name) for f in dc_fields(OpenAIAgentConfig)}, False
    return _parameters(target)


def _parameters(target: Any) -> tuple[dict[str, Any], bool] | None:
    """Return ``({argument: annotation}, takes **kwargs)`` of a class or function."""
    import inspect
    import typing

    try:
        sig = inspect.signature(target)
    except (TypeError, ValueError):
        return None
    try:
        hints = typing.get_type_hints(target.__init__ if inspect.isclass(target) else target)
    except Exception:  # noqa: BLE001 - unresolvable annotations: check names only
        hints = {}
    params = {p.name: hints.get(p.name) for p in sig.parameters.values()
              if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)}
    var_kw = any(p.kind is p.VAR_KEYWORD for p in sig.parameters.values())
    return params, var_kw


def _check_annotated(src: Any, value: Any, annotation: Any, key: str) -> None:
    """Raise when ``value`` plainly does not fit ``annotation`` (simple types only)."""
    import types
    import typing

    origin = typing.get_origin(annotation)
    if origin in (typing.Union, types.UnionType):
        options = typing.get_args(annotation)
        if value is None and type(None) in options:
            return
        simple = [a for a in options if a is not type(None)]
        if len(simple) == 1:
            _check_annotated(src, value, simple[0], key)
        return
    if origin is typing.Literal:
        allowed = typing.get_args(annotation)
        if value not in allowed:
            raise src.error(f"expected one of {', '.join(map(repr, allowed))}, got "
                            f"{value!r}", key)
        return
    if annotation is float:
        src.number(value, key)
    elif annotation is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise src.error(f"expected an integer, got {value!r}", key)
    elif annotation is bool:
        src.boolean(value, key)
    elif annotation is str and isinstance(value, (list, dict)):
        raise src.error(f"expected a string, got {value!r}", key)


def check_agent_args(name: str, agent_args: Mapping[str, Any]) -> None:
    """Raise :class:`~m3gym.config_errors.ConfigError` for an argument the agent cannot take.

    The agent's constructor (or factory, or for ``openai`` its :class:`OpenAIAgentConfig`)
    names the arguments it takes and their types: an unknown key (unless the factory takes
    ``**kwargs``), ``seed`` (set by the run) or a value of a plainly wrong type (a string for a
    number, say) is refused with the key named. Unknown agent names are left to
    :func:`build_agent`.
    """
    from m3gym.config_errors import ConfigSource

    src = ConfigSource(f"agent_args of agent {name!r}")
    if "seed" in agent_args:
        raise src.error("set by the run (--seed), not an agent argument", "seed")
    found = _agent_parameters(name)
    if found is None:
        return
    params, var_kw = found
    if not var_kw:
        src.known_keys(agent_args, [k for k in params if k != "seed"])
    for key, value in agent_args.items():
        if params.get(key) is not None:
            _check_annotated(src, value, params[key], key)


def check_env_args(env_id: str, env_args: Mapping[str, Any]) -> None:
    """Raise :class:`~m3gym.config_errors.ConfigError` for an argument the env cannot take.

    The env class's constructor names the arguments and their types: an unknown key,
    ``reward`` (set by the run's ``--reward``) or a value of a plainly wrong type is refused
    with the key named, before anything is written. Values are checked further when the env is
    built.
    """
    from m3gym import registration
    from m3gym.config_errors import ConfigSource

    src = ConfigSource(f"env_args of env {env_id!r}")
    if "reward" in env_args:
        raise src.error("set by the run (--reward), not an env argument", "reward")
    resolved = registration.resolve_env_id(env_id)
    if resolved not in gym.registry:
        return  # env_scope names unknown envs
    from gymnasium.envs.registration import load_env_creator

    entry = gym.registry[resolved].entry_point
    try:
        target = load_env_creator(entry) if isinstance(entry, str) else entry
    except (ImportError, AttributeError):
        return
    found = _parameters(target)
    if found is None:
        return
    params, var_kw = found
    if not var_kw:
        src.known_keys(env_args, [k for k in params if k not in ("self", "reward")])
    for key, value in env_args.items():
        if params.get(key) is not None:
            _check_annotated(src, value, params[key], key)


def check_code_isolation(env_args: Mapping[str, Any]) -> str | None:
    """Return the isolation a code-mode run will use (``None`` for atomic runs).

    Raises :class:`~m3gym.sandbox.IsolationUnavailable` before anything is written when code
    mode would run without bubblewrap and without the explicit ``isolation="none"`` opt-out.
    """
    if env_args.get("interface", "atomic") == "atomic":
        return None
    from m3gym.sandbox.launcher import resolve_isolation, split_sandbox_options

    _, isolation, _ = split_sandbox_options(env_args.get("sandbox"))
    return resolve_isolation(isolation)


def build_agent(name: str, seed: int, agent_args: Mapping[str, Any]) -> Any:
    """Return a fresh agent (unknown names and bad arguments raise ``ValueError``).

    Arguments are checked first (:func:`check_agent_args`).
    """
    check_agent_args(name, agent_args)
    try:
        return agent_factory(name)(seed=seed, **dict(agent_args))
    except TypeError as exc:
        raise ValueError(f"bad arguments for agent {name!r}: {exc}") from None
