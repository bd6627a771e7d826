"""m3gym on Ray (needs the ``ray`` extra): ``m3gym eval --backend ray`` and :class:`RayEnvPool`.

Nothing in the core imports this package; ``ray`` is imported when a name here is first used.
"""

from __future__ import annotations

from typing import Any

__all__ = ["RayBackend", "RayEnvPool"]


def __getattr__(name: str) -> Any:
    if name == "RayBackend":
        from m3gym.distributed.eval import RayBackend

        return RayBackend
    if name == "RayEnvPool":
        from m3gym.distributed.pool import RayEnvPool

        return RayEnvPool
    raise AttributeError(f"module 'm3gym.distributed' has no attribute {name!r}")
