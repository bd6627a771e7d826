"""The lookup scenes' old module (m3gym.tasks.render.lookup_scenes) serves every part's names."""

from __future__ import annotations

import importlib
from types import ModuleType

import pytest

from m3gym.tasks.render import lookup_scenes as S

PARTS = ("scene_primitives", "faint_labels", "scene_dressing", "product_package", "logo_hosts",
         "facade")


@pytest.mark.parametrize("part", PARTS)
def test_every_public_name_of_each_part_is_served(part: str) -> None:
    module = importlib.import_module(f"m3gym.tasks.render.{part}")
    own = [n for n, v in vars(module).items()
           if not n.startswith("_") and not isinstance(v, ModuleType)
           and getattr(v, "__module__", module.__name__) == module.__name__
           and (callable(v) or n.isupper())]
    assert own
    for name in own:
        assert getattr(S, name) is getattr(module, name), name
    assert set(S.__all__) >= set(own)
