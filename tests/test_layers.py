"""The package's layers point one way: no import cycles, no import of a higher layer.

Every ``import`` inside ``m3gym`` counts, lazy ones (inside functions) included; only imports
under ``if TYPE_CHECKING:`` are left out (they never run). A unit is a top-level module or
subpackage (``m3gym.tasks`` with its families and renderers is one unit: its registry discovers
the families lazily). A new module must be placed in :data:`LAYERS` (docs/architecture.md draws
them). Inside a unit, modules import one another without cycles too (lazy imports included).
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "m3gym"

LAYERS: tuple[tuple[str, ...], ...] = (
    # 0: data types and helpers every layer shares
    ("versions", "spec", "pixels", "geometry", "codec", "cache", "urls", "config_errors",
     "fingerprint", "parsing", "state", "view", "trace", "extras", "deprecation", "typeface"),
    # 1: the tools, the offline corpus, the action/observation spaces
    ("tools", "web", "spaces"),
    # 2: scoring, code-mode sandbox, agents (policies see only observations)
    ("scoring", "sandbox", "agents"),
    # 3: the reward built from scoring
    ("reward",),
    # 4: tasks (spec builders, families, renderers) and user records turned into tasks
    ("tasks", "records"),
    # 5: what chooses tasks and names envs
    ("curriculum", "registration", "stats"),
    # 6: the environment
    ("env", "env_frame", "render_frame", "vector", "records_env"),
    # 7: what runs envs: evaluation, integrations, wrappers, audits, servers
    ("eval", "integrations", "wrappers", "rollout", "distributed", "audit", "mcp", "testing",
     "verifiers", "openenv"),
    # 8: entry points (the command line of a unit counts as one)
    ("cli", "cli_export", "__init__", "records.cli", "records.amme_cli"),
)
"""The layers, lowest first. A unit may import its own layer (without cycles) or lower ones."""

LAYER_OF: dict[str, int] = {unit: i for i, units in enumerate(LAYERS) for unit in units}


def module_name(path: Path) -> str:
    """Return the dotted module name of a file under the package."""
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def unit_of(module: str) -> str:
    """Return the unit of a module: ``m3gym.tasks.render.text`` → ``tasks``; the root → ``__init__``.

    A dotted unit listed in :data:`LAYERS` (``records.cli``) names a module of its own.
    """
    parts = module.split(".")
    if len(parts) > 2 and ".".join(parts[1:3]) in LAYER_OF:
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else "__init__"


def _type_checking_lines(tree: ast.AST) -> set[int]:
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.body:
                lines.update(range(child.lineno, (child.end_lineno or child.lineno) + 1))
    return lines


def imported_modules(path: Path) -> list[tuple[str, int]]:
    """Return the ``m3gym`` modules a file imports (at run time) with their line numbers."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    skip = _type_checking_lines(tree)
    here = module_name(path)
    out = []
    for node in ast.walk(tree):
        if getattr(node, "lineno", None) in skip:
            continue
        if isinstance(node, ast.Import):
            out += [(a.name, node.lineno) for a in node.names if a.name.split(".")[0] == "m3gym"]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative import
                pkg = here.split(".")[: len(here.split(".")) - node.level + (path.name ==
                                                                            "__init__.py")]
                base = ".".join([*pkg, base] if base else pkg)
            if base.split(".")[0] != "m3gym":
                continue
            for alias in node.names:  # from m3gym.x import y: y is a module or a name of m3gym.x
                sub = f"{base}.{alias.name}"
                out.append((sub if is_module(sub) else base, node.lineno))
    return list(dict.fromkeys(out))


def is_module(dotted: str) -> bool:
    """Return whether ``dotted`` (``m3gym.a.b``) names a module or package of the package."""
    path = PACKAGE.parent.joinpath(*dotted.split("."))
    return path.is_dir() or path.with_suffix(".py").exists()


def unit_edges() -> dict[str, dict[str, list[str]]]:
    """Return ``{unit: {imported unit: ["file:line", ...]}}`` over the whole package."""
    edges: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(PACKAGE.rglob("*.py")):
        src = unit_of(module_name(path))
        for module, line in imported_modules(path):
            dst = unit_of(module)
            if dst != src:
                edges[src][dst].append(f"{path.relative_to(PACKAGE.parent)}:{line}")
    return edges


