"""The code_lookup family: a tiny tag code read after a crop, then looked up."""

from __future__ import annotations

from m3gym.tasks.families.code_lookup import code_pairs
from m3gym.tasks.registry import make_task
from m3gym.web.world import build_world


def test_code_lookup_has_near_miss_products():
    world = build_world(0, "train")
    for seed in range(40):
        task = make_task("code_lookup", seed)
        code = task.metadata["search_query"]
        near = world.entity(task.metadata["distractor"]).attributes["code"]
        assert near != code and len(near) == len(code)
        assert sum(a != b for a, b in zip(code, near)) <= 2
    assert len(code_pairs(0, "train")) > 50


def test_hard_code_lookup_draws_look_alike_tags_elsewhere():
    world = build_world(0, "train")
    for seed in range(12):
        task = make_task("code_lookup", seed, difficulty=1.0)
        decoys = task.metadata["decoy_codes"]
        assert decoys and task.metadata["search_query"] not in decoys
        assert decoys[0] == world.entity(task.metadata["distractor"]).attributes["code"]
        assert not make_task("code_lookup", seed, difficulty=0.0).metadata["decoy_codes"]
