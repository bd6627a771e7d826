"""The heuristic agent's plan table and the import order of its modules (m3gym.agents.heuristic)."""

from __future__ import annotations

import ast
import importlib
from pathlib import Path

import pytest

from m3gym.agents.heuristic.table import PLAN_TABLE, rule_for
from m3gym.tasks.registry import family_names, make_task

PACKAGE = Path(__file__).parents[3] / "m3gym" / "agents" / "heuristic"

LAYERS: tuple[tuple[str, ...], ...] = (
    ("view",),
    ("text", "calls", "vision"),
    ("dials", "web"),
    ("reading",),
    ("prices", "documents", "lookup", "clock", "gauges", "counting", "grid"),
    ("teams",),
    ("table",),
    ("agent",),
)
"""The package's modules, lowest first: a module imports only modules of earlier layers."""


@pytest.mark.parametrize("family", sorted(set(family_names(None, "m3bench"))
                                          | set(family_names(None, "classic"))))
def test_plan_table_tells_the_plan_from_the_question(family: str) -> None:
    planned = {r.family for r in PLAN_TABLE}
    for seed in range(0, 200, 13):
        got = rule_for(make_task(family, seed).question).family
        assert got == (family if family in planned else "generic"), (family, seed)


def _imports(module: str) -> set[str]:
    """Return the modules of the heuristic package that ``module`` imports."""
    names: set[str] = set()
    for node in ast.walk(ast.parse((PACKAGE / f"{module}.py").read_text())):
        if isinstance(node, ast.ImportFrom) and node.module:
            names.add(node.module)
            names.update(f"{node.module}.{a.name}" for a in node.names)
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    prefix = "m3gym.agents.heuristic."
    return {n[len(prefix):].split(".")[0] for n in names if n.startswith(prefix)}


def test_every_module_has_a_layer() -> None:
    placed = {m for layer in LAYERS for m in layer}
    found = {p.stem for p in PACKAGE.glob("*.py") if not p.stem.startswith("_")}
    assert found == placed


def test_heuristic_modules_import_in_one_direction() -> None:
    for i, layer in enumerate(LAYERS):
        later = {m for upper in LAYERS[i:] for m in upper}
        for module in layer:
            assert not _imports(module) & later, (module, _imports(module) & later)


@pytest.mark.parametrize(("old", "name", "new"), [
    ("heuristic_plans", "grid_shape", "grid"),
    ("heuristic_plans", "plan_clock_reading", "clock"),
    ("heuristic_plans", "crop_call", "calls"),
    ("heuristic_vision", "clock_hands", "clock"),
    ("heuristic_vision", "tick_centre", "dials"),
    ("heuristic_vision", "needle_angle", "gauges"),
    ("heuristic_lookup", "page_body", "web"),
    ("heuristic_lookup", "kit_colour_in", "lookup"),
    ("heuristic_dials", "gauge_labels", "gauges"),
    ("heuristic_table", "PLAN_TABLE", "table"),
    ("heuristic_text", "question_of", "text"),
    ("heuristic_view", "EpisodeView", "view"),
    ("heuristic_documents", "plan_receipt_total", "documents"),
])
def test_old_module_paths_still_import_with_a_warning(old: str, name: str, new: str) -> None:
    module = importlib.import_module(f"m3gym.agents.{old}")
    with pytest.warns(DeprecationWarning, match=f"m3gym.agents.heuristic.{new}.{name}"):
        value = getattr(module, name)
    assert value is getattr(importlib.import_module(f"m3gym.agents.heuristic.{new}"), name)


def test_old_module_paths_know_only_moved_names() -> None:
    module = importlib.import_module("m3gym.agents.heuristic_plans")
    with pytest.raises(AttributeError, match="no_such_name"):
        module.no_such_name  # noqa: B018
