"""Agents the Ray tests run inside Ray workers (importable there through PYTHONPATH=tests)."""

from __future__ import annotations

import os
import signal
from typing import Any

from m3gym.agents.base import OracleAgent


class KillOnceOracle(OracleAgent):
    """The oracle, except that the first episode to start kills its own worker process.

    ``marker`` is a file created (exclusively) by the one episode that kills its worker: the
    retried attempt, and every other episode, play the oracle.
    """

    name = "kill-once-oracle"

    def __init__(self, marker: str, seed: int = 0) -> None:
        super().__init__()
        self.marker = marker

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Kill this process the first time any episode starts, else reset the oracle."""
        try:
            fd = os.open(self.marker, os.O_CREAT | os.O_EXCL | os.O_WRONLY)
        except FileExistsError:
            return super().reset(observation, info)
        os.write(fd, str(os.getpid()).encode())
        os.close(fd)
        os.kill(os.getpid(), signal.SIGKILL)


def kill_once_oracle(seed: int = 0, **kwargs: Any) -> KillOnceOracle:
    """Factory for ``--agent tests.ray_agents:kill_once_oracle``."""
    return KillOnceOracle(seed=seed, **kwargs)
