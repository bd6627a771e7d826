"""Old import paths of the heuristic agent's modules, kept working with a DeprecationWarning.

Until the agent became the :mod:`m3gym.agents.heuristic` package, its parts were flat modules
(``m3gym.agents.heuristic_plans``, ``heuristic_vision``, ...). Each of those is now a thin module
whose ``__getattr__`` is :func:`moved_names`: the old name is served from the module it moved to
(:func:`m3gym.deprecation.renamed_names` warns and names the new home).
"""

from __future__ import annotations

import importlib
from collections.abc import Callable, Sequence
from typing import Any

from m3gym.deprecation import Renames, renamed_names


def moved_homes(homes: Sequence[str]) -> Renames:
    """Return ``{name: (new dotted name, resolver)}`` for every name the modules ``homes`` hold.

    A name several of them hold is served from the one that defines it (its ``__module__``),
    else from the first that holds it.
    """
    found: dict[str, tuple[str, Any, bool]] = {}
    for home in homes:
        for name, value in vars(importlib.import_module(home)).items():
            if name.startswith("__"):
                continue
            defines = getattr(value, "__module__", None) == home
            if name not in found or (defines and not found[name][2]):
                found[name] = (home, value, defines)
    return {name: (f"{home}.{name}", lambda value=value: value)
            for name, (home, value, _) in found.items()}


MOVED_TO: dict[str, tuple[str, ...]] = {
    "heuristic_plans": ("calls", "reading", "prices", "lookup", "web", "clock", "counting", "grid"),
    "heuristic_vision": ("vision", "dials", "clock", "gauges"),
    "heuristic_dials": ("gauges",),
    "heuristic_documents": ("documents",),
    "heuristic_lookup": ("lookup", "web"),
    "heuristic_table": ("table",),
    "heuristic_text": ("text",),
    "heuristic_view": ("view",),
}
"""Old module (``m3gym.agents.<name>``) -> the modules of the package its names moved to."""


def moved_names(old: str) -> Callable[[str], Any]:
    """Return a module ``__getattr__`` for the old module ``old`` (its dotted name), warning."""
    homes = [f"m3gym.agents.heuristic.{m}" for m in MOVED_TO[old.rsplit(".", 1)[1]]]
    return renamed_names(old, moved_homes(homes))
