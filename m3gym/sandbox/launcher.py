"""How a sandbox worker is started: resource limits, bubblewrap isolation, the allow-list of paths.

With ``bwrap`` on the ``PATH`` (Debian's ``bubblewrap``) and usable, the worker runs in fresh
user, network, PID, IPC, UTS and mount namespaces (``--unshare-all``): no network at all, no view
of the host's processes, and a file system that holds only an allow-list of read-only binds (the
system libraries, the interpreter, the numpy/OpenCV/Pillow package folders and the sandbox's own
runtime files) plus an empty private ``tmpfs`` working directory. Not the project's package, its
task data, ``/etc`` or the home directory. Without bubblewrap the worker is a plain child process
and the audit hook of :mod:`m3gym.sandbox.guard` refuses sockets and file access outside the
working directory (the second layer, always present).

Either way the worker gets per-process resource limits (set in the child before ``exec``):
``RLIMIT_CPU`` (lifetime CPU seconds; the pool recycles a worker that used half of it),
``RLIMIT_AS`` (address space), ``RLIMIT_FSIZE`` (largest file), ``RLIMIT_NPROC`` (processes of the
user: the current count plus a small margin), ``RLIMIT_NOFILE`` and ``RLIMIT_CORE`` = 0, and its
own process group, which the env kills on a wall-clock timeout.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import shutil
import subprocess
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Literal

SANDBOX_DIR = Path(__file__).resolve().parent
"""The runtime files the worker needs (this folder: no task data in it)."""

RUNTIME_MOUNT = "/sandbox/runtime"
WORK_MOUNT = "/sandbox/work"

Isolation = Literal["auto", "bwrap", "none"]


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of a sandbox worker.

    Attributes:
        wall_s: wall-clock seconds one cell may run (time the env spends on tool calls excluded).
        cpu_s: lifetime CPU seconds of one worker (``RLIMIT_CPU``); recycled at half.
        memory_mb: address-space limit (``RLIMIT_AS``) in MiB.
        file_mb: largest file the code may write (``RLIMIT_FSIZE``) in MiB; also the tmpfs size.
        nproc: processes the worker may add to its user's count (``RLIMIT_NPROC``).
        nofile: open file descriptors (``RLIMIT_NOFILE``).
        stdout_chars: characters of a cell's output shown to the agent (the rest is dropped).
        startup_s: wall-clock seconds a new worker may take to start.
    """

    wall_s: float = 10.0
    cpu_s: int = 120
    memory_mb: int = 2048
    file_mb: int = 32
    nproc: int = 16
    nofile: int = 64
    stdout_chars: int = 4000
    startup_s: float = 30.0

    def __post_init__(self) -> None:
        if self.wall_s <= 0 or self.cpu_s < 1 or self.memory_mb < 256 or self.file_mb < 1 \
                or self.nproc < 1 or self.nofile < 16 or self.stdout_chars < 0:
            raise ValueError(f"invalid sandbox limits: {self}")


@functools.lru_cache(maxsize=1)
def bwrap_works() -> bool:
    """Return whether ``bwrap`` is installed and can create the namespaces here."""
    exe = shutil.which("bwrap")
    if exe is None:
        return False
    try:
        proc = subprocess.run([exe, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
                               "--dev", "/dev", "--proc", "/proc", "true"],
                              capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError):
        return False
    return proc.returncode == 0


def resolve_isolation(isolation: Isolation) -> Literal["bwrap", "none"]:
    """Return the isolation actually used for ``auto`` (bubblewrap when it works)."""
    if isolation == "auto":
        return "bwrap" if bwrap_works() else "none"
    if isolation == "bwrap" and not bwrap_works():
        raise RuntimeError("isolation='bwrap' requested but bubblewrap is not installed or "
                           "cannot create namespaces here (apt-get install bubblewrap)")
    if isolation not in ("bwrap", "none"):
        raise ValueError(f"isolation must be 'auto', 'bwrap' or 'none', got {isolation!r}")
    return isolation


