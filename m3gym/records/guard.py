"""Trust boundaries of records: images stay inside their folder, pixels stay within a budget.

A records file names image paths; an Agentic-MME folder holds task files and images. Those
pixels reach the agent, which may be a remote model, so a path may not lead out of its folder
and an image may not claim more memory than the budget allows:

* :func:`contained` resolves a path (symlinks included, :meth:`pathlib.Path.resolve`) and raises
  :class:`OutsideFolderError` when the result is not inside the resolved folder. Absolute paths,
  ``..`` and symlinked files or folders are all judged by where they lead. ``allow_outside=True``
  (``--allow-outside`` on the command line) is the explicit opt-out.
* :class:`PixelBudget` bounds the pixels of one image and of one record (one episode's input
  images) from the image headers, before anything is decoded; :class:`PixelBudgetError` gives
  the pixels asked and the budget.
* :func:`header_size` reads ``(width, height)`` from the header only; :func:`decode_problem`
  decodes an image fully (``m3gym records check``), so a truncated file is named there;
  :func:`read_image` decodes one as a task is built.

No message here quotes a file's content: they name paths, sizes and error types.
"""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass
from pathlib import Path

import cv2
import numpy as np

DEFAULT_IMAGE_PIXELS: int = 64_000_000
"""Default budget of one record image, in pixels (width x height from its header): 64 Mpx, an
8000x8000 photo or any phone camera's full resolution; 192 MB decoded as RGB."""

DEFAULT_RECORD_PIXELS: int = 128_000_000
"""Default budget of one record's images together (one episode's input), in pixels: 128 Mpx,
384 MB decoded as RGB."""


class OutsideFolderError(ValueError):
    """A path leads outside the folder it must stay in (``allow_outside=True`` opts out).

    ``written`` is the path as written, ``folder`` the folder it must stay in, ``target`` where
    it resolves to (``None`` when it cannot be resolved).
    """

    def __init__(self, written: str, folder: Path, target: Path | None = None,
                 what: str = "image", option: str = "allow_outside=True / --allow-outside"
                 ) -> None:
        self.written = written
        self.folder = folder
        self.target = target
        where = (f"resolves to {target}" if target is not None else "cannot be resolved")
        super().__init__(f"{what} {written!r} leaves the folder {folder} ({where}); files "
                         f"outside it are refused unless you opt out ({option})")


class PixelBudgetError(ValueError):
    """An image (or a record's images) asks more pixels than the budget: ``pixels`` > ``budget``."""

    def __init__(self, what: str, pixels: int, budget: int, knob: str) -> None:
        self.pixels = int(pixels)
        self.budget = int(budget)
        super().__init__(f"{what} asks {self.pixels} pixels (from the image header), over the "
                         f"budget of {self.budget} pixels ({knob}); nothing was decoded")


@dataclass(frozen=True)
class PixelBudget:
    """Pixel budget of record images, checked from their headers before decoding.

    ``image``: the most pixels one image may have; ``record``: the most all images of one
    record (one episode's input) may have together.
    """

    image: int = DEFAULT_IMAGE_PIXELS
    record: int = DEFAULT_RECORD_PIXELS

    def __post_init__(self) -> None:
        for name in ("image", "record"):
            value = getattr(self, name)
            if not isinstance(value, int) or isinstance(value, bool) or value < 1:
                raise ValueError(f"pixel budget {name} must be a positive integer, got {value!r}")

    def check_image(self, shown: str, size: tuple[int, int]) -> None:
        """Raise :class:`PixelBudgetError` when an image of ``size`` (w, h) is over budget."""
        pixels = int(size[0]) * int(size[1])
        if pixels > self.image:
            raise PixelBudgetError(f"image {shown!r} ({size[0]}x{size[1]})", pixels, self.image,
                                   "max_image_pixels")

    def check_record(self, pixels: int) -> None:
        """Raise :class:`PixelBudgetError` when a record's images hold over ``record`` pixels."""
        if pixels > self.record:
            raise PixelBudgetError("the record's images together", pixels, self.record,
                                   "max_record_pixels")


