"""How a sandbox worker is started: resource limits, bubblewrap isolation, the allow-list of paths.

With ``bwrap`` on the ``PATH`` (Debian's ``bubblewrap``) and usable, the worker runs in fresh
user, network, PID, IPC, UTS and mount namespaces (``--unshare-all``): no network at all, no view
of the host's processes, and a file system that holds only an allow-list of read-only binds (the
system libraries, the interpreter, the numpy/OpenCV/Pillow package folders and the sandbox's own
runtime files) plus an empty private ``tmpfs`` working directory. Not the project's package, its
task data, ``/etc`` or the home directory.

Code mode fails closed: ``isolation="auto"`` (the default) and ``"bwrap"`` raise
:class:`IsolationUnavailable`, which says how to install bubblewrap or opt out, where bubblewrap
is missing or cannot create namespaces. ``isolation="none"`` is that opt-out: the worker is a
plain child process, and the caller (:class:`~m3gym.sandbox.session.CodeSession`) warns with
:class:`UnisolatedCodeWarning` and records it in every episode. Even then the env process is made
non-dumpable (:func:`protect_env_process`) and a root env's worker drops to another uid or to no
capabilities (:func:`worker_privileges`), so it cannot read the env's memory; the audit hook of
:mod:`m3gym.sandbox.guard` refuses sockets and file access outside the working directory (the
second layer, always present).

Either way the worker gets per-process resource limits (set in the child before ``exec``):
``RLIMIT_CPU`` (lifetime CPU seconds; the pool recycles a worker that used half of it),
``RLIMIT_AS`` (address space), ``RLIMIT_FSIZE`` (largest file), ``RLIMIT_NPROC`` (processes of the
user: the current count plus a small margin), ``RLIMIT_NOFILE`` and ``RLIMIT_CORE`` = 0,
``PR_SET_NO_NEW_PRIVS``, and its own process group, which the env kills on a wall-clock timeout.
"""

from __future__ import annotations

import functools
import json
import os
import resource
import shutil
import stat
import subprocess
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

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


class IsolationUnavailable(RuntimeError):
    """Code mode was asked for with isolation, and no isolation layer works here."""


class UnisolatedCodeWarning(UserWarning):
    """Code mode runs agent code without an isolation layer (``isolation="none"``)."""


ISOLATION_HELP = (
    "Install bubblewrap (Debian/Ubuntu: apt-get install bubblewrap; Fedora: dnf install "
    "bubblewrap; Arch: pacman -S bubblewrap) on a Linux kernel that allows user namespaces, or "
    "opt out explicitly with sandbox={'isolation': 'none'} (CLI: --code-isolation none). An "
    "unisolated run is recorded as such in every episode, run and report, and its checkpoint "
    "and answer rewards are marked untrusted: agent code can then read what the process can.")
"""How to get an isolation layer, or how to opt out (in every refusal)."""


@functools.lru_cache(maxsize=1)
def bwrap_problem() -> str | None:
    """Return why ``bwrap`` cannot isolate a worker here, or ``None`` when it works."""
    exe = shutil.which("bwrap")
    if exe is None:
        return "bubblewrap (bwrap) is not installed or not on the PATH"
    try:
        proc = subprocess.run([exe, "--unshare-all", "--die-with-parent", "--ro-bind", "/", "/",
                               "--dev", "/dev", "--proc", "/proc", "true"],
                              capture_output=True, timeout=20)
    except (OSError, subprocess.SubprocessError) as exc:
        return f"{exe} could not be run: {exc}"
    if proc.returncode != 0:
        detail = proc.stderr.decode(errors="replace").strip().splitlines()
        return (f"{exe} cannot create namespaces here (exit status {proc.returncode}"
                f"{': ' + detail[-1] if detail else ''})")
    return None


def bwrap_works() -> bool:
    """Return whether ``bwrap`` is installed and can create the namespaces here."""
    return bwrap_problem() is None


def split_sandbox_options(sandbox: Any) -> tuple[SandboxLimits, Isolation, int]:
    """Return ``(limits, isolation, pool_size)`` of an env's ``sandbox`` argument.

    ``sandbox`` is ``None``, a :class:`SandboxLimits`, or a dict of its fields plus optionally
    ``isolation`` (default ``"auto"``) and ``pool_size`` (default 1).
    """
    if isinstance(sandbox, SandboxLimits):
        return sandbox, "auto", 1
    if sandbox is not None and not isinstance(sandbox, Mapping):
        raise ValueError(f"sandbox must be a dict or SandboxLimits, got {type(sandbox).__name__}")
    options = dict(sandbox or {})
    isolation = options.pop("isolation", "auto")
    pool_size = int(options.pop("pool_size", 1))
    return SandboxLimits(**options), isolation, pool_size


def resolve_isolation(isolation: Isolation) -> Literal["bwrap", "none"]:
    """Return the isolation a code session uses; fail closed when none is available.

    ``auto`` and ``bwrap`` need bubblewrap and raise :class:`IsolationUnavailable` (saying how to
    install it or opt out) without it; ``none`` is the explicit opt-out (the caller warns and
    records it).
    """
    if isolation not in ("auto", "bwrap", "none"):
        raise ValueError(f"isolation must be 'auto', 'bwrap' or 'none', got {isolation!r}")
    if isolation == "none":
        return "none"
    problem = bwrap_problem()
    if problem is not None:
        raise IsolationUnavailable(f"code mode refuses to run agent code without an isolation "
                                   f"layer: {problem}. {ISOLATION_HELP}")
    return "bwrap"


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


PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 4, 24, 38
CAP_SETPCAP = 8
NOBODY = 65534
"""The uid and gid a worker drops to under ``isolation="none"`` when the env runs as root."""


