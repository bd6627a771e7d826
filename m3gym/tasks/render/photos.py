"""Photographs that scenes are drawn into: a user's folder or the bundled CC0 set, decoded once.

* :func:`bundled_photos` is the set shipped in the package (``m3gym/data/photos/photos.json``:
  nine public-domain / CC0 photographs, licence per image in ``LICENSES.md``), checked against
  their recorded sha256 so a damaged install fails loudly.
* :func:`photo_folder` is a user's folder of JPEG/PNG photos (their captures, COCO, ...), listed
  in sorted name order (so a seed picks the same photo on every machine). An empty folder, a file
  that cannot be read and a photo smaller than :data:`MIN_PHOTO_SIDE` are refused together, one
  line per file, in one :class:`PhotoSourceError`. A file that resolves outside the folder (a
  symlink to a photo elsewhere) is refused the same way unless ``allow_outside=True``: the
  photos' pixels reach the agent, and data files stay inside their folder.
* :meth:`PhotoSource.pixels` decodes a photo once per process (RGB ``uint8``, read-only, longest
  side capped at :data:`MAX_PHOTO_SIDE`). Decoded photos are kept as ``.npy`` files in the cache
  directory of the offline world (:func:`m3gym.web.store.cache_dir`), keyed on the file's sha256,
  this module's code and the pixel libraries' builds, and memory-mapped, so every process shares
  one copy through the page cache; ``M3GYM_CACHE=off`` decodes in memory instead.
"""

from __future__ import annotations

import hashlib
import json
import os
import tempfile
import warnings
from dataclasses import dataclass, field
from functools import lru_cache
from importlib import resources
from pathlib import Path

import cv2
import numpy as np

from m3gym.cache import LRUCache

PHOTO_SUFFIXES: tuple[str, ...] = (".jpg", ".jpeg", ".png")
"""File suffixes a photo folder is read for (case-insensitive); other files are ignored."""

MIN_PHOTO_SIDE: int = 256
"""Shortest side, in pixels, a photo needs to serve as a backdrop (smaller ones are refused)."""

MAX_PHOTO_SIDE: int = 2048
"""Longest side a photo is decoded to (larger ones are shrunk once, with area averaging)."""

BUNDLED_INDEX = "data/photos/photos.json"
"""The bundled set's index inside the package."""


class PhotoSourceError(ValueError):
    """A photo folder or file that cannot serve as backdrops; the message lists every problem."""


@dataclass(frozen=True)
class PhotoInfo:
    """One photo of a source: its name (file name), path, size and, when known, licence."""

    name: str
    path: Path
    width: int
    height: int
    sha256: str | None = None
    licence: str | None = None


@dataclass(frozen=True)
class PhotoSource:
    """An ordered set of photographs that scenes are drawn into.

    ``label`` is ``"bundled"`` or ``"folder"``; tasks record it with the chosen photo's name and
    sha256 (never the folder's path, which is the user's business).
    """

    label: str
    photos: tuple[PhotoInfo, ...]
    _decoded: LRUCache = field(default_factory=lambda: LRUCache(64), repr=False, compare=False)

    def __len__(self) -> int:
        return len(self.photos)

    def sha256(self, index: int) -> str:
        """Return the sha256 of photo ``index``'s file (recorded, or read once)."""
        info = self.photos[index]
        return info.sha256 or file_sha256(info.path)

    def pixels(self, index: int) -> np.ndarray:
        """Return photo ``index`` as a read-only RGB ``uint8`` array (decoded once per process)."""
        got = self._decoded.lookup(index)
        if got is None:
            got = decoded_photo(self.photos[index].path, self.sha256(index))
            self._decoded[index] = got
        return got


@lru_cache(maxsize=4096)
def _file_sha256(path: str, size: int, mtime_ns: int) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def file_sha256(path: Path) -> str:
    """Return the sha256 of a file (cached per process on its path, size and mtime)."""
    st = os.stat(path)
    return _file_sha256(str(path), st.st_size, st.st_mtime_ns)


def _decode(path: Path) -> np.ndarray:
    """Return the photo at ``path`` as RGB ``uint8``, longest side at most MAX_PHOTO_SIDE."""
    data = np.fromfile(str(path), np.uint8)
    img = cv2.imdecode(data, cv2.IMREAD_COLOR) if data.size else None
    if img is None:
        raise PhotoSourceError(f"{path}: not a readable JPEG or PNG image")
    h, w = img.shape[:2]
    scale = MAX_PHOTO_SIDE / max(h, w)
    if scale < 1.0:
        img = cv2.resize(img, (max(1, round(w * scale)), max(1, round(h * scale))),
                         interpolation=cv2.INTER_AREA)
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)


