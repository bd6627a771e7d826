"""The sandbox worker: runs agent code cells against the episode's images.

Started by :mod:`m3gym.sandbox.pool` as ``python -I -S worker.py CONFIG_JSON`` (inside bubblewrap
when available). It imports numpy/OpenCV/Pillow, arms :mod:`guard`, then serves frames of
:mod:`protocol` on the descriptors it inherited as stdin/stdout (its own fd 1 and 2 are pointed at
``/dev/null`` so that nothing user code writes there can corrupt the channel).

Inside a cell the code sees ``images`` (read-only traced arrays, fetched lazily from the env),
``save(image, label=None)``, the atomic tools as functions (executed by the env, so they are
recorded exactly as function calls), all from :mod:`cellapi`, and ``np``, ``cv2``, ``Image``,
``ImageOps``, ``ImageFilter``, ``ImageEnhance`` and ``math``. Variables persist between the cells
of one episode.

This file runs as a script: it imports its siblings as top-level modules, never ``m3gym``.
"""

from __future__ import annotations

import builtins
import io
import json
import os
import resource
import shutil
import sys
from typing import Any

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
CONFIG = json.loads(sys.argv[1])
sys.path[1:1] = CONFIG["sys_path"]
os.environ.update({"OPENBLAS_NUM_THREADS": "1", "OMP_NUM_THREADS": "1"})

import cellapi  # noqa: E402
import cv2  # noqa: E402
import guard  # noqa: E402
import numpy as np  # noqa: E402
import protocol  # noqa: E402
import traced  # noqa: E402
from PIL import ImageEnhance, ImageFilter  # noqa: E402

cv2.setNumThreads(1)
IN_FD, OUT_FD = os.dup(0), os.dup(1)


class BoundedWriter(io.TextIOBase):
    """A stdout that keeps the first ``limit`` characters and counts the rest."""

    def __init__(self, limit: int) -> None:
        self.limit, self.parts, self.size, self.dropped = limit, [], 0, 0

    def write(self, text: str) -> int:
        """Keep what fits, count what does not."""
        text = str(text)
        room = self.limit - self.size
        if room > 0:
            self.parts.append(text[:room])
            self.size += min(room, len(text))
        self.dropped += max(0, len(text) - max(room, 0))
        return len(text)

    def value(self) -> str:
        """Return what was kept."""
        return "".join(self.parts)


CV2_READERS = ("imread", "imreadmulti", "imcount", "haveImageReader", "CascadeClassifier",
               "FileStorage", "imreadanimation")
CV2_WRITERS = ("imwrite", "imwritemulti", "imwriteanimation")
CV2_REFUSED = ("VideoCapture", "VideoWriter")


def guard_cv2_files() -> None:
    """Route OpenCV's own (C-level) file access through the audit hook's path check.

    OpenCV opens files in C, out of the audit hook's sight: its file functions are replaced on the
    module by wrappers that raise an ``open`` audit event for their path first, and video I/O
    (which can also open network streams) is refused.
    """
    def checked(fn: Any, write: bool) -> Any:
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            for value in (*args[:1], kwargs.get("filename"), kwargs.get("filenames")):
                for path in (value if isinstance(value, (list, tuple)) else [value]):
                    if isinstance(path, (str, bytes, os.PathLike)):
                        sys.audit("open", os.fspath(path), "w" if write else "r", 0)
            return fn(*args, **kwargs)

        wrapper.__name__, wrapper.__doc__ = fn.__name__, fn.__doc__
        return wrapper

    def refused(name: str) -> Any:
        def fn(*args: Any, **kwargs: Any) -> Any:
            raise guard.SandboxViolation(f"sandbox: cv2.{name} is not available")

        return fn

    for names, make in ((CV2_READERS, lambda f: checked(f, False)),
                        (CV2_WRITERS, lambda f: checked(f, True))):
        for name in names:
            if hasattr(cv2, name):
                setattr(cv2, name, make(getattr(cv2, name)))
    for name in CV2_REFUSED:
        setattr(cv2, name, refused(name))


def fresh_namespace(tools: dict[str, list[str]]) -> dict[str, Any]:
    """Return the globals of a new episode's cells (the objects of :mod:`cellapi`)."""
    modules = {"np": np, "numpy": np, "cv2": sys.modules["cv2"],
               "Image": sys.modules["PIL.Image"], "ImageOps": sys.modules["PIL.ImageOps"],
               "ImageFilter": ImageFilter, "ImageEnhance": ImageEnhance,
               "math": __import__("math")}
    return cellapi.namespace(tools, modules, vars(builtins))


def clear_workdir(path: str) -> None:
    """Delete everything in the working dir (between episodes)."""
    for entry in os.listdir(path):
        full = os.path.join(path, entry)
        if os.path.isdir(full) and not os.path.islink(full):
            shutil.rmtree(full, ignore_errors=True)
        else:
            os.unlink(full)


def run_cell(code: str, ns: dict[str, Any], stdout_limit: int) -> dict[str, Any]:
    """Execute one cell; return the ``done`` frame (ok, error, stdout)."""
    out = BoundedWriter(stdout_limit)
    sys.stdout = sys.stderr = out
    error = None
    try:
        compiled = compile(code, "<cell>", "exec")
        exec(compiled, ns)  # noqa: S102 - this is the sandbox
    except SyntaxError as exc:
        error = f"SyntaxError: {exc.msg} (line {exc.lineno})"
    except BaseException as exc:  # noqa: BLE001 - every failure of user code is reported
        if isinstance(exc, KeyboardInterrupt | SystemExit):
            error = f"{type(exc).__name__} is not allowed in a cell"
        else:
            error = f"{type(exc).__name__}: {exc}"
    finally:
        sys.stdout, sys.stderr = sys.__stdout__, sys.__stderr__
    return {"type": "done", "ok": error is None, "error": error, "stdout": out.value(),
            "dropped": out.dropped}


def main() -> None:
    """Arm the guard, then serve cells until the env closes the channel."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.dup2(devnull, 2)
    sys.__stdout__ = sys.__stderr__ = open(os.devnull, "w")  # type: ignore[misc]  # noqa: SIM115
    guard_cv2_files()
    sys.modules["cv2"] = traced.TracedCV2()
    sys.modules["PIL.Image"] = traced.traced_image_module()
    sys.modules["PIL.ImageOps"] = traced.traced_imageops()
    workdir = os.getcwd()
    cellapi.connect(IN_FD, OUT_FD)
    guard.install(workdir, CONFIG["read_roots"], cellapi.USER_MODULE)
    tools: dict[str, list[str]] = CONFIG["tools"]
    ns = fresh_namespace(tools)
    protocol.send(OUT_FD, {"type": "ready", "pid": os.getpid()})

    while True:
        try:
            msg, _ = protocol.recv(IN_FD)
        except protocol.ProtocolError:
            return
        kind = msg.get("type")
        if kind == "reset":
            cellapi.IMAGES.clear()
            traced.CONVERSIONS.clear()
            clear_workdir(workdir)
            ns = fresh_namespace(tools)
            protocol.send(OUT_FD, {"type": "ready", "pid": os.getpid()})
        elif kind == "run":
            cellapi.IMAGES.count = max(cellapi.IMAGES.count, int(msg["num_images"]))
            done = run_cell(str(msg["code"]), ns, int(msg["stdout_limit"]))
            used = resource.getrusage(resource.RUSAGE_SELF)
            protocol.send(OUT_FD, done | {"cpu_s": used.ru_utime + used.ru_stime})
        else:
            return


if __name__ == "__main__":
    main()
