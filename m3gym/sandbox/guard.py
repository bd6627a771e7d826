"""The worker's second layer of defence: an audit hook and an import allow-list.

The first layer is the process boundary itself (a separate worker with resource limits, and a
bubblewrap namespace without network, host files or a view of the env's process when available,
see :mod:`m3gym.sandbox.launcher`). Inside the worker, after numpy/OpenCV/Pillow are imported,
:func:`install` replaces ``__import__`` so that user code may import only the allow-listed modules,
then adds a :func:`sys.addaudithook` hook (permanent by design: hooks cannot be removed) that
refuses process creation, threads, new interpreters, signals, sockets, ``ctypes``, ``mmap``,
resource-limit changes, ``gc``/frame introspection, code-object creation, foreign ``marshal``
loads, symlinks, ``chdir``, and any file access outside the private working directory (reads
are also allowed under the library roots the imports need).

The hook depends on nothing a cell can change. It is a closure made by :func:`make_hook`: its
tables are frozensets and tuples, every function it calls is a C builtin bound when it is made
(``posix.lstat``, ``posix.readlink``, ``posix.getcwd``, ``sys._getframe``, the unbound methods of
``str`` and ``bytes``), and it resolves paths itself (:func:`make_resolver`), never through
``os.path``, whose module attributes a cell can replace. It is referenced only by the
interpreter's hook list, so no cell can reach it to change its closure, and it is armed from the
moment it is added. Paths are copied into exact ``str`` objects before they are looked at, so a
``str`` subclass cannot answer differently to the check than to the open. A file descriptor of a
directory outside the working dir cannot be opened, and ``dir_fd`` arguments are refused, so a
relative path always means what the check resolved.

This module runs inside the worker as a top-level module: it must not import ``m3gym``.
"""

from __future__ import annotations

import builtins
import posix
import sys
from collections.abc import Callable, Iterable
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
    "marshal.load", "marshal.dumps", "pickle.find_class", "sys.settrace", "sys.setprofile",
    "sys._current_frames", "sys.remote_exec", "os.startfile",
    "webbrowser.open", "urllib.Request", "ftplib.connect", "smtplib.connect", "poplib.connect",
    "imaplib.open", "telnetlib.Telnet.open", "http.client.connect", "_thread.start_new_thread",
    "function.__new__", "os.setxattr", "os.removexattr", "os.chflags", "os.lchflags",
    "os.symlink", "os.chdir", "cpython.PyInterpreterState_New",
})
"""Audit events refused outright once the guard is armed (no symlinks and no ``chdir``: without
them a path means to the kernel what the check resolved, whatever another thread does)."""

BLOCKED_IMPORTS = frozenset({
    "_thread", "threading", "_xxsubinterpreters", "_xxinterpchannels", "_interpreters",
    "_posixsubprocess", "_ctypes", "_testcapi", "_testinternalcapi", "_multiprocessing",
})
"""Modules that may not be (re)loaded once the guard is armed: new threads and interpreters
(an interpreter of its own has no audit hook), raw process creation, C-level test hooks."""

THREAD_STARTERS = (("_thread", "start_new_thread"), ("_thread", "start_new"),
                   ("_thread", "start_joinable_thread"), ("threading", "_start_new_thread"),
                   ("threading", "_start_joinable_thread"))
"""The functions that start threads (CPython < 3.13 does not audit them): replaced at install."""

BLOCKED_PREFIXES = ("socket.", "ctypes.", "winreg.", "mmap.", "_winapi.", "msvcrt.", "sqlite3.",
                    "syslog.", "fcntl.")
"""Audit event prefixes refused outright (every socket, ctypes and mmap operation)."""

PATH_EVENTS: dict[str, tuple[tuple[tuple[int, str], ...], tuple[int, ...]]] = {
    "open": (((0, "open"),), ()),
    "os.listdir": (((0, "list"),), ()),
    "os.scandir": (((0, "list"),), ()),
    "glob.glob": (((0, "list"),), ()),
    "os.remove": (((0, "write"),), (1,)),
    "os.rmdir": (((0, "write"),), (1,)),
    "os.mkdir": (((0, "write"),), (2,)),
    "os.rename": (((0, "write"), (1, "write")), (2, 3)),
    "os.link": (((0, "write"), (1, "write")), (2, 3)),
    "os.truncate": (((0, "write"),), ()),
    "os.chmod": (((0, "write"),), (2,)),
    "os.chown": (((0, "write"),), (3,)),
    "os.utime": (((0, "write"),), (3,)),
    "shutil.rmtree": (((0, "write"),), (1,)),
    "shutil.copyfile": (((0, "read"), (1, "write")), ()),
    "shutil.copymode": (((0, "read"), (1, "write")), ()),
    "shutil.copystat": (((0, "read"), (1, "write")), ()),
    "shutil.copytree": (((0, "read"), (1, "write")), ()),
    "shutil.move": (((0, "write"), (1, "write")), ()),
    "shutil.make_archive": (((0, "write"),), ()),
    "shutil.unpack_archive": (((0, "read"), (1, "write")), ()),
}
"""Audit events that name paths: ``(position, access)`` of each path argument, and the positions
of ``dir_fd`` arguments (refused unless ``None``). A path is allowed only inside the allowed
roots: the working dir for writes, plus the library roots for reads."""

