"""The logo_lookup family: a small logo cropped, then found by an image search."""

from __future__ import annotations

import numpy as np

from m3gym.tasks.families._lookup_common import reference_crop
from m3gym.tasks.registry import make_task
from tests.family_helpers import world_of


def test_logo_lookup_crop_finds_logo_and_full_image_does_not():
    for seed in range(25):
        task = make_task("logo_lookup", seed)
        world = world_of(task)
        crop = reference_crop(task.images[0], dict(task.reference_calls[0].arguments))
        assert world.image_search(crop, 1)[0].entity == task.metadata["target"]
        full = world.image_search(task.images[0], 1)
        assert full[0].entity != task.metadata["target"]
        twin = world.entity(task.metadata["distractor"])
        assert world.image_search(np.ascontiguousarray(world.logo(twin)), 1)[0].entity != \
            task.metadata["target"]


def test_tilted_logo_is_rotated_upright_before_the_search():
    from m3gym.scoring.checkpoints import UPRIGHT_TOLERANCE_DEG

    for seed in range(8):
        task = make_task("logo_lookup", seed, difficulty=1.0)
        tilt = task.metadata["tilt"]
        assert abs(tilt) > UPRIGHT_TOLERANCE_DEG and task.evidence[0].angle == tilt
        names = [c.name for c in task.reference_calls]
        assert names[:3] == ["crop", "rotate", "image_search"]
        assert task.reference_calls[1].arguments["angle"] == -tilt
        assert any(cp.kind == "rotate_upright" for cp in task.checkpoints)
        easy = make_task("logo_lookup", seed, difficulty=0.0)
        assert easy.metadata["tilt"] == 0.0 and "rotate" not in {c.name for c in
                                                                  easy.reference_calls}
