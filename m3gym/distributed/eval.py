"""``m3gym eval --backend ray``: the episodes of a run as Ray tasks.

Each episode is one Ray task running the same function a local worker runs
(:func:`~m3gym.eval.runner.run_episode_outcome`, the one episode loop), so records are the same
byte for byte (``wall_s`` aside). Ray reuses its worker processes, and each keeps its env and
the offline world (built once per process) between tasks. A task whose worker dies is retried
(``max_retries``); one that still fails comes back as an ``infra_error`` episode, which
``--resume`` runs again. Outcomes are yielded in plan order, as the local pool does.
"""

from __future__ import annotations

import socket
from collections import deque
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

import ray

from m3gym.eval.runner import EpisodeOutcome, EpisodeSpec, EvalConfig, run_episode_outcome

ONE_THREAD_ENV: dict[str, str] = {
    "OMP_NUM_THREADS": "1", "OPENBLAS_NUM_THREADS": "1", "MKL_NUM_THREADS": "1",
    "OPENCV_FOR_THREADS_NUM": "1",
}
"""Environment of Ray workers: OpenCV and BLAS use one thread each (workers are the parallelism)."""

CONNECT_TIMEOUT_S = 10.0
"""How long a ``HOST:PORT`` Ray address may take to answer before the run is refused."""


def check_address(address: str, timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Raise ``ConnectionError`` unless ``HOST:PORT`` accepts a TCP connection within ``timeout``.

    ``auto`` and ``ray://`` addresses are left to Ray (``auto`` fails at once without a cluster).
    """
    if address == "auto" or address.startswith("ray://"):
        return
    host, sep, port = address.rpartition(":")
    if not sep or not port.isdigit():
        raise ValueError(f"Ray address must be auto or HOST:PORT, got {address!r}")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout):
            pass
    except OSError as exc:
        raise ConnectionError(f"Ray address {address} does not answer within {timeout:g} s "
                              f"({exc}); start the cluster with `ray start --head` or check the "
                              "address") from None


def connect(address: str | None = None, num_cpus: int | None = None) -> None:
    """Connect to a Ray cluster (``address``), or start a local one with ``num_cpus`` CPUs.

    A Ray already initialized in this process is used as it is (a ``HOST:PORT`` address is still
    checked first).
    """
    if address:
        check_address(address)
    if ray.is_initialized():
        return
    runtime_env = {"env_vars": dict(ONE_THREAD_ENV)}
    if address:
        try:
            ray.init(address=address, runtime_env=runtime_env, log_to_driver=False)
        except ConnectionError as exc:
            raise ConnectionError(f"cannot connect to Ray at {address}: {exc}") from None
        return
    if num_cpus is not None and num_cpus < 1:
        raise ValueError("--num-cpus must be >= 1")
    ray.init(num_cpus=num_cpus, runtime_env=runtime_env, log_to_driver=False,
             include_dashboard=False)


def _episode(spec: EpisodeSpec, cfg: EvalConfig) -> EpisodeOutcome:
    """Run one episode in a Ray worker (one OpenCV thread)."""
    import cv2

    cv2.setNumThreads(1)
    return run_episode_outcome(spec, cfg)


@dataclass
class RayBackend:
    """Runs a run's episodes as Ray tasks (see the module docstring).

    Attributes:
        address: a running cluster (``auto`` or ``HOST:PORT``); None starts a local one.
        num_cpus: CPUs of a local cluster (None: all of this machine's).
        max_retries: times a task is re-run when its worker dies.
        window: tasks in flight at once (None: four per cluster CPU).
    """

    address: str | None = None
    num_cpus: int | None = None
    max_retries: int = 3
    window: int | None = None

    def start(self) -> None:
        """Connect (fail fast: bad address, no cluster)."""
        connect(self.address, self.num_cpus)

    def outcomes(self, specs: Sequence[EpisodeSpec], cfg: EvalConfig
                 ) -> Iterator[EpisodeOutcome]:
        """Yield every episode's outcome, in the order of ``specs``."""
        self.start()
        remote = ray.remote(num_cpus=1, max_retries=self.max_retries,
                            retry_exceptions=False)(_episode)
        cpus = int(ray.cluster_resources().get("CPU", 1))
        window = self.window or max(2, 4 * cpus)
        cfg_ref = ray.put(cfg)
        pending: deque[tuple[EpisodeSpec, Any]] = deque()
        queue = iter(specs)
        try:
            while True:
                while len(pending) < window:
                    spec = next(queue, None)
                    if spec is None:
                        break
                    pending.append((spec, remote.remote(spec, cfg_ref)))
                if not pending:
                    return
                spec, ref = pending.popleft()
                yield self._get(spec, cfg, ref)
        finally:
            for _, ref in pending:
                ray.cancel(ref, force=True)

    @staticmethod
    def _get(spec: EpisodeSpec, cfg: EvalConfig, ref: Any) -> EpisodeOutcome:
        """Return a task's outcome; a task lost for good becomes an ``infra_error`` episode."""
        try:
            return ray.get(ref)
        except (ray.exceptions.RayError, OSError) as exc:
            from m3gym.eval.runner import assemble_outcome

            rec = _Lost(f"Ray task lost after retries: {type(exc).__name__}: {exc}"[:2000])
            return assemble_outcome(spec, cfg, rec)  # type: ignore[arg-type]


@dataclass
class _Lost:
    """The recording of an episode whose Ray task was lost (nothing ran to completion)."""

    error: str
    status: str = "infra_error"
    task: Any = None
    base: Any = None
    prompt: str = ""
    terminated: bool = False
    truncated: bool = False
    reward_total: float = 0.0
    wall_s: float = 0.0

    def __post_init__(self) -> None:
        self.steps: list[dict[str, Any]] = []
        self.final: dict[str, Any] = {}