FRAME_ATTRIBUTES = frozenset({"tb_frame", "gi_frame", "cr_frame", "ag_frame", "f_back",
                              "f_globals", "f_builtins", "f_locals"})
"""Attributes whose access (reported as ``object.__getattr__``) leads out to the worker's frames
(CPython reports ``tb_frame`` and the generators' frames; ``f_back`` and ``__globals__`` are not
reported, which is why nothing the hook relies on is reachable through them)."""

PROTECTED_ATTRIBUTES = frozenset({"__code__"})
"""Attributes a cell may not assign (reported as ``object.__setattr__``): a function's code.
(``__defaults__`` and ``__bases__`` are assigned by ``namedtuple`` and ``typing`` at run time.)"""

WRITE_FLAGS = posix.O_WRONLY | posix.O_RDWR | posix.O_CREAT | posix.O_TRUNC | posix.O_APPEND
MAX_SYMLINKS = 40


class SandboxViolation(PermissionError):
    """An operation the sandbox refuses."""


def make_path_copier() -> Callable[[Any], str | None]:
    """Return ``to_path(value)``, which copies a path argument into an exact ``str``.

    A copy, so no subclass method is ever called. ``None`` for a file descriptor or a missing
    path (nothing new is reached); a path of any other type raises :class:`SandboxViolation`.
    Every builtin it uses is bound here.
    """
    _isinstance, _type, _int, _slice = isinstance, type, int, slice
    _str, _bytes, _bytearray, violation = str, bytes, bytearray, SandboxViolation
    str_copy, bytes_copy, bytearray_copy = str.__getitem__, bytes.__getitem__, bytearray.__getitem__
    bytes_decode, bytearray_decode = bytes.decode, bytearray.decode
    everything = _slice(None)

    def to_path(value: Any) -> str | None:
        if value is None or _isinstance(value, _int):
            return None
        if _isinstance(value, _str):
            return str_copy(value, everything)
        if _isinstance(value, _bytes):
            return bytes_decode(bytes_copy(value, everything), "utf-8", "surrogateescape")
        if _isinstance(value, _bytearray):
            return bytearray_decode(bytearray_copy(value, everything), "utf-8", "surrogateescape")
        raise violation(f"sandbox: a path must be str or bytes, got {_type(value).__name__}")

    return to_path


def make_resolver(lstat: Callable[..., Any] = posix.lstat,
                  readlink: Callable[..., Any] = posix.readlink,
                  getcwd: Callable[[], str] = posix.getcwd) -> Callable[[str], str | None]:
    """Return ``resolve(path)``, the absolute path with every symlink followed.

    Like a non-strict ``os.path.realpath``; ``None`` past ``MAX_SYMLINKS`` links. Only the bound
    builtins given here and the unbound methods of ``str`` are used.
    """
    split, startswith, rfind, join = str.split, str.startswith, str.rfind, str.join
    errors, max_links = (OSError, ValueError), MAX_SYMLINKS

    def resolve(path: str) -> str | None:
        if not startswith(path, "/"):
            path = join("/", (getcwd(), path))
        stack = [p for p in split(path, "/") if p][::-1]
        resolved, links = "", 0
        while stack:
            name = stack.pop()
            if name == ".":
                continue
            if name == "..":
                cut = rfind(resolved, "/")
                resolved = resolved[:cut] if cut > 0 else ""
                continue
            candidate = join("/", (resolved, name))
            try:
                mode = lstat(candidate).st_mode
            except errors:
                resolved = candidate  # does not exist (yet): taken literally
                continue
            if mode & 0o170000 != 0o120000:
                resolved = candidate
                continue
            links += 1
            if links > max_links:
                return None
            target = readlink(candidate)
            if startswith(target, "/"):
                resolved = ""
            stack.extend([p for p in split(target, "/") if p][::-1])
        return resolved or "/"

    return resolve