@lru_cache(maxsize=1)
def _code_key() -> str:
    from m3gym.fingerprint import artefact_key

    return artefact_key((__name__,))


def decoded_photo(path: Path, sha256: str) -> np.ndarray:
    """Return the decoded photo (read-only): memory-mapped from the cache, decoded if needed.

    The cache entry's name holds the file's sha256 and the key of this module's code and the
    pixel libraries, so a changed photo, decoder or library never reads a stale entry. An
    unusable cache falls back to decoding in memory, with the same values.
    """
    from m3gym.web.store import cache_dir

    root = cache_dir()
    if root is not None:
        target = root / "photos" / f"{sha256[:32]}-{_code_key()}.npy"
        try:
            if not target.is_file():
                target.parent.mkdir(parents=True, exist_ok=True)
                fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
                try:
                    with os.fdopen(fd, "wb") as fh:
                        np.save(fh, _decode(path), allow_pickle=False)
                    os.chmod(tmp, 0o644)
                    os.replace(tmp, target)  # atomic: readers see a whole entry or none
                finally:
                    if os.path.exists(tmp):
                        os.unlink(tmp)
            arr = np.load(target, mmap_mode="r", allow_pickle=False).view(np.ndarray)
            if arr.ndim == 3 and arr.shape[2] == 3 and arr.dtype == np.uint8:
                arr.setflags(write=False)
                return arr
            raise OSError(f"damaged entry {target}")
        except OSError as err:
            if isinstance(err, PhotoSourceError):
                raise
            warnings.warn(f"m3gym photo cache at {root} is unusable ({err}); decoding photos "
                          "in memory", RuntimeWarning, stacklevel=2)
    arr = _decode(path)
    arr.setflags(write=False)
    return arr