def test_every_unit_has_a_layer() -> None:
    units = {unit_of(module_name(p)) for p in PACKAGE.rglob("*.py")}
    missing = sorted(units - set(LAYER_OF))
    assert not missing, f"place these modules in a layer of tests/test_layers.py: {missing}"


def test_no_import_points_up_a_layer() -> None:
    edges = unit_edges()
    upward = [f"{src} (layer {LAYER_OF[src]}) imports {dst} (layer {LAYER_OF[dst]}) at "
              f"{', '.join(where)}"
              for src, targets in sorted(edges.items()) for dst, where in sorted(targets.items())
              if src in LAYER_OF and dst in LAYER_OF and LAYER_OF[dst] > LAYER_OF[src]]
    assert not upward, "imports that point up the layers:\n" + "\n".join(upward)


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Return the strongly connected components with more than one node (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[list[str]] = []
    counter = [0]

    def visit(node: str) -> None:
        index[node] = low[node] = counter[0]
        counter[0] += 1
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph.get(node, ())):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            comp = []
            while True:
                top = stack.pop()
                on_stack.discard(top)
                comp.append(top)
                if top == node:
                    break
            if len(comp) > 1:
                found.append(sorted(comp))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_no_import_cycles_between_units() -> None:
    edges = unit_edges()
    graph = {src: set(targets) for src, targets in edges.items()}
    cycles = strongly_connected(graph)
    detail = [f"{c}: " + "; ".join(f"{a}->{b} at {edges[a][b][0]}" for a in c for b in c
                                    if b in edges.get(a, {}))
              for c in cycles]
    assert not cycles, "import cycles:\n" + "\n".join(detail)


def module_edges() -> dict[str, dict[str, list[str]]]:
    """Return ``{module: {imported module: ["file:line", ...]}}`` over the whole package.

    A package's ``__init__`` importing its own submodules (the facade that re-exports them) is
    left out: Python runs the ``__init__`` first whichever submodule is asked for.
    """
    edges: dict[str, dict[str, list[str]]] = defaultdict(lambda: defaultdict(list))
    for path in sorted(PACKAGE.rglob("*.py")):
        src = module_name(path)
        facade = path.name == "__init__.py"
        for module, line in imported_modules(path):
            if module != src and not (facade and module.startswith(src + ".")):
                edges[src][module].append(f"{path.relative_to(PACKAGE.parent)}:{line}")
    return edges


def test_no_import_cycles_between_modules() -> None:
    """A lazy import that closes a circle still makes the two modules one (e.g. a drawing module
    calling back into the verifier that imports it): pass the callable in, or move the shared
    part down."""
    edges = module_edges()
    cycles = strongly_connected({src: set(targets) for src, targets in edges.items()})
    detail = [f"{c}: " + "; ".join(f"{a}->{b} at {edges[a][b][0]}" for a in c for b in c
                                    if b in edges.get(a, {}))
              for c in cycles]
    assert not cycles, "import cycles between modules:\n" + "\n".join(detail)


def test_no_module_imports_the_package_root() -> None:
    """``from m3gym import X`` below the entry points would run every layer's import."""
    offenders = [f"{path.relative_to(PACKAGE.parent)}:{line}"
                 for path in sorted(PACKAGE.rglob("*.py"))
                 if unit_of(module_name(path)) not in LAYERS[-1]
                 for module, line in imported_modules(path) if module == "m3gym"]
    assert not offenders, offenders


@pytest.mark.parametrize("graph, expected", [
    ({"a": {"b"}, "b": {"c"}, "c": set()}, []),
    ({"a": {"b"}, "b": {"a"}}, [["a", "b"]]),
    ({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}, [["a", "b", "c"]]),
])
def test_cycle_finder_finds_cycles(graph, expected) -> None:
    assert strongly_connected(graph) == expected


def test_the_checker_sees_lazy_imports_and_skips_type_checking(tmp_path) -> None:
    src = ("from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from m3gym.env import X\n"
           "def f():\n    from m3gym.eval import runner, EvalConfig\n")
    path = PACKAGE / "_layers_probe.py"
    path.write_text(src)
    try:
        assert imported_modules(path) == [("m3gym.eval.runner", 5), ("m3gym.eval", 5)]
    finally:
        path.unlink()