DEFAULT_BUDGET = PixelBudget()
"""The default :class:`PixelBudget`: :data:`DEFAULT_IMAGE_PIXELS`, :data:`DEFAULT_RECORD_PIXELS`."""


def pixel_budget(max_image_pixels: int | None = None,
                 max_record_pixels: int | None = None) -> PixelBudget:
    """Return the :class:`PixelBudget` of the two knobs (``None``: the default of each)."""
    return PixelBudget(DEFAULT_IMAGE_PIXELS if max_image_pixels is None else max_image_pixels,
                       DEFAULT_RECORD_PIXELS if max_record_pixels is None else max_record_pixels)


def resolved_inside(path: Path, folder: Path) -> tuple[bool, Path | None]:
    """Return ``(inside, target)``: where ``path`` resolves and whether that is in ``folder``.

    Both are resolved (symlinks followed, ``..`` folded); a path that cannot be resolved (a
    symlink loop) is outside, with target ``None``.
    """
    try:
        root = Path(folder).resolve()
        target = Path(path).resolve()
    except (OSError, RuntimeError):  # a symlink loop
        return False, None
    return target == root or target.is_relative_to(root), target


def contained(path: Path, folder: Path, written: str | None = None, what: str = "image") -> Path:
    """Return ``path`` resolved; raise :class:`OutsideFolderError` if it leaves ``folder``."""
    inside, target = resolved_inside(path, folder)
    if not inside or target is None:
        raise OutsideFolderError(str(path) if written is None else written, Path(folder),
                                 target, what)
    return target


_BOMB_PIXELS = re.compile(r"\((\d+) pixels\)")


def header_size(path: Path) -> tuple[int, int]:
    """Return ``(width, height)`` read from the image header only (no pixel is decoded).

    Raises ``ValueError`` naming the path when the header cannot be read, and
    :class:`PixelBudgetError` when the header claims more pixels than Pillow opens at all (its
    decompression-bomb limit).
    """
    from PIL import Image, UnidentifiedImageError

    if not path.is_file():
        raise ValueError(f"missing image {str(path)!r}")
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)  # the budget decides
            with Image.open(path) as im:
                size = (int(im.size[0]), int(im.size[1]))
    except Image.DecompressionBombError as err:
        found = _BOMB_PIXELS.search(str(err))
        limit = 2 * int(Image.MAX_IMAGE_PIXELS or 0)
        raise PixelBudgetError(f"image {str(path)!r}", int(found.group(1)) if found else limit + 1,
                               limit, "Pillow's decompression-bomb limit") from None
    except (UnidentifiedImageError, OSError, ValueError) as err:
        raise ValueError(f"unreadable image {str(path)!r}: {type(err).__name__}") from None
    if size[0] < 1 or size[1] < 1:
        raise ValueError(f"unreadable image {str(path)!r}: empty")
    return size


def decode_problem(path: Path) -> str | None:
    """Return why ``path``'s pixels cannot be decoded in full (``None``: they can).

    Pillow decodes strictly (a truncated file is an error, never padded) and OpenCV decodes as
    :func:`read_image` does when the task is built. Call it only on an image
    whose header passed the budget.
    """
    from PIL import Image

    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            with Image.open(path) as im:
                im.load()
    except Exception as err:  # noqa: BLE001 - any decoder error means the pixels are bad
        return f"its pixel data cannot be decoded (truncated or corrupt: {type(err).__name__})"
    try:
        read_image(path)
    except Exception:  # noqa: BLE001 - cv2.error or ValueError: the task could not be built
        return "its pixel data cannot be decoded (OpenCV refuses it)"
    return None


def read_image(path: Path) -> np.ndarray:
    """Return the RGB ``uint8`` pixels of ``path`` as stored (EXIF orientation not applied).

    Boxes are in stored-pixel coordinates: the same frame ``PIL.Image.open(path).size`` reports.
    """
    data = np.fromfile(str(path), dtype=np.uint8)
    img = cv2.imdecode(data, cv2.IMREAD_COLOR | cv2.IMREAD_IGNORE_ORIENTATION)
    if img is None:
        raise ValueError(f"cannot decode image {path}")
    return cv2.cvtColor(img, cv2.COLOR_BGR2RGB)
