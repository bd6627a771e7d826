"""Old public names still resolve at their old import paths, with a DeprecationWarning."""

from __future__ import annotations

import importlib

import pytest

from m3gym.deprecation import renamed_names
from m3gym.tasks.registry import TRAIN_SEED_LIMIT


def test_renamed_names_warns_and_returns_the_new_object() -> None:
    getattr_ = renamed_names("pkg.mod", {"Old": ("pkg.mod.New", lambda: 42)})
    with pytest.warns(DeprecationWarning, match=r"pkg\.mod\.Old is deprecated; use pkg\.mod\.New"):
        assert getattr_("Old") == 42
    with pytest.raises(AttributeError, match="has no attribute 'Other'"):
        getattr_("Other")


def test_the_training_seed_range_is_the_registry_limit() -> None:
    env = importlib.import_module("m3gym.env")
    with pytest.warns(DeprecationWarning, match="TRAIN_SEED_LIMIT"):
        assert env.TRAIN_SEED_RANGE == (0, TRAIN_SEED_LIMIT)
