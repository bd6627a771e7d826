"""Env ids: the versioned names m3gym registers with Gymnasium, and how to resolve them.

:func:`register_envs` runs when ``m3gym`` is imported; every module below the package root takes
the id helpers from here (never ``from m3gym import ...``, which would point back up the layers).
"""

from __future__ import annotations

from gymnasium.envs.registration import (
    find_highest_version,
    get_env_id,
    parse_env_id,
    register,
    registry,
)

from m3gym.tasks.registry import family_names
from m3gym.versions import MANIFEST_VERSION

ENTRY_POINT = "m3gym.env:M3BenchEnv"


ENV_VERSION: int = MANIFEST_VERSION
"""Version suffix of every env id: the frozen tasks' version (a new one whenever tasks change)."""


def versioned_id(name: str) -> str:
    """Return ``name`` with the current version suffix: ``M3Bench-L2`` → ``M3Bench-L2-v4``."""
    return f"{name}-v{ENV_VERSION}"


def resolve_env_id(env_id: str) -> str:
    """Return the registered id ``env_id`` names: itself, or an unversioned id's newest version.

    Unknown ids are returned unchanged (the caller reports them).
    """
    if env_id in registry:
        return env_id
    ns, name, version = parse_env_id(env_id)
    if version is None:
        latest = find_highest_version(ns, name)
        if latest is not None:
            return get_env_id(ns, name, latest)
    return env_id


def family_env_id(family: str) -> str:
    """Return the env id of a task family: ``tiny_text`` → ``M3Bench-TinyText-v4``."""
    return versioned_id("M3Bench-" + "".join(part.capitalize() for part in family.split("_")))


CLASSIC_ENV_ID = versioned_id("M3Bench-Classic")
"""Env id of the classic-RL suite (level-1 glyph tasks, 96-px view)."""


def level_env_id(level: int) -> str:
    """Return the env id of a level: ``2`` → ``M3Bench-L2-v4``."""
    return versioned_id(f"M3Bench-L{int(level)}")


def env_ids() -> list[str]:
    """Return every env id m3gym registers: levels, the classic suite, then one per family."""
    ids = [level_env_id(lvl) for lvl in (1, 2, 3) if family_names(lvl)]
    if family_names(1, "classic"):
        ids.append(CLASSIC_ENV_ID)
    return ids + [family_env_id(f) for f in (*family_names(suite=None),
                                             *family_names(suite="records"))]


def register_envs() -> None:
    """Register the level ids, the classic suite and one id per family (idempotent)."""
    for level in (1, 2, 3):
        env_id = level_env_id(level)
        if family_names(level) and env_id not in registry:
            register(id=env_id, entry_point=ENTRY_POINT, kwargs={"level": level})
    if family_names(1, "classic") and CLASSIC_ENV_ID not in registry:
        register(id=CLASSIC_ENV_ID, entry_point=ENTRY_POINT,
                 kwargs={"level": 1, "suite": "classic"})
    for family in family_names(suite=None):
        env_id = family_env_id(family)
        if env_id not in registry:
            register(id=env_id, entry_point=ENTRY_POINT, kwargs={"family": family})

