"""What the operator of an MCP (or OpenEnv) server lets clients choose: env ids and rewards.

A client names one of the operator's env ids and reward choices, never a path; the server's env
arguments are checked once at start-up (:func:`check_server_env_args`), so a bad one stops the
server rather than failing every episode.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

SERVER_ENV_KEYS: tuple[str, ...] = ("reward", "max_images", "max_bytes", "disable_env_checker")
"""``gym.make`` arguments the server sets itself (per episode, or from its limits)."""

RECORDS_ENV_KEYS: tuple[str, ...] = ("records", "split", "max_image_pixels",
                                     "max_record_pixels")
"""Env arguments of the records env (``M3Bench-Records``) on top of every env's."""

DEFAULT_REWARD = "m3"
"""The reward a client gets without naming one, when the operator names none."""


def check_server_env_args(env_args: Mapping[str, Any]) -> None:
    """Raise ``ValueError`` naming the key when the server's envs cannot take ``env_args``.

    The keys are checked against the env constructor (plus ``records`` / ``split`` of the
    records env), and a ``records`` source is loaded once, so a bad key or records file stops
    the server at start-up rather than failing every episode.
    """
    from m3gym.config_errors import ConfigSource
    from m3gym.eval.runner import check_env_args
    from m3gym.registration import level_env_id

    src = ConfigSource("--env-arg")
    for key in SERVER_ENV_KEYS:
        if key in env_args:
            raise src.error("set by the server (per episode, or by its --max-* flags), not an "
                            "env argument", key)
    check_env_args(level_env_id(1), {k: v for k, v in env_args.items()
                                     if k not in RECORDS_ENV_KEYS})
    if "records" in env_args:
        from m3gym.records.family import cached_records
        from m3gym.records.guard import pixel_budget

        try:
            cached_records(env_args["records"], bool(env_args.get("allow_outside", False)),
                           pixel_budget(env_args.get("max_image_pixels"),
                                        env_args.get("max_record_pixels")))
        except (OSError, ValueError, TypeError) as exc:
            raise ValueError(f"--env-arg records={env_args['records']!r}: {exc}") from None


def unversioned(env_id: str) -> str:
    """Return ``env_id`` without its ``-vN`` suffix: ``M3Bench-L2-v4`` → ``M3Bench-L2``."""
    head, sep, tail = env_id.rpartition("-v")
    return head if sep and tail.isdigit() else env_id


def default_env_ids(env_args: Mapping[str, Any] | None = None) -> list[str]:
    """Return the env ids a server offers when the operator names none (unversioned).

    Every registered m3gym id except those that need operator data: the records suite's ids
    (``M3Bench-Records``) are offered only when ``env_args`` names a ``records`` source.
    """
    from m3gym.registration import env_ids, family_env_id
    from m3gym.tasks.registry import family_names

    records = {family_env_id(f) for f in family_names(suite="records")}
    with_records = env_args is not None and env_args.get("records") is not None
    return [unversioned(e) for e in env_ids() if with_records or e not in records]


def allowed_env_ids(envs: Sequence[str] | None, env_args: Mapping[str, Any] | None = None
                    ) -> dict[str, str]:
    """Return ``{name a client may give: registered id}`` for the operator's env ids.

    Each operator id is offered by its unversioned name and by its registered (versioned) id.
    Raises ``ValueError`` naming an operator id that is not registered.
    """
    from m3gym.registration import env_ids, resolve_env_id

    known = set(env_ids())
    out: dict[str, str] = {}
    for env_id in (default_env_ids(env_args) if envs is None else envs):
        try:
            resolved = resolve_env_id(str(env_id))
        except Exception:  # gymnasium rejects a malformed id
            resolved = str(env_id)
        if resolved not in known:
            raise ValueError(f"--env {env_id!r} is not an m3gym env id; known: "
                             f"{', '.join(unversioned(e) for e in sorted(known))}")
        out[unversioned(resolved)] = resolved
        out[resolved] = resolved
    if not out:
        raise ValueError("the server offers no env id (--env)")
    return out


def reward_choices(rewards: Sequence[str] | None) -> tuple[dict[str, Any], dict[str, str], str]:
    """Return the reward choices of a server: ``({name: config}, {name: source}, default)``.

    Every preset (:data:`m3gym.reward.PRESETS`) is a choice. Each operator entry is a preset
    name, a YAML path (offered by its file stem) or ``NAME=PATH``; the first entry is the
    default (``m3`` without any). A file is loaded here, once: a client names it, never its
    path. Raises ``ValueError`` for a file that does not load or a name given twice.
    """
    from m3gym.reward import PRESETS, load_reward_config

    configs: dict[str, Any] = {name: name for name in PRESETS}
    sources: dict[str, str] = {name: name for name in PRESETS}
    default = DEFAULT_REWARD
    for n, entry in enumerate(rewards or ()):
        entry = str(entry)
        name, sep, path = entry.partition("=")
        if not sep:
            name, path = (entry, "") if entry in PRESETS else (Path(entry).stem, entry)
        if path:
            if name in sources:
                raise ValueError(f"--reward {entry}: the name {name!r} is taken (a preset or "
                                 "another file); give the file a name: --reward NAME=PATH")
            if not name or not name.replace("_", "").replace("-", "").isalnum():
                raise ValueError(f"--reward {entry}: name a file with letters, digits, _ or -")
            try:
                configs[name] = load_reward_config(path)
            except (OSError, ValueError) as exc:
                raise ValueError(f"--reward {entry}: {exc}") from None
            sources[name] = str(Path(path))
        elif name not in PRESETS:
            raise ValueError(f"--reward {entry}: not a preset ({', '.join(PRESETS)}) nor a file")
        if n == 0:
            default = name
    return configs, sources, default
