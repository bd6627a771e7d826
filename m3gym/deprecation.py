"""Old public names kept at their old import path: a module ``__getattr__`` that warns.

A module whose public name moved or was renamed keeps serving the old name::

    __getattr__ = renamed_names(__name__, {"OldName": ("NewName", lambda: NewName)})

The old name resolves to the new object with a :class:`DeprecationWarning` that names the new
spelling, so code written against the old name runs unchanged while it is updated.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable, Mapping
from typing import Any

Renames = Mapping[str, tuple[str, Callable[[], Any]]]
"""``{old name: (new dotted name shown in the warning, function returning the new object)}``."""


def renamed_names(module: str, renames: Renames) -> Callable[[str], Any]:
    """Return a module ``__getattr__`` for ``module`` that serves each old name of ``renames``.

    The returned function warns (``DeprecationWarning``, pointing at the caller) and returns the
    new object; any other name raises ``AttributeError`` as a module without it would.
    """

    def __getattr__(name: str) -> Any:
        if name not in renames:
            raise AttributeError(f"module {module!r} has no attribute {name!r}")
        new_name, resolve = renames[name]
        warnings.warn(f"{module}.{name} is deprecated; use {new_name}", DeprecationWarning,
                      stacklevel=2)
        return resolve()

    return __getattr__


def renamed_attribute(owner: str, old: str, new: str) -> property:
    """Return a read-only property serving attribute ``new`` under its old name ``old``.

    Reading ``obj.<old>`` warns (``DeprecationWarning`` naming ``<owner>.<new>``) and returns
    ``obj.<new>``; a class keeps a renamed dataclass field readable this way.
    """

    def getter(self: Any) -> Any:
        warnings.warn(f"{owner}.{old} is deprecated; use {owner}.{new}", DeprecationWarning,
                      stacklevel=2)
        return getattr(self, new)

    return property(getter, doc=f"Deprecated: the old name of :attr:`{new}`.")
