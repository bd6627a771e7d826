"""The wire format between the env and a sandbox worker: JSON headers plus raw array bytes.

A frame is a 4-byte big-endian header length, a UTF-8 JSON object, then the raw bytes of the
arrays the header lists under ``"_arrays"`` (``[{"dtype", "shape"}, ...]``). Nothing is ever
unpickled: the worker runs untrusted code, so whatever it sends is parsed as plain JSON and
``uint8`` bytes only, and bounded in size.

This module is imported by the worker as a top-level module (it must not import ``m3gym``); a
cell can reach it through the cell API, so its globals hold the two I/O builtins, not ``os``.
"""

from __future__ import annotations

import json
import struct
from os import readv, write
from typing import Any

import numpy as np

MAX_HEADER_BYTES = 4 * 1024 * 1024
"""Largest JSON header accepted (stdout and code travel in headers)."""

MAX_ARRAY_BYTES = 64 * 1024 * 1024
"""Largest array accepted in one frame."""

MAX_ARRAYS = 4
"""Most arrays one frame may carry."""

ALLOWED_DTYPES = ("uint8",)
"""Array dtypes that may cross the boundary."""


class ProtocolError(RuntimeError):
    """A frame that is malformed, too large, or cut short (the peer died)."""


def encode(header: dict[str, Any], arrays: tuple[np.ndarray, ...] = ()) -> list[bytes]:
    """Return the byte chunks of one frame (header + arrays)."""
    meta = []
    chunks: list[bytes] = []
    for arr in arrays:
        arr = np.ascontiguousarray(arr)
        meta.append({"dtype": str(arr.dtype), "shape": list(arr.shape)})
        chunks.append(arr.tobytes())
    body = json.dumps({**header, "_arrays": meta}, separators=(",", ":")).encode()
    return [struct.pack(">I", len(body)), body, *chunks]


def send(fd: int, header: dict[str, Any], arrays: tuple[np.ndarray, ...] = ()) -> None:
    """Write one frame to ``fd`` (blocking, complete)."""
    for chunk in encode(header, arrays):
        view = memoryview(chunk)
        while view:
            n = write(fd, view)
            view = view[n:]


def read_exact(fd: int, n: int) -> bytes:
    """Read exactly ``n`` bytes from ``fd`` or raise :class:`ProtocolError` on end of file."""
    buf = bytearray(n)
    view = memoryview(buf)
    got = 0
    while got < n:
        k = readv(fd, [view[got:]])
        if k == 0:
            raise ProtocolError("the peer closed the channel")
        got += k
    return bytes(buf)


def recv(fd: int) -> tuple[dict[str, Any], list[np.ndarray]]:
    """Read one frame; validate its header and arrays; never unpickles."""
    (length,) = struct.unpack(">I", read_exact(fd, 4))
    if length > MAX_HEADER_BYTES:
        raise ProtocolError(f"header of {length} bytes exceeds {MAX_HEADER_BYTES}")
    try:
        header = json.loads(read_exact(fd, length).decode())
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ProtocolError(f"malformed header: {exc}") from None
    if not isinstance(header, dict):
        raise ProtocolError("header is not a JSON object")
    meta = header.pop("_arrays", [])
    if not isinstance(meta, list) or len(meta) > MAX_ARRAYS:
        raise ProtocolError("bad array list in header")
    arrays = []
    for m in meta:
        if not (isinstance(m, dict) and m.get("dtype") in ALLOWED_DTYPES
                and isinstance(m.get("shape"), list) and 1 <= len(m["shape"]) <= 3
                and all(isinstance(s, int) and 0 < s <= 1 << 16 for s in m["shape"])):
            raise ProtocolError(f"bad array description {m!r}")
        nbytes = int(np.prod(m["shape"]))
        if nbytes > MAX_ARRAY_BYTES:
            raise ProtocolError(f"array of {nbytes} bytes exceeds {MAX_ARRAY_BYTES}")
        data = read_exact(fd, nbytes)
        arrays.append(np.frombuffer(data, dtype=np.uint8).reshape(m["shape"]))
    return header, arrays
