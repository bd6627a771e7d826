"""The world's pixels, built once per machine and memory-mapped by every process.

Rendering every logo of a world and its reverse-image-search index takes ~2 s and ~280 MB per
process (the logos alone are 2,283 × 48 KB). :func:`load_logo_store` instead keeps them in a
cache directory — ``$M3GYM_CACHE``, else ``$XDG_CACHE_HOME/m3gym``, else ``~/.cache/m3gym`` —
as plain ``.npy`` files that every process maps read-only, so the operating system holds one
copy in its page cache for all of them.

* **Deterministic, never stale:** the files hold exactly what :func:`render_logo` and
  :func:`build_logo_index` return; the entry's name carries :func:`m3gym.fingerprint.artefact_key`
  of the modules that build it (the renderer's module and this one, with every m3gym module
  they import, directly or not) and of the pixel libraries' builds (NumPy, OpenCV, Pillow,
  FreeType, Raqm, libjpeg, zlib, ...), so a change to any of them builds a new entry instead of
  reading a stale one.
* **Safe under concurrent first builds:** builders serialize on a lock file (``fcntl.flock``
  where available) and each writes into a private temporary directory that is renamed into place
  in one step; a reader only ever sees a complete entry.
* **Never fatal:** ``M3GYM_CACHE=off`` (or an unwritable or damaged cache) falls back to building
  in memory, with the same values.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from pathlib import Path

import numpy as np

from m3gym.fingerprint import artefact_key
from m3gym.web.logos import LogoIndex, logo_descriptors

CACHE_ENV = "M3GYM_CACHE"
"""Environment variable naming the cache directory (``off`` disables the cache)."""

STORE_FILES = ("pixels", "shapes", "offsets", "coarse", "fine", "colour")


def cache_dir() -> Path | None:
    """Return the cache directory, or ``None`` when ``$M3GYM_CACHE`` is ``off``/``0``/empty-ish."""
    value = os.environ.get(CACHE_ENV)
    if value is not None:
        if value.strip().lower() in ("", "0", "off", "false", "none"):
            return None
        return Path(value).expanduser()
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "m3gym"


STORE_BUILDERS: tuple[str, ...] = (__name__, "m3gym.web.logos")
"""Modules that build every store (packing and indexing); the renderer's module is added."""


@lru_cache(maxsize=16)
def code_hash(renderer_module: str = "m3gym.web.logos") -> str:
    """Return the key of the code that builds a store and of the libraries that draw its pixels.

    It is :func:`~m3gym.fingerprint.artefact_key` of :data:`STORE_BUILDERS` and
    ``renderer_module`` (the module of the function that draws the logos).
    """
    return artefact_key((*STORE_BUILDERS, renderer_module))


def entry_name(label: str, specs: Sequence[object],
               renderer_module: str = "m3gym.web.logos") -> str:
    """Return the cache entry (a directory name) of the logos drawn from ``specs``.

    The name holds ``label`` (e.g. ``"0-train"``, for people), the code hash and a hash of the
    specs' ``repr`` (frozen dataclasses), so two worlds share an entry only if their logos are
    drawn from identical specs by identical code with identical libraries.
    """
    h = hashlib.sha256()
    for spec in specs:
        h.update(repr(spec).encode())
        h.update(b"\n")
    return f"world-{label}-{code_hash(renderer_module)}-{h.hexdigest()[:16]}"


@dataclass(frozen=True)
class LogoStore:
    """Every logo of a world (one flat ``uint8`` buffer) and its search index, read-only."""

    pixels: np.ndarray
    shapes: np.ndarray
    offsets: np.ndarray
    index: LogoIndex

    def __len__(self) -> int:
        return len(self.offsets)

    def logo(self, i: int) -> np.ndarray:
        """Return logo ``i`` as a read-only ``uint8`` array (a view of the store)."""
        start = int(self.offsets[i])
        shape = tuple(int(v) for v in self.shapes[i])
        out = self.pixels[start:start + int(np.prod(shape))].reshape(shape).view(np.ndarray)
        out.setflags(write=False)
        return out


