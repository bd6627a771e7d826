"""What a cell sees of the env: ``images``, ``save`` and the atomic tools as functions.

Every object a cell is given is defined here, so the ``__globals__`` of ``save``, of each tool
function and of the ``images`` methods is this module's dict, which holds only the cell API
itself, ``json``, ``numpy``, Pillow's ``Image``, the tracing helpers and the wire format
(:mod:`protocol`, whose globals hold the two I/O builtins): not ``os``, ``sys``, the guard, the
worker's configuration or its main loop. The descriptors of the channel to the env are plain
numbers here; whatever a cell writes on them is parsed by the env as untrusted input.

The worker calls :func:`connect` once with its channel, then :func:`namespace` per episode.

This module runs inside the worker as a top-level module: it must not import ``m3gym``.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
import protocol
import traced
from PIL import Image

MAX_SIDE = 8192  # the visual tools' own output limits (m3gym.tools.visual)
MAX_PIXELS = 4096 * 4096
USER_MODULE = "__sandbox__"
"""The ``__name__`` of a cell's globals (what the import filter recognises as user code)."""

_channel: list[int] = []  # [in_fd, out_fd], set by connect()


class RemoteError(Exception):
    """A tool call or save the env refused (its message is the env's)."""


def connect(in_fd: int, out_fd: int) -> None:
    """Set the descriptors of the channel to the env (once, before any cell runs)."""
    _channel[:] = [int(in_fd), int(out_fd)]


def rpc(header: dict[str, Any], arrays: tuple[np.ndarray, ...] = ()) -> tuple[dict, list]:
    """Send a request to the env and wait for its reply."""
    in_fd, out_fd = _channel
    protocol.send(out_fd, header, arrays)
    reply, blobs = protocol.recv(in_fd)
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

    def clear(self) -> None:
        """Forget the episode's images (a new episode)."""
        self.cache.clear()
        self.count = 0


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


def namespace(tools: dict[str, list[str]], modules: dict[str, Any],
              builtins: dict[str, Any]) -> dict[str, Any]:
    """Return the globals of a new episode's cells.

    ``modules`` are the (traced) libraries a cell gets by name (``np``, ``cv2``, ``Image``, ...);
    ``builtins`` its ``__builtins__`` (a copy, with the filtered ``__import__``).
    """
    ns: dict[str, Any] = {"__name__": USER_MODULE, "__builtins__": dict(builtins),
                          "images": IMAGES, "save": save, **modules}
    ns.update({name: make_tool(name, params) for name, params in tools.items()})
    return ns
