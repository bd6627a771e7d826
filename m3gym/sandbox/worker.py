"""The sandbox worker: runs agent code cells against the episode's images.

Started by :mod:`m3gym.sandbox.pool` as ``python -I -S worker.py CONFIG_JSON`` (inside bubblewrap
when available). It imports numpy/OpenCV/Pillow, arms :mod:`guard`, then serves frames of
:mod:`protocol` on the descriptors it inherited as stdin/stdout (its own fd 1 and 2 are pointed at
``/dev/null`` so that nothing user code writes there can corrupt the channel).

Inside a cell the code sees ``images`` (read-only traced arrays, fetched lazily from the env),
``save(image, label=None)``, the atomic tools as functions (executed by the env, so they are
recorded exactly as function calls), ``np``, ``cv2``, ``Image``, ``ImageOps``, ``ImageFilter``,
``ImageEnhance`` and ``math``. Variables persist between the cells of one episode.

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

import cv2  # noqa: E402
import guard  # noqa: E402
import numpy as np  # noqa: E402
import protocol  # noqa: E402
import traced  # noqa: E402
from PIL import Image, ImageEnhance, ImageFilter, ImageOps  # noqa: E402, F401

cv2.setNumThreads(1)
USER_MODULE = "__sandbox__"
MAX_SIDE = 8192  # the visual tools' own output limits (m3gym.tools.visual)
MAX_PIXELS = 4096 * 4096
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


class RemoteError(Exception):
    """A tool call or save the env refused (its message is the env's)."""


def rpc(header: dict[str, Any], arrays: tuple[np.ndarray, ...] = ()) -> tuple[dict, list]:
    """Send a request to the env and wait for its reply."""
    protocol.send(OUT_FD, header, arrays)
    reply, blobs = protocol.recv(IN_FD)
    if not reply.get("ok"):
        raise RemoteError(reply.get("error") or "refused by the env")
    return reply, blobs


class Images:
    """The episode's images as read-only traced arrays (``images[i]``), fetched on first use."""

    def __init__(self) -> None:
        self.cache: dict[int, np.ndarray] = {}
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def __getitem__(self, index: Any) -> np.ndarray:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(self.count))]
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise TypeError("images[...] takes an integer image index")
        i = int(index) + (self.count if index < 0 else 0)
        if not 0 <= i < self.count:
            raise IndexError(f"image {index} does not exist; valid indices are 0..{self.count - 1}")
        if i not in self.cache:
            _, blobs = rpc({"type": "image", "index": i})
            arr = blobs[0]
            arr.setflags(write=False)
            self.cache[i] = arr
        return traced.traced(self.cache[i], traced.Lineage(i, traced.IDENTITY))

    def __iter__(self) -> Any:
        return (self[i] for i in range(self.count))

    def add(self, index: int, array: np.ndarray | None) -> None:
        """Record that the env added image ``index`` (with its pixels, when sent)."""
        self.count = max(self.count, index + 1)
        if array is not None:
            array.setflags(write=False)
            self.cache[index] = array


IMAGES = Images()


def as_uint8(image: Any) -> np.ndarray:
    """Return the pixels of an array or Pillow image, refusing anything but uint8 images."""
    if isinstance(image, Image.Image):
        image = np.asarray(traced.wrap_pil(image, None))
    if not isinstance(image, np.ndarray):
        raise TypeError(f"save() expects a numpy array or a PIL image, got {type(image).__name__}")
    arr = np.asarray(image)
    if arr.dtype == np.bool_:
        arr = arr.astype(np.uint8) * 255
    if arr.dtype != np.uint8:
        raise TypeError(f"save() expects uint8 pixels, got {arr.dtype}; convert with "
                        "np.clip(x, 0, 255).astype(np.uint8)")
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if arr.ndim == 3 and arr.shape[2] == 4:
        arr = arr[:, :, :3]
    if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] == 3)) or min(arr.shape[:2]) < 1:
        raise ValueError(f"save() expects an (H, W) or (H, W, 3) image, got shape {arr.shape}")
    if max(arr.shape[:2]) > MAX_SIDE or arr.shape[0] * arr.shape[1] > MAX_PIXELS:
        raise ValueError(f"save(): a {arr.shape[1]}x{arr.shape[0]} image is too large (at most "
                         f"{MAX_SIDE} pixels a side and {MAX_PIXELS} pixels)")
    return arr