def _header_size(path: Path) -> tuple[int, int] | str:
    """Return ``(width, height)`` from the file's header, or why it cannot be read."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(path) as im:
            if im.format not in ("JPEG", "PNG", "MPO"):
                return f"a {im.format} file, not JPEG or PNG"
            w, h = im.size
            try:  # EXIF rotation swaps the sides the decoder will return
                if im.getexif().get(0x0112) in (5, 6, 7, 8):
                    w, h = h, w
            except Exception:  # noqa: BLE001 - a broken EXIF block is not our concern here
                pass
            return int(w), int(h)
    except (OSError, UnidentifiedImageError, ValueError, Image.DecompressionBombError) as err:
        # a header claiming a gigantic image is refused like an unreadable one, not raised
        return f"not a readable image ({type(err).__name__}: {err})"


def _scan(paths: list[Path], where: str, min_side: int) -> tuple[PhotoInfo, ...]:
    problems, infos = [], []
    for path in paths:
        size = _header_size(path)
        if isinstance(size, str):
            problems.append(f"{path.name}: {size}")
        elif min(size) < min_side:
            problems.append(f"{path.name}: {size[0]}x{size[1]} is too small for a scene "
                            f"(the shorter side needs >= {min_side} px)")
        else:
            infos.append(PhotoInfo(path.name, path, size[0], size[1]))
    if problems:
        shown = "\n  ".join(problems[:20])
        more = f"\n  ... and {len(problems) - 20} more" if len(problems) > 20 else ""
        raise PhotoSourceError(f"{len(problems)} of {len(paths)} photos in {where} cannot be "
                               f"used as scene backdrops (remove or fix them):\n  {shown}{more}")
    return tuple(infos)


@lru_cache(maxsize=16)
def _folder_source(folder: str, listing: tuple[tuple[str, int, int], ...],
                   min_side: int) -> PhotoSource:
    paths = [Path(folder) / name for name, _, _ in listing]
    return PhotoSource("folder", _scan(paths, folder, min_side))


def _outside(path: Path, root: Path) -> str | None:
    """Return why ``path`` leads outside folder ``root`` (resolved, symlinks followed), or None."""
    try:
        target = path.resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return "a link that cannot be resolved"
    if target == root or target.is_relative_to(root):
        return None
    return f"a link that leaves the folder (resolves to {target})"


def photo_folder(folder: str | os.PathLike[str], min_side: int = MIN_PHOTO_SIDE,
                 allow_outside: bool = False) -> PhotoSource:
    """Return the photos of ``folder`` (its JPEG/PNG files, sorted by name) as a source.

    Raises :class:`PhotoSourceError` for a missing folder, one without photos, any photo that
    cannot be read or is smaller than ``min_side``, or (unless ``allow_outside``, warned about)
    any file that resolves outside the folder, a symlink to a photo elsewhere: every such file
    is named. The result is cached per process on the folder's listing (names, sizes,
    modification times).
    """
    path = Path(folder).expanduser()
    if not path.is_dir():
        raise PhotoSourceError(f"backgrounds={str(folder)!r} is not a folder")
    root = path.resolve()
    try:
        entries = sorted(p for p in path.iterdir()
                         if p.is_file() and p.suffix.lower() in PHOTO_SUFFIXES)
    except OSError as err:
        raise PhotoSourceError(f"backgrounds folder {path} cannot be listed: {err}") from None
    if not entries:
        raise PhotoSourceError(f"backgrounds folder {path} holds no JPEG or PNG photos "
                               f"(looked for {', '.join(PHOTO_SUFFIXES)})")
    outside = [(p.name, why) for p in entries if (why := _outside(p, root)) is not None]
    if outside and not allow_outside:
        shown = "\n  ".join(f"{name}: {why}" for name, why in outside[:20])
        more = f"\n  ... and {len(outside) - 20} more" if len(outside) > 20 else ""
        raise PhotoSourceError(f"{len(outside)} of {len(entries)} photos in {root} lie outside "
                               "it (move them into the folder, or opt out with "
                               f"allow_outside=True):\n  {shown}{more}")
    if outside:
        warnings.warn(f"backgrounds folder {root}: allow_outside=True lets {len(outside)} "
                      "photo(s) outside it in", UserWarning, stacklevel=2)
    listing = tuple((p.name, (st := p.stat()).st_size, st.st_mtime_ns) for p in entries)
    return _folder_source(str(root), listing, int(min_side))


@lru_cache(maxsize=1)
def bundled_photos() -> PhotoSource:
    """Return the bundled public-domain / CC0 photos (checked against their recorded sha256)."""
    data = resources.files("m3gym").joinpath("data")
    index = json.loads(data.joinpath("photos/photos.json").read_text())
    infos = []
    for row in index["photos"]:
        path = Path(str(data.joinpath(row["path"])))
        got = file_sha256(path)
        if got != row["sha256"]:
            raise PhotoSourceError(f"bundled photo {row['path']} is damaged: sha256 {got[:16]}, "
                                   f"expected {row['sha256'][:16]} (reinstall m3gym)")
        size = _header_size(path)
        if isinstance(size, str):  # pragma: no cover - the sha256 check catches it first
            raise PhotoSourceError(f"bundled photo {row['path']}: {size}")
        infos.append(PhotoInfo(row["name"], path, size[0], size[1], row["sha256"],
                               row["licence"]))
    return PhotoSource("bundled", tuple(infos))


SCENES: tuple[str, ...] = ("flat", "photo")
"""Scene kinds: procedural surfaces only, or drawn into photographs."""


def photo_source(scenes: str | None = None,
                 backgrounds: str | os.PathLike[str] | None = None,
                 allow_outside: bool = False) -> PhotoSource | None:
    """Return the photos ``scenes``/``backgrounds`` ask for, or ``None`` for flat scenes.

    ``backgrounds`` (a folder) implies photo scenes; ``scenes="photo"`` alone uses the bundled
    set; ``scenes="flat"`` with a folder is a contradiction and raises ``ValueError``.
    ``allow_outside`` lets the folder's symlinks to photos elsewhere in (:func:`photo_folder`).
    """
    if scenes is not None and scenes not in SCENES:
        raise ValueError(f"scenes must be one of {', '.join(SCENES)}, got {scenes!r}")
    if backgrounds is not None and str(backgrounds) != "":
        if scenes == "flat":
            raise ValueError("scenes='flat' contradicts backgrounds=FOLDER (photo scenes); "
                             "drop one of them")
        return photo_folder(backgrounds, allow_outside=allow_outside)
    return bundled_photos() if scenes == "photo" else None
