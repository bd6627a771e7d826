"""The oldest-dependencies constraints file pins exactly the lower bounds of the core deps."""

from __future__ import annotations

from pathlib import Path

import pytest

tomllib = pytest.importorskip("tomllib", reason="tomllib needs Python 3.11")
packaging = pytest.importorskip("packaging.requirements", reason="needs packaging")

from packaging.requirements import Requirement  # noqa: E402
from packaging.utils import canonicalize_name  # noqa: E402
from packaging.version import Version  # noqa: E402

ROOT = Path(__file__).resolve().parents[1]


def core_requirements() -> dict[str, Requirement]:
    """Return pyproject.toml's core dependencies by canonical name."""
    data = tomllib.loads((ROOT / "pyproject.toml").read_text())
    reqs = [Requirement(r) for r in data["project"]["dependencies"]]
    return {canonicalize_name(r.name): r for r in reqs}


def _oldest() -> dict[str, Version]:
    pins = {}
    for line in (ROOT / "constraints" / "oldest.txt").read_text().splitlines():
        line = line.split("#")[0].strip()
        if line:
            name, _, version = line.partition("==")
            pins[canonicalize_name(name)] = Version(version)
    return pins


def test_every_core_dependency_is_pinned_at_its_lower_bound():
    core, pins = core_requirements(), _oldest()
    assert set(core) == set(pins)
    for name, req in core.items():
        lower = [Version(s.version) for s in req.specifier if s.operator == ">="]
        assert len(lower) == 1, f"{name} needs one >= bound"
        pin = pins[name]
        assert pin in req.specifier, f"{name}=={pin} is outside {req.specifier}"
        n = len(lower[0].release)
        assert pin.release[:n] == lower[0].release, f"{name}=={pin} is not its bound {lower[0]}"


def test_pixel_libraries_have_an_upper_bound():
    core = core_requirements()
    for name in ("numpy", "pillow", "opencv-python-headless", "faker"):
        assert any(s.operator == "<" for s in core[name].specifier), name