def save(image: Any, label: str | None = None) -> int:
    """Add ``image`` to the episode's images; return its index (an existing one if unchanged)."""
    lin = traced.lineage_of(image)
    arr = as_uint8(image)
    if label is not None and not isinstance(label, str):
        raise TypeError("label must be a string")
    header = {"type": "save", "label": label,
              "lineage": None if lin is None else lin.to_json()}
    reply, _ = rpc(header, (arr,))
    IMAGES.add(int(reply["index"]), np.array(arr))
    return int(reply["index"])


def image_index(image: Any) -> int:
    """Return the state index of an image argument (saving a derived array first)."""
    if isinstance(image, (int, np.integer)) and not isinstance(image, bool):
        return int(image)
    lin = traced.lineage_of(image)
    if lin is not None and lin.affine == traced.IDENTITY and not lin.ops:
        return lin.src
    return save(image)


def make_tool(name: str, params: list[str]) -> Any:
    """Return the function that calls the env's tool ``name`` (positional order ``params``)."""

    def tool(*args: Any, **kwargs: Any) -> Any:
        if len(args) > len(params):
            raise TypeError(f"{name}() takes at most {len(params)} positional arguments "
                            f"({', '.join(params)})")
        call = dict(zip(params, args))
        overlap = set(call) & set(kwargs)
        if overlap:
            raise TypeError(f"{name}() got multiple values for {sorted(overlap)}")
        call.update(kwargs)
        if "image_index" in call:
            call["image_index"] = image_index(call["image_index"])
        call = json.loads(json.dumps(call, default=_json_default))
        reply, blobs = rpc({"type": "call", "name": name, "arguments": call})
        index = reply.get("index")
        if index is None:
            return reply.get("value", reply.get("text"))
        IMAGES.add(int(index), blobs[0] if blobs else None)
        return IMAGES[int(index)]

    tool.__name__ = name
    tool.__doc__ = f"Run the env's {name} tool ({', '.join(params)}); returns the new image."
    return tool


def _json_default(value: Any) -> Any:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, np.ndarray):
        return value.tolist()
    raise TypeError(f"argument of type {type(value).__name__} is not JSON-serializable")


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
    """Return the globals of a new episode's cells."""
    ns: dict[str, Any] = {"__name__": USER_MODULE, "__builtins__": dict(vars(builtins)),
                          "images": IMAGES, "save": save, "np": np, "numpy": np,
                          "cv2": sys.modules["cv2"], "Image": sys.modules["PIL.Image"],
                          "ImageOps": sys.modules["PIL.ImageOps"], "ImageFilter": ImageFilter,
                          "ImageEnhance": ImageEnhance, "math": __import__("math")}
    ns.update({name: make_tool(name, params) for name, params in tools.items()})
    return ns


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
    guard.install(workdir, CONFIG["read_roots"], USER_MODULE)
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
            IMAGES.cache.clear()
            IMAGES.count = 0
            traced.CONVERSIONS.clear()
            clear_workdir(workdir)
            ns = fresh_namespace(tools)
            protocol.send(OUT_FD, {"type": "ready", "pid": os.getpid()})
        elif kind == "run":
            IMAGES.count = max(IMAGES.count, int(msg["num_images"]))
            done = run_cell(str(msg["code"]), ns, int(msg["stdout_limit"]))
            used = resource.getrusage(resource.RUSAGE_SELF)
            protocol.send(OUT_FD, done | {"cpu_s": used.ru_utime + used.ru_stime})
        else:
            return


if __name__ == "__main__":
    main()