@functools.lru_cache(maxsize=1)
def library_paths() -> tuple[str, ...]:
    """Return the package folders the worker imports from (numpy, cv2, PIL and their libs)."""
    import cv2
    import numpy
    import PIL

    dirs = {Path(m.__file__).resolve().parent for m in (numpy, cv2, PIL)}
    for site in {d.parent for d in dirs}:
        for libs in site.glob("*.libs"):
            if libs.name.split(".")[0].split("_")[0].lower() in ("numpy", "opencv", "pillow"):
                dirs.add(libs.resolve())
    return tuple(sorted(str(d) for d in dirs))


def sys_path_entries() -> list[str]:
    """Return the folders the worker puts on ``sys.path`` (the parents of the packages)."""
    return sorted({str(Path(p).parent) for p in library_paths()})


def system_read_roots() -> list[str]:
    """Return the roots the worker may read below (stdlib, packages, its runtime files)."""
    stdlib = Path(os.__file__).resolve().parent
    return sorted({str(stdlib), *library_paths(), str(SANDBOX_DIR)})


def bwrap_command(workdir_size_mb: int) -> list[str]:
    """Return the ``bwrap`` prefix: namespaces, the path allow-list and an empty tmpfs home."""
    cmd = [shutil.which("bwrap") or "bwrap", "--unshare-all", "--die-with-parent",
           "--new-session", "--cap-drop", "ALL", "--clearenv"]
    for path in ("/usr", "/lib", "/lib64", "/lib32", "/bin"):
        if os.path.exists(path):
            cmd += ["--ro-bind", path, path]
    prefix = Path(sys.base_prefix).resolve()
    if not str(prefix).startswith("/usr"):
        cmd += ["--ro-bind", str(prefix), str(prefix)]
    for path in library_paths():
        cmd += ["--ro-bind", path, path]
    cmd += ["--ro-bind", str(SANDBOX_DIR), RUNTIME_MOUNT,
            "--dev", "/dev", "--proc", "/proc",
            "--size", str(workdir_size_mb * 1024 * 1024), "--tmpfs", WORK_MOUNT,
            "--chdir", WORK_MOUNT, "--setenv", "HOME", WORK_MOUNT, "--setenv", "PATH", "/usr/bin"]
    return cmd


def worker_command(isolation: Literal["bwrap", "none"], tools: dict[str, list[str]],
                   limits: SandboxLimits, workdir: str | None) -> list[str]:
    """Return the full command that starts one worker."""
    runtime = RUNTIME_MOUNT if isolation == "bwrap" else str(SANDBOX_DIR)
    config = {"sys_path": sys_path_entries(), "tools": tools,
              "read_roots": system_read_roots() + ([RUNTIME_MOUNT] if isolation == "bwrap"
                                                   else [])}
    python = str(Path(sys.executable).resolve())
    cmd = [python, "-I", "-S", "-B", f"{runtime}/worker.py", json.dumps(config)]
    if isolation == "bwrap":
        return bwrap_command(limits.file_mb) + cmd
    assert workdir is not None
    return cmd


def user_process_count() -> int:
    """Return how many processes the current user runs (for a relative ``RLIMIT_NPROC``)."""
    uid = os.getuid()
    count = 0
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                if entry.stat().st_uid == uid:
                    count += 1
            except OSError:
                continue
    return count


def limit_setter(limits: SandboxLimits) -> functools.partial[None]:
    """Return the ``preexec_fn`` that applies ``limits`` in the child before ``exec``."""
    return functools.partial(_apply_limits, limits, user_process_count() + limits.nproc)


def _apply_limits(limits: SandboxLimits, nproc: int) -> None:
    mb = 1024 * 1024
    for what, value in ((resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1)),
                        (resource.RLIMIT_AS, (limits.memory_mb * mb,) * 2),
                        (resource.RLIMIT_FSIZE, (limits.file_mb * mb,) * 2),
                        (resource.RLIMIT_NPROC, (nproc, nproc)),
                        (resource.RLIMIT_NOFILE, (limits.nofile, limits.nofile)),
                        (resource.RLIMIT_CORE, (0, 0))):
        resource.setrlimit(what, value)


def spawn(cmd: Sequence[str], limits: SandboxLimits, cwd: str | None) -> subprocess.Popen:
    """Start a worker in its own session (process group) with the limits applied."""
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin",
           "HOME": cwd or WORK_MOUNT}
    return subprocess.Popen(list(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=cwd, env=env,
                            start_new_session=True, preexec_fn=limit_setter(limits),
                            close_fds=True)
