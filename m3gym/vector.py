"""Vector envs with the defaults: ``gym.make_vec(id, vectorization_mode="async")`` just works.

Gymnasium's ``AsyncVectorEnv`` defaults to ``shared_memory=True``, which needs a fixed-size buffer
per observation; m3gym's observations hold free text and a variable number of variable-size
images, so Gymnasium's own buffers refuse them (``TypeError``). :class:`ObservationSpace` (the
env's ``spaces.Dict``, unchanged for every other purpose) registers its own shared-memory
transport with Gymnasium's dispatchers instead: each worker writes its observation to a slot file
in a private temporary directory (``/dev/shm`` where it exists, so the bytes stay in memory)
before it answers, and the main process reads the slots when it returns observations, batched by
Gymnasium's own ``concatenate`` exactly as with ``shared_memory=False``. With ``copy=False`` the
batch is a live mapping that reads the newest slots, as Gymnasium's shared arrays do.
"""

from __future__ import annotations

import os
import pickle
import shutil
import tempfile
import weakref
from collections.abc import Iterator, Mapping
from typing import Any

from gymnasium import spaces
from gymnasium.vector.utils import (
    concatenate,
    create_empty_array,
    create_shared_memory,
    read_from_shared_memory,
    write_to_shared_memory,
)


class ObservationSpace(spaces.Dict):
    """The env's observation ``Dict`` space; vector envs share its values through slot files."""


def _slot_root() -> str | None:
    return "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else None


class ObservationSlots:
    """One file per sub-env in a private directory: the transport of :class:`ObservationSpace`.

    Created in the main process (which removes the directory when the slots are collected or at
    exit); workers receive it pickled or forked and only write their own slot.
    """

    def __init__(self, n: int) -> None:
        self.n = int(n)
        self.directory = tempfile.mkdtemp(prefix="m3gym-vec-", dir=_slot_root())
        self._owner = os.getpid()
        self._finalizer = weakref.finalize(self, _remove_if_owner, self.directory, self._owner)

    def __getstate__(self) -> dict[str, Any]:
        return {"n": self.n, "directory": self.directory, "_owner": self._owner}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)

    def path(self, index: int) -> str:
        """Return the slot file of sub-env ``index``."""
        return os.path.join(self.directory, f"slot{index}.pkl")

    def write(self, index: int, value: Any) -> None:
        """Store one observation of sub-env ``index`` (atomic: written aside, then renamed)."""
        tmp = self.path(index) + f".{os.getpid()}.tmp"
        with open(tmp, "wb") as fh:
            pickle.dump(value, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, self.path(index))

    def read(self, index: int) -> Any:
        """Return the newest observation of sub-env ``index``."""
        with open(self.path(index), "rb") as fh:
            return pickle.load(fh)


def _remove_if_owner(directory: str, owner: int) -> None:
    if os.getpid() == owner:
        shutil.rmtree(directory, ignore_errors=True)


class SharedObservations(Mapping):
    """The batched observations of a vector env, read from the slots whenever they are used.

    A ``deepcopy`` (what ``AsyncVectorEnv`` returns with ``copy=True``) is a plain ``dict`` of the
    current batch; indexing reads the newest batch.
    """

    def __init__(self, space: ObservationSpace, slots: ObservationSlots) -> None:
        self._space = space
        self._slots = slots

    def batch(self) -> dict[str, Any]:
        """Return the current observations of all sub-envs, batched like ``shared_memory=False``."""
        items = [self._slots.read(i) for i in range(self._slots.n)]
        out = create_empty_array(self._space, n=self._slots.n)
        return dict(concatenate(self._space, items, out))

    def __getitem__(self, key: str) -> Any:
        return self.batch()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._space.spaces)

    def __len__(self) -> int:
        return len(self._space.spaces)

    def __deepcopy__(self, memo: dict[int, Any]) -> dict[str, Any]:
        return self.batch()

    def __repr__(self) -> str:
        return f"SharedObservations({self._slots.n} envs)"


@create_shared_memory.register(ObservationSpace)
def _create_slots(space: ObservationSpace, n: int = 1, ctx: Any = None) -> ObservationSlots:
    return ObservationSlots(n)


@read_from_shared_memory.register(ObservationSpace)
def _read_slots(space: ObservationSpace, shared_memory: ObservationSlots,
                n: int = 1) -> SharedObservations:
    return SharedObservations(space, shared_memory)


@write_to_shared_memory.register(ObservationSpace)
def _write_slot(space: ObservationSpace, index: int, value: Any,
                shared_memory: ObservationSlots) -> None:
    shared_memory.write(index, value)
