"""The family tests mirror the package: one ``tests/families/test_<name>.py`` per family."""

from __future__ import annotations

from pathlib import Path

import pytest

from m3gym.tasks.registry import family_names, get_family

HERE = Path(__file__).resolve().parent
OWN_TESTS: dict[str, str] = {"records": "tests/records/test_family.py"}
"""Suites built from user data files test their family in a file of their own."""


@pytest.mark.parametrize("family", family_names(suite=None))
def test_every_registered_family_has_its_test_file(family: str) -> None:
    suite = getattr(get_family(family), "suite", None)
    if family in OWN_TESTS or suite in OWN_TESTS:
        pytest.skip(f"the {family!r} family is tested in {OWN_TESTS.get(family, suite)}")
    path = HERE / f"test_{family}.py"
    assert path.is_file(), (f"family {family!r} has no test file {path.relative_to(HERE.parents[1])}"
                            ": add one with what is specific to it (its answer, evidence, choices)")
    assert "\ndef test_" in path.read_text(), f"{path.name} holds no test"


def family_class_name(family: str) -> str:
    """Return the class name a family must have: ``chart_value`` → ``ChartValueFamily``."""
    return "".join(part.capitalize() for part in family.split("_")) + "Family"


@pytest.mark.parametrize("family", family_names(suite=None) + family_names(suite="records"))
def test_every_family_class_is_named_for_its_family(family: str) -> None:
    """One pattern for every family class (``<Name>Family``), as the docs and examples use."""
    assert get_family(family).__name__ == family_class_name(family)


def test_old_family_class_names_still_import_with_a_warning() -> None:
    from m3gym.tasks.families import chart_value

    with pytest.warns(DeprecationWarning, match="ChartValueFamily"):
        assert chart_value.ChartValue is chart_value.ChartValueFamily
