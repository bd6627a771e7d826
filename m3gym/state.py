"""The indexed image state: append-only, read-only images with provenance.

Image ``0..k-1`` are a task's input images; every successful visual call appends one image. Each
image records where it came from (parent index, op, arguments), the composed 2x3 affine map from
its *root* input image's pixel coordinates to its own pixel coordinates, and the photometric ops
applied since that root. Scoring uses the affine map to locate the evidence in any artifact.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from m3gym import geometry
from m3gym.deprecation import renamed_names
from m3gym.geometry import IDENTITY_AFFINE, compose_affine


def readonly(array: np.ndarray) -> np.ndarray:
    """Return ``array`` flagged read-only (a view when the input is writeable, never a copy)."""
    if array.flags.writeable:
        array = array.view()
        array.setflags(write=False)
    return array


@dataclass(frozen=True)
class Provenance:
    """Where an image came from.

    Attributes:
        parent: index of the image the op was applied to (``None`` for input images).
        op: tool name that produced the image (``"input"`` or ``"download"`` for roots).
        args: the validated arguments of that call (JSON-serializable).
        root: index of the root image (an input or downloaded image) this one derives from.
        affine: 2x3 map from the root image's pixel coordinates to this image's pixel coordinates.
        photometric: names of the non-geometric ops applied since the root, in order.
        call_id: id of the call that produced the image (``None`` for task inputs).
    """

    parent: int | None
    op: str
    args: Mapping[str, Any]
    root: int
    affine: np.ndarray
    photometric: tuple[str, ...] = ()
    call_id: str | None = None


@dataclass(frozen=True)
class ImageEntry:
    """One image of the state: its index, read-only pixels, provenance and optional label."""

    index: int
    array: np.ndarray
    provenance: Provenance
    label: str | None = None

    @property
    def height(self) -> int:
        """Image height in pixels."""
        return int(self.array.shape[0])

    @property
    def width(self) -> int:
        """Image width in pixels."""
        return int(self.array.shape[1])

    def lineage(self, state: ImageState) -> list[int]:
        """Return the indices from the root to this image, inclusive."""
        chain = [self.index]
        parent = self.provenance.parent
        while parent is not None:
            chain.append(parent)
            parent = state[parent].provenance.parent
        return chain[::-1]


class ImageBudgetError(RuntimeError):
    """Raised by :meth:`ImageState.append` when the image or memory budget would be exceeded."""


@dataclass
class ImageState:
    """Append-only list of read-only images with provenance, bounded in count and bytes.

    Arrays are ``uint8`` ``(H, W, 3)`` RGB or ``(H, W)`` grayscale. Memory is counted on the bytes
    each image owns (a view that shares its parent's buffer still counts its own ``nbytes``, an
    upper bound that keeps the accounting simple and conservative).
    """

    max_images: int = 64
    max_bytes: int = 512 * 1024 * 1024
    _entries: list[ImageEntry] = field(default_factory=list)
    _bytes: int = 0

    def __len__(self) -> int:
        return len(self._entries)

    def __getitem__(self, index: int) -> ImageEntry:
        return self._entries[index]

    def __iter__(self) -> Iterator[ImageEntry]:
        return iter(self._entries)

    @property
    def bytes_used(self) -> int:
        """Bytes held by all images of the state."""
        return self._bytes

    def check_room(self, nbytes: int) -> str | None:
        """Return why an image of ``nbytes`` cannot be added, or ``None`` if it fits."""
        if len(self._entries) >= self.max_images:
            return f"image budget exhausted: the episode already holds {self.max_images} images"
        if self._bytes + nbytes > self.max_bytes:
            return (
                f"memory budget exhausted: adding {nbytes} bytes would exceed "
                f"{self.max_bytes} bytes for this episode"
            )
        return None

    def add_root(
        self, array: np.ndarray, op: str = "input", args: Mapping[str, Any] | None = None,
        call_id: str | None = None, label: str | None = None,
    ) -> ImageEntry:
        """Append a root image (a task input or a downloaded image) and return its entry."""
        index = len(self._entries)
        prov = Provenance(
            parent=None, op=op, args=dict(args or {}), root=index, affine=IDENTITY_AFFINE,
            call_id=call_id,
        )
        return self._append(array, prov, label)

    def add_derived(
        self, parent: int, array: np.ndarray, op: str, args: Mapping[str, Any],
        step_affine: np.ndarray | None, call_id: str | None = None, label: str | None = None,
    ) -> ImageEntry:
        """Append an image made by ``op`` from ``parent``.

        ``step_affine`` maps the parent's pixel coordinates to the new image's; ``None`` marks a
        photometric op (identity geometry, recorded in ``photometric``).
        """
        pprov = self._entries[parent].provenance
        if step_affine is None:
            affine = pprov.affine
            photometric = (*pprov.photometric, op)
        else:
            affine = compose_affine(step_affine, pprov.affine)
            photometric = pprov.photometric
        prov = Provenance(
            parent=parent, op=op, args=dict(args), root=pprov.root, affine=affine,
            photometric=photometric, call_id=call_id,
        )
        return self._append(array, prov, label)

    def _append(self, array: np.ndarray, prov: Provenance, label: str | None) -> ImageEntry:
        if array.dtype != np.uint8 or array.ndim not in (2, 3):
            raise TypeError(
                f"images must be uint8 (H, W[, 3]) arrays, got {array.dtype} {array.shape}")
        problem = self.check_room(array.nbytes)
        if problem is not None:
            raise ImageBudgetError(problem)
        entry = ImageEntry(index=len(self._entries), array=readonly(array), provenance=prov,
                           label=label)
        self._entries.append(entry)
        self._bytes += array.nbytes
        return entry

    def descends_from(self, index: int, ancestor: int) -> bool:
        """Return whether image ``index`` is ``ancestor`` or derives from it."""
        current: int | None = index
        while current is not None:
            if current == ancestor:
                return True
            current = self._entries[current].provenance.parent
        return False


# the affine helpers moved to m3gym.geometry; their old names here still work, with a warning
__getattr__ = renamed_names(__name__, {
    name: (f"m3gym.geometry.{name}", lambda name=name: getattr(geometry, name))
    for name in ("apply_affine", "homogeneous")})
