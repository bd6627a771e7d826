"""Sandbox workers and the per-env pool: start, run a cell with a wall timeout, reset, kill.

A :class:`SandboxWorker` is one worker process (see :mod:`m3gym.sandbox.worker`). ``run`` sends a
cell and serves the worker's requests (image pixels, tool calls, saves) through a handler until
the cell is done; a cell that runs past ``wall_s`` (not counting the time the env spends on tool
calls and saves, which the call budget bounds) has its whole process group killed. Any protocol
violation also kills the worker. A killed worker is replaced on the next use, so the env stays
usable.

A :class:`WorkerPool` keeps warm workers for one env: ``acquire`` returns a ready worker (started
or reset), ``release`` resets it for the next episode (clears its variables, cached images and
working directory) or retires it (after a kill, or once it used half its CPU budget).
"""

from __future__ import annotations

import os
import select
import shutil
import signal
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np

from m3gym.sandbox import protocol
from m3gym.sandbox.launcher import (
    Isolation,
    SandboxLimits,
    protect_env_process,
    resolve_isolation,
    spawn,
    worker_command,
    worker_privileges,
)

Reply = tuple[dict[str, Any], tuple[np.ndarray, ...]]
Handler = Callable[[dict[str, Any], list[np.ndarray]], Reply]
"""Serves one worker request: returns the reply header and arrays."""


class SandboxError(RuntimeError):
    """The worker could not run a cell (timeout, killed by a limit, protocol violation)."""


@dataclass
class CellResult:
    """What a cell produced: success, the error message, and its (bounded) printed output."""

    ok: bool
    error: str | None
    stdout: str
    dropped_chars: int = 0
    cpu_s: float = 0.0


SIGNAL_REASONS = {
    signal.SIGXCPU: "it exceeded its CPU-time limit",
    signal.SIGKILL: "it was killed (memory exhausted or wall-clock timeout)",
    signal.SIGSEGV: "it crashed (segmentation fault)",
    signal.SIGXFSZ: "it exceeded the file-size limit",
}