def make_hook(workdir: str, read_roots: Iterable[str]) -> Callable[[str, tuple[Any, ...]], None]:
    """Return the audit hook (see the module docstring); everything it uses is bound here."""
    resolve, to_path = make_resolver(), make_path_copier()
    startswith, rstrip = str.startswith, str.rstrip
    _len, _type, _str, _int = len, type, str, int
    stat, getframe, errors = posix.stat, sys._getframe, (OSError, ValueError)
    work = resolve(str(workdir)) or "/nonexistent"
    write_roots = (work,)
    read_roots_all = (work, *(r for r in (resolve(str(r)) for r in read_roots) if r))
    blocked, prefixes, path_events = BLOCKED_EVENTS, BLOCKED_PREFIXES, dict(PATH_EVENTS)
    blocked_imports, default_dir_fds = BLOCKED_IMPORTS, (None, -1, -100)
    frame_attrs, protected = FRAME_ATTRIBUTES, PROTECTED_ATTRIBUTES
    violation, write_flags = SandboxViolation, WRITE_FLAGS

    def inside(real: str, roots: tuple[str, ...]) -> bool:
        for root in roots:
            if real == root or startswith(real, rstrip(root, "/") + "/"):
                return True
        return False

    def is_dir(real: str) -> bool:
        try:
            return stat(real).st_mode & 0o170000 == 0o040000
        except errors:
            return False

    def opens_for_writing(args: tuple[Any, ...]) -> bool:
        mode = args[1] if _len(args) > 1 else "r"
        flags = args[2] if _len(args) > 2 else 0
        if _type(mode) is _str:
            for c in "wax+":
                if c in mode:
                    return True
        return _type(flags) is _int and (flags & write_flags) != 0

    def check_paths(event: str, args: tuple[Any, ...]) -> None:
        paths, dir_fds = path_events[event]
        for pos in dir_fds:
            if _len(args) > pos and args[pos] not in default_dir_fds:
                raise violation(f"sandbox: {event} with dir_fd is not allowed")
        for pos, access in paths:
            raw = to_path(args[pos] if _len(args) > pos else None)
            if raw is None:
                continue
            real = resolve(raw)
            writes = access == "write" or (access == "open" and opens_for_writing(args))
            roots = write_roots if writes else read_roots_all
            if real is None or not inside(real, roots):
                what = "write to" if writes else "read"
                raise violation(f"sandbox: may not {what} {raw!r}: only the private working "
                                f"directory is accessible")
            if access == "open" and not inside(real, write_roots) and is_dir(real):
                raise violation(f"sandbox: may not open the directory {raw!r}")

    def called_by_importlib() -> bool:
        frame = getframe(2)
        return frame is not None and startswith(frame.f_code.co_filename, "<frozen importlib")

    def hook(event: str, args: tuple[Any, ...]) -> None:
        if event in blocked or startswith(event, prefixes):
            raise violation(f"sandbox: {event} is not allowed")
        if event in path_events:
            check_paths(event, args)
        elif event == "import":
            if _len(args) > 0 and args[0] in blocked_imports:
                raise violation(f"sandbox: loading {args[0]} is not allowed")
        elif event == "object.__getattr__":
            if _len(args) > 1 and args[1] in frame_attrs:
                raise violation(f"sandbox: access to {args[1]} is not allowed")
        elif event == "object.__setattr__":
            if _len(args) > 1 and args[1] in protected:
                raise violation(f"sandbox: setting {args[1]} is not allowed")
        elif event == "marshal.loads":
            if not called_by_importlib():
                raise violation("sandbox: marshal.loads is not allowed")
        elif event == "compile":
            name = args[1] if _len(args) > 1 else None
            if _type(name) is _str and startswith(name, "<frozen"):
                raise violation("sandbox: compiling as a frozen module is not allowed")

    return hook


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


def refuse_threads() -> None:
    """Replace every thread-starting function (:data:`THREAD_STARTERS`) by a refusal."""
    import _thread
    import threading

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise SandboxViolation("sandbox: threads are not allowed")

    modules = {"_thread": _thread, "threading": threading}
    for module, name in THREAD_STARTERS:
        if hasattr(modules[module], name):
            setattr(modules[module], name, refused)


def install(workdir: str, read_roots: Iterable[str], user_globals_name: str,
            allowed: frozenset[str] = ALLOWED_IMPORTS) -> None:
    """Refuse threads, replace ``__import__``, then add the (permanent, armed) audit hook."""
    refuse_threads()
    builtins.__import__ = safe_import(builtins.__import__, allowed, user_globals_name)
    sys.addaudithook(make_hook(workdir, read_roots))
