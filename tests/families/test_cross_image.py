"""The cross_image family: a sign in one image names the venue a search finds in another."""

from __future__ import annotations

from m3gym.tasks.registry import make_task
from m3gym.web.world import build_world


def test_cross_image_sign_names_the_venue():
    for seed in range(20):
        task = make_task("cross_image", seed)
        world = build_world(**task.metadata["world"])
        venue = world.entity(task.metadata["entity"])
        sign = task.evidence_by_id("sign").text
        assert sign.startswith(task.metadata["district"]) and sign.endswith(venue.name)
        assert task.evidence_by_id("district").text == task.metadata["district"]
