"""The worker's second layer of defence: an audit hook and an import allow-list.

The first layer is the process boundary itself (a separate worker with resource limits, and a
bubblewrap namespace without network or host files when available, see
:mod:`m3gym.sandbox.launcher`). Inside the worker, after numpy/OpenCV/Pillow are imported,
:func:`install` adds a :func:`sys.addaudithook` hook (permanent by design: hooks cannot be removed)
that refuses process creation, signals, sockets, ``ctypes``, resource-limit changes, ``gc``/frame
introspection, ``marshal``/``pickle`` loading and any file access outside the private working
directory (reads are also allowed under the library roots the imports need), and replaces
``__import__`` so that user code may import only the allow-listed modules.

This module runs inside the worker as a top-level module: it must not import ``m3gym``.
"""

from __future__ import annotations

import builtins
import os
import sys
from collections.abc import Iterable
from typing import Any

ALLOWED_IMPORTS = frozenset({
    "numpy", "cv2", "PIL", "math", "cmath", "statistics", "itertools", "functools",
    "collections", "re", "json", "string", "heapq", "bisect", "operator", "fractions",
    "decimal", "dataclasses", "typing", "textwrap", "copy", "random", "time", "datetime",
    "enum", "abc", "numbers", "unicodedata", "difflib", "pprint",
})
"""Top-level modules user code may import."""

BLOCKED_EVENTS = frozenset({
    "os.system", "os.exec", "os.posix_spawn", "os.spawn", "os.fork", "os.forkpty", "os.kill",
    "os.killpg", "os.setuid", "os.chroot", "subprocess.Popen", "pty.spawn",
    "resource.setrlimit", "resource.prlimit", "signal.pthread_kill", "sys.addaudithook",
    "gc.get_objects", "gc.get_referrers", "gc.get_referents", "code.__new__",
    "marshal.load", "pickle.find_class", "sys.settrace", "sys.setprofile",
    "sys._current_frames", "sys.remote_exec", "os.startfile", "webbrowser.open",
    "urllib.Request", "ftplib.connect", "smtplib.connect", "poplib.connect", "imaplib.open",
    "telnetlib.Telnet.open", "http.client.connect", "_thread.start_new_thread",
})
"""Audit events refused outright once the guard is armed."""

BLOCKED_PREFIXES = ("socket.", "ctypes.", "winreg.", "mmap.")
"""Audit event prefixes refused outright (every socket and ctypes operation)."""

PATH_EVENTS = {
    "open": 0, "os.listdir": 0, "os.scandir": 0, "os.remove": 0, "os.rmdir": 0, "os.mkdir": 0,
    "os.rename": 0, "os.link": 0, "os.symlink": 0, "os.truncate": 0, "os.chmod": 0,
    "os.chown": 0, "os.utime": 0, "shutil.rmtree": 0, "shutil.copyfile": 0,
    "os.chdir": 0, "glob.glob": 0,
}
"""Audit events that name a path (argument position): allowed only inside the allowed roots."""

FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back",
                              "f_globals", "f_builtins", "f_locals"})
"""Attributes whose access (reported as ``object.__getattr__``) leads out to the worker's frames."""


class SandboxViolation(PermissionError):
    """An operation the sandbox refuses."""


class Guard:
    """The audit hook's state: where user code may read and write, and whether it is armed."""

    def __init__(self, workdir: str, read_roots: Iterable[str]) -> None:
        self.workdir = os.path.realpath(workdir)
        self.read_roots = tuple(os.path.realpath(r) for r in read_roots)
        self.armed = False

    def _inside(self, path: str, roots: tuple[str, ...]) -> bool:
        real = os.path.realpath(os.path.join(self.workdir, path))
        return any(real == r or real.startswith(r.rstrip("/") + "/") for r in roots)

    def check_path(self, event: str, args: tuple[Any, ...]) -> None:
        """Refuse a path outside the working dir (or, for reads, outside the library roots)."""
        path = args[PATH_EVENTS[event]] if args else None
        if path is None or isinstance(path, int):
            return  # an already-open descriptor (or the cwd): nothing new is reached
        path = os.fsdecode(path)
        reads = event in ("os.listdir", "os.scandir", "glob.glob") or \
            (event == "open" and not _open_writes(args))
        writes = not reads
        if reads:
            roots = (self.workdir, *self.read_roots)
        else:
            roots = (self.workdir,)
        if not self._inside(path, roots):
            what = "write to" if writes else "read"
            raise SandboxViolation(f"sandbox: may not {what} {path!r}: only the private working "
                                   f"directory is accessible")

    def __call__(self, event: str, args: tuple[Any, ...]) -> None:
        """Refuse ``event`` when the armed guard forbids it (the audit hook)."""
        if not self.armed:
            return
        if event in BLOCKED_EVENTS or event.startswith(BLOCKED_PREFIXES):
            raise SandboxViolation(f"sandbox: {event} is not allowed")
        if event == "marshal.loads" and not _called_by_importlib():
            raise SandboxViolation("sandbox: marshal.loads is not allowed")
        if event in PATH_EVENTS:
            self.check_path(event, args)
        elif event == "object.__getattr__" and len(args) > 1 and args[1] in FRAME_ATTRIBUTES:
            raise SandboxViolation(f"sandbox: access to {args[1]} is not allowed")


def _called_by_importlib() -> bool:
    """Return whether the running ``marshal.loads`` was called by the import system (``.pyc``)."""
    frame = sys._getframe(2)
    return frame is not None and frame.f_code.co_filename.startswith("<frozen importlib")


def _open_writes(args: tuple[Any, ...]) -> bool:
    mode = args[1] if len(args) > 1 else "r"
    flags = args[2] if len(args) > 2 else 0
    if isinstance(mode, str) and any(c in mode for c in "wax+"):
        return True
    return isinstance(flags, int) and bool(flags & (os.O_WRONLY | os.O_RDWR | os.O_CREAT
                                                    | os.O_TRUNC | os.O_APPEND))


def safe_import(original: Any, allowed: frozenset[str], user_globals_name: str) -> Any:
    """Return an ``__import__`` that refuses modules outside ``allowed`` for user code."""

    def _import(name: str, globals: Any = None, locals: Any = None,  # noqa: A002
                fromlist: Any = (), level: int = 0) -> Any:
        importer = (globals or {}).get("__name__") if isinstance(globals, dict) else None
        if importer == user_globals_name or importer is None:
            top = str(name).split(".")[0]
            if level != 0 or top not in allowed:
                raise ImportError(f"sandbox: import of {name!r} is not allowed; allowed modules: "
                                  f"{', '.join(sorted(allowed))}")
        return original(name, globals, locals, fromlist, level)

    return _import


def install(workdir: str, read_roots: Iterable[str], user_globals_name: str,
            allowed: frozenset[str] = ALLOWED_IMPORTS) -> Guard:
    """Add the (permanent) audit hook and replace ``__import__``; return the armed guard."""
    guard = Guard(workdir, read_roots)
    sys.addaudithook(guard)
    builtins.__import__ = safe_import(builtins.__import__, allowed, user_globals_name)
    guard.armed = True
    return guard