class SandboxWorker:
    """One worker process with its pipes (see the module docstring)."""

    def __init__(self, tools: dict[str, list[str]], limits: SandboxLimits,
                 isolation: Isolation = "auto") -> None:
        self.limits = limits
        self.isolation = resolve_isolation(isolation)
        self.env_protected = protect_env_process()
        self.privileges = worker_privileges(self.isolation)
        self._tmp = None if self.isolation == "bwrap" else tempfile.mkdtemp(prefix="m3gym-code-")
        if self._tmp is not None and self.privileges.uid is not None:
            os.chown(self._tmp, self.privileges.uid, self.privileges.gid or self.privileges.uid)
        cmd = worker_command(self.isolation, tools, limits, self._tmp)
        self.proc = spawn(cmd, limits, self._tmp, self.privileges)
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self._out = self.proc.stdin.fileno()
        self._in = self.proc.stdout.fileno()
        self.cpu_s = 0.0
        self.alive = True
        self._expect_ready(limits.startup_s)

    # ---------------------------------------------------------------- plumbing
    def _wait_readable(self, deadline: float) -> None:
        remaining = deadline - time.monotonic()
        if remaining <= 0 or not select.select([self._in], [], [], remaining)[0]:
            raise TimeoutError

    def _recv(self, deadline: float) -> tuple[dict[str, Any], list[np.ndarray]]:
        self._wait_readable(deadline)
        return protocol.recv(self._in)

    def _expect_ready(self, timeout: float) -> None:
        try:
            msg, _ = self._recv(time.monotonic() + timeout)
        except (TimeoutError, protocol.ProtocolError, OSError) as exc:
            reason = self.death_reason()
            self.kill()
            raise SandboxError(f"sandbox worker failed to start: {reason or exc!r}") from None
        if msg.get("type") != "ready":
            self.kill()
            raise SandboxError(f"sandbox worker sent {msg.get('type')!r} instead of 'ready'")

    def death_reason(self) -> str | None:
        """Return why the worker process ended (``None`` while it runs)."""
        code = self.proc.poll()
        if code is None:
            return None
        if code < 0:
            sig = signal.Signals(-code)
            return SIGNAL_REASONS.get(sig, f"it was killed by {sig.name}")
        return f"it exited with status {code}"

    def kill(self) -> None:
        """Kill the worker's whole process group and reap it."""
        self.alive = False
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        for stream in (self.proc.stdin, self.proc.stdout):
            try:
                if stream is not None:
                    stream.close()
            except OSError:
                pass
        try:
            self.proc.wait(timeout=5)
        except Exception:  # noqa: BLE001 - best effort, the group is already killed
            pass
        if self._tmp is not None:
            shutil.rmtree(self._tmp, ignore_errors=True)
            self._tmp = None

    # ---------------------------------------------------------------- API
    def reset(self) -> None:
        """Forget the episode: variables, cached images, files in the working directory."""
        try:
            protocol.send(self._out, {"type": "reset"})
        except OSError:
            self.kill()
            raise SandboxError("sandbox worker is gone") from None
        self._expect_ready(self.limits.startup_s)

    def run(self, code: str, num_images: int, handler: Handler) -> CellResult:
        """Run one cell, serving its requests with ``handler``; raise :class:`SandboxError`."""
        if not self.alive:
            raise SandboxError("sandbox worker is not running")
        deadline = time.monotonic() + self.limits.wall_s
        try:
            protocol.send(self._out, {"type": "run", "code": code, "num_images": num_images,
                                      "stdout_limit": self.limits.stdout_chars})
            while True:
                msg, arrays = self._recv(deadline)
                if msg.get("type") == "done":
                    self.cpu_s = float(msg.get("cpu_s") or 0.0)
                    return CellResult(ok=bool(msg.get("ok")), error=_text(msg.get("error")),
                                      stdout=_text(msg.get("stdout")) or "",
                                      dropped_chars=int(msg.get("dropped") or 0),
                                      cpu_s=self.cpu_s)
                started = time.monotonic()
                reply, out_arrays = handler(msg, arrays)
                if msg.get("type") in ("call", "save"):  # budget-bounded env work
                    deadline += time.monotonic() - started
                protocol.send(self._out, reply, out_arrays)
        except TimeoutError:
            self.kill()
            raise SandboxError(f"the code ran past the wall-clock limit of "
                               f"{self.limits.wall_s:g} s and was stopped") from None
        except (protocol.ProtocolError, OSError, ValueError, TypeError, KeyError) as exc:
            time.sleep(0.05)
            reason = self.death_reason()
            self.kill()
            if reason is not None:
                raise SandboxError(f"the sandbox worker died: {reason}") from None
            raise SandboxError(f"sandbox protocol violation: {exc}") from None


def _text(value: Any) -> str | None:
    return None if value is None else str(value)


class WorkerPool:
    """Warm workers for one env (see the module docstring)."""

    def __init__(self, tools: dict[str, list[str]], limits: SandboxLimits | None = None,
                 isolation: Isolation = "auto", size: int = 1) -> None:
        self.tools = tools
        self.limits = limits or SandboxLimits()
        self.isolation: Isolation = isolation
        self.size = max(1, int(size))
        self._idle: list[SandboxWorker] = []
        self._busy: list[SandboxWorker] = []

    def acquire(self) -> SandboxWorker:
        """Return a ready worker (an idle warm one, or a new one)."""
        self._busy = [w for w in self._busy if w.alive]
        while self._idle:
            worker = self._idle.pop()
            if worker.alive and worker.proc.poll() is None:
                self._busy.append(worker)
                return worker
            worker.kill()
        worker = SandboxWorker(self.tools, self.limits, self.isolation)
        self._busy.append(worker)
        return worker

    def release(self, worker: SandboxWorker) -> None:
        """Reset ``worker`` for the next episode and keep it warm, or retire it."""
        if worker in self._busy:
            self._busy.remove(worker)
        if not worker.alive or worker.cpu_s > self.limits.cpu_s / 2 or \
                len(self._idle) >= self.size:
            worker.kill()
            return
        try:
            worker.reset()
        except SandboxError:
            return
        self._idle.append(worker)

    def close(self) -> None:
        """Kill every worker of the pool (idle or in use)."""
        while self._idle:
            self._idle.pop().kill()
        while self._busy:
            self._busy.pop().kill()
