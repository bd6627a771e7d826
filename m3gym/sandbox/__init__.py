"""Code mode's sandbox: agent Python runs in a separate, limited, isolated worker process.

* :mod:`~m3gym.sandbox.launcher` — resource limits and bubblewrap isolation (path allow-list);
* :mod:`~m3gym.sandbox.pool` — workers, wall-clock timeouts, the per-env pool;
* :mod:`~m3gym.sandbox.protocol` — the JSON + raw-bytes wire format (nothing is unpickled);
* :mod:`~m3gym.sandbox.worker`, :mod:`~m3gym.sandbox.cellapi`, :mod:`~m3gym.sandbox.guard`,
  :mod:`~m3gym.sandbox.traced` — what runs inside the worker (the cell's API, the audit hook and
  import allow-list; run-time tracing);
* :mod:`~m3gym.sandbox.canonical` — verifying traced operations and turning them into calls;
* :mod:`~m3gym.sandbox.static` — the AST pass over a cell;
* :mod:`~m3gym.sandbox.session` — one episode's code runner used by the env.
"""

from m3gym.sandbox.launcher import (
    IsolationUnavailable,
    SandboxLimits,
    UnisolatedCodeWarning,
    bwrap_problem,
    bwrap_works,
)
from m3gym.sandbox.pool import CellResult, SandboxError, SandboxWorker, WorkerPool

__all__ = ["CellResult", "IsolationUnavailable", "SandboxError", "SandboxLimits",
           "SandboxWorker", "UnisolatedCodeWarning", "WorkerPool", "bwrap_problem", "bwrap_works"]
