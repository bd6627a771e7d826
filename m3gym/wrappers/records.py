"""Deprecated path of :mod:`m3gym.records_env` (the records env, which wraps nothing).

``gym.make`` entry points and imports written for ``m3gym.wrappers.records`` keep working, with a
:class:`DeprecationWarning`.
"""

from __future__ import annotations

from typing import Any

from m3gym.deprecation import renamed_names

_MOVED = ("ENTRY_POINT", "RECORDS_ENV_ID", "RecordsEnv", "register_records_env")


def _moved(name: str) -> tuple[str, Any]:
    def resolve() -> Any:
        from m3gym import records_env

        return getattr(records_env, name)

    return f"m3gym.records_env.{name}", resolve


__getattr__ = renamed_names(__name__, {name: _moved(name) for name in _MOVED})