@functools.lru_cache(maxsize=1)
def _prctl() -> Any:
    """Return libc's ``prctl`` (``None`` off Linux or without a C library)."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        import ctypes

        fn = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    fn.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    fn.restype = ctypes.c_int
    return fn


def protect_env_process() -> bool:
    """Mark this process (the env's) non-dumpable; return whether that worked.

    A non-dumpable process's memory, environment and descriptors (``/proc/PID/mem``,
    ``environ``, ``process_vm_readv``, ``ptrace``) are closed to every other process of the
    same user that lacks ``CAP_SYS_PTRACE``, which the workers never have. It also turns off core
    dumps of this process and makes its ``/proc/PID`` files root's: attach a debugger or py-spy
    to a code-mode env as root.
    """
    prctl = _prctl()
    return prctl is not None and prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == 0


def last_capability() -> int:
    """Return the highest capability number of this kernel (``/proc/sys/kernel/cap_last_cap``)."""
    try:
        return int(Path("/proc/sys/kernel/cap_last_cap").read_text())
    except (OSError, ValueError):
        return 63


def others_can_use(path: str | Path) -> bool:
    """Return whether a user with no relation to ``path``'s owner can read it (and its dirs)."""
    try:
        target = Path(path).resolve()
        for parent in reversed(target.parents):
            if not parent.stat().st_mode & 0o001:
                return False
        mode = target.stat().st_mode
    except OSError:
        return False
    need = 0o005 if stat.S_ISDIR(mode) else 0o004
    return mode & need == need


@dataclass(frozen=True)
class WorkerPrivileges:
    """Who an unisolated worker runs as: a separate uid, or the env's uid without capabilities.

    Attributes:
        uid / gid: the identity the worker drops to (``None``: the env's own).
        drop_capabilities: empty the bounding set before ``exec`` (the env runs as root).
        last_capability: the kernel's highest capability number.
    """

    uid: int | None = None
    gid: int | None = None
    drop_capabilities: bool = False
    last_capability: int = 63

    def describe(self) -> str:
        """Return the privileges in words (recorded with every unisolated run)."""
        if self.uid is not None:
            return f"separate uid {self.uid}, no capabilities"
        if self.drop_capabilities:
            return "the env's uid (root) without capabilities"
        return "the env's uid"


@functools.lru_cache(maxsize=2)
def worker_privileges(isolation: Literal["bwrap", "none"]) -> WorkerPrivileges:
    """Return the privileges of a new worker.

    Under bubblewrap the worker has its own user and PID namespace and no capabilities
    (``--cap-drop ALL``). Without it, a worker of a root env drops to uid/gid ``NOBODY`` when that
    user can read the interpreter and the packages, else it stays root with an empty capability
    bounding set; either way it cannot read the (non-dumpable) env process.
    """
    if isolation == "bwrap" or os.geteuid() != 0:
        return WorkerPrivileges()
    needed = [sys.executable, sys.base_prefix, os.__file__, SANDBOX_DIR, *library_paths()]
    if all(others_can_use(p) for p in needed):
        return WorkerPrivileges(NOBODY, NOBODY, True, last_capability())
    return WorkerPrivileges(None, None, True, last_capability())


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


def limit_setter(limits: SandboxLimits,
                 privileges: WorkerPrivileges = WorkerPrivileges()) -> functools.partial[None]:
    """Return the ``preexec_fn`` that applies ``limits`` and ``privileges`` before ``exec``."""
    return functools.partial(_apply_limits, limits, user_process_count() + limits.nproc,
                             privileges, _prctl())


def _apply_limits(limits: SandboxLimits, nproc: int, privileges: WorkerPrivileges,
                  prctl: Any) -> None:
    mb = 1024 * 1024
    for what, value in ((resource.RLIMIT_CPU, (limits.cpu_s, limits.cpu_s + 1)),
                        (resource.RLIMIT_AS, (limits.memory_mb * mb,) * 2),
                        (resource.RLIMIT_FSIZE, (limits.file_mb * mb,) * 2),
                        (resource.RLIMIT_NPROC, (nproc, nproc)),
                        (resource.RLIMIT_NOFILE, (limits.nofile, limits.nofile)),
                        (resource.RLIMIT_CORE, (0, 0))):
        resource.setrlimit(what, value)
    if prctl is not None and prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        raise OSError("prctl(PR_SET_NO_NEW_PRIVS) failed")
    if privileges.drop_capabilities:
        if prctl is None:
            raise OSError("cannot drop capabilities without prctl")
        caps = [c for c in range(privileges.last_capability + 1) if c != CAP_SETPCAP]
        for cap in [*caps, CAP_SETPCAP]:  # CAP_SETPCAP last: it is what allows the drops
            if prctl(PR_CAPBSET_DROP, cap, 0, 0, 0) != 0:
                raise OSError(f"prctl(PR_CAPBSET_DROP, {cap}) failed")
    if privileges.uid is not None:
        os.setgroups([])
        os.setgid(privileges.gid if privileges.gid is not None else privileges.uid)
        os.setuid(privileges.uid)


def spawn(cmd: Sequence[str], limits: SandboxLimits, cwd: str | None,
          privileges: WorkerPrivileges = WorkerPrivileges()) -> subprocess.Popen:
    """Start a worker in its own session (process group) with the limits applied."""
    env = {"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1", "PATH": "/usr/bin:/bin",
           "HOME": cwd or WORK_MOUNT}
    return subprocess.Popen(list(cmd), stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.DEVNULL, cwd=cwd, env=env,
                            start_new_session=True,
                            preexec_fn=limit_setter(limits, privileges),  # noqa: PLW1509
                            close_fds=True)