def build_store_arrays(logos: Iterable[np.ndarray]) -> dict[str, np.ndarray]:
    """Return the arrays of a store: the logos packed flat, their shapes and offsets, the index.

    ``logos`` may be a generator: each logo is packed and described as it comes, so building
    never holds more than the packed bytes and one logo's work.
    """
    packed = bytearray()
    shapes, offsets, rows = [], [], []
    for logo in logos:
        offsets.append(len(packed))
        shapes.append(logo.shape)
        packed += np.ascontiguousarray(logo, dtype=np.uint8).tobytes()
        rows.append(logo_descriptors(logo))
    coarse, fine, colour = (np.stack([r[k] for r in rows]).astype(np.float32)
                            for k in range(3))
    return {"pixels": np.frombuffer(packed, np.uint8),
            "shapes": np.array(shapes, dtype=np.int64).reshape(len(shapes), -1),
            "offsets": np.array(offsets, dtype=np.int64), "coarse": coarse, "fine": fine,
            "colour": colour}


def store_from_arrays(arrays: dict[str, np.ndarray]) -> LogoStore:
    """Return a :class:`LogoStore` over ``arrays`` (mapped or in memory), all read-only."""
    ro = {}
    for k in STORE_FILES:
        a = arrays[k].view(np.ndarray)
        a.setflags(write=False)
        ro[k] = a
    return LogoStore(ro["pixels"], ro["shapes"], ro["offsets"],
                     LogoIndex(ro["coarse"], ro["fine"], ro["colour"]))


def _map_entry(path: Path, count: int) -> LogoStore:
    arrays = {k: np.load(path / f"{k}.npy", mmap_mode="r", allow_pickle=False)
              for k in STORE_FILES}
    if len(arrays["offsets"]) != count or len(arrays["coarse"]) != count:
        raise ValueError(f"{path} holds {len(arrays['offsets'])} logos, expected {count}")
    return store_from_arrays(arrays)


class _Lock:
    """An exclusive ``flock`` on ``path`` (a no-op where ``fcntl`` does not exist)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._fh = None

    def __enter__(self) -> _Lock:
        try:
            import fcntl
        except ImportError:  # pragma: no cover - not POSIX: atomic rename alone keeps it safe
            return self
        self._fh = open(self.path, "a+b")  # noqa: SIM115 (held until __exit__)
        fcntl.flock(self._fh.fileno(), fcntl.LOCK_EX)
        return self

    def __exit__(self, *exc: object) -> None:
        if self._fh is not None:
            self._fh.close()  # closing releases the lock


def write_entry(root: Path, name: str, arrays: dict[str, np.ndarray]) -> Path:
    """Write ``arrays`` as entry ``name`` under ``root``: into a private directory, then renamed.

    If another process renamed its (identical) entry into place first, ours is discarded.
    """
    final = root / name
    tmp = Path(tempfile.mkdtemp(prefix=f".{name}.", dir=root))
    try:
        for k in STORE_FILES:
            np.save(tmp / f"{k}.npy", arrays[k], allow_pickle=False)
        os.chmod(tmp, 0o755)  # mkdtemp makes it private; the entry is for every process
        try:
            os.rename(tmp, final)
        except OSError:
            if not final.is_dir():
                raise
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return final


def load_logo_store(label: str, specs: Sequence[object],
                    render: Callable[[], Iterable[np.ndarray]]) -> LogoStore:
    """Return the store of the logos drawn from ``specs``: mapped from the cache, built if needed.

    ``render`` returns the logos (one per spec, in order); it runs only when the cache has no
    entry (once per machine) or is disabled or unusable. Its module is part of the entry's key.
    """
    root = cache_dir()
    if root is not None:
        name = entry_name(label, specs, getattr(render, "__module__", None) or "m3gym.web.logos")
        try:
            if not (root / name).is_dir():
                root.mkdir(parents=True, exist_ok=True)
                with _Lock(root / f"{name}.lock"):
                    if not (root / name).is_dir():  # nobody built it while we waited
                        write_entry(root, name, build_store_arrays(render()))
            return _map_entry(root / name, len(specs))
        except (OSError, ValueError) as err:
            warnings.warn(f"m3gym world cache at {root} is unusable ({err}); building the "
                          f"world's logos in memory (set {CACHE_ENV} to another directory or "
                          "'off')", RuntimeWarning, stacklevel=2)
    return store_from_arrays(build_store_arrays(render()))
