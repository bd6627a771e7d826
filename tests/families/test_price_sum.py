"""The price_sum family: two price tags read in one parallel step of crops, then added."""

from __future__ import annotations

import os

import pytest

from m3gym.scoring.answer import answer_is_correct
from m3gym.scoring.checkpoints import evaluate_checkpoints
from m3gym.state import ImageState
from m3gym.tasks.families import _scene_common as c2
from m3gym.tasks.registry import make_task
from m3gym.tools.base import ToolContext
from m3gym.tools.registry import ToolRegistry
from m3gym.tools.visual import VISUAL_TOOLS
from m3gym.trace import Trace
from tests.family_helpers import replay

ORACLE_SEEDS = int(os.environ.get("M3GYM_ORACLE_SEEDS", "200"))
"""Seeds of the slow oracle sweep (check_family checks the oracle on a few seeds by default)."""

REGISTRY = ToolRegistry(VISUAL_TOOLS)


@pytest.mark.slow
def test_oracle_solves_every_seed() -> None:
    """check_family's oracle and choice checks, swept over ORACLE_SEEDS seeds."""
    for seed in range(ORACLE_SEEDS):
        task = make_task("price_sum", seed)
        state, trace = replay(task)
        failed = [(c.call_id, c.error) for c in trace.calls if not c.ok]
        assert not failed, (seed, failed)
        report = evaluate_checkpoints(task, trace, state)
        assert report.S == 1.0 and report.V == 1.0, (
            seed, [(r.checkpoint_id, r.reason) for r in report.results if not r.passed])
        assert answer_is_correct(task.answer.value, task.answer)
        for variant in task.answer.variants:
            assert answer_is_correct(variant, task.answer)
        assert task.choices is not None and task.answer.value in task.choices
        assert len(set(task.choices)) == len(task.choices)
        wrong = [c for c in task.choices if c != task.answer.value]
        assert not any(answer_is_correct(c, task.answer) for c in wrong), (seed, task.choices)


def test_one_crop_over_both_tags_passes_one_s_checkpoint() -> None:
    """A single crop holding both pieces of evidence is one call: one S and one v_tool only."""
    tried = 0
    for seed in range(20):
        task = make_task("price_sum", seed)
        state = ImageState()
        for img in task.images:
            state.add_root(img)
        a, b = task.evidence
        h, w = task.images[0].shape[:2]
        box = c2.box_union(a.box, b.box)
        bbox, _ = c2.crop_bbox(box, w, h)
        if (bbox[2] - bbox[0]) * (bbox[3] - bbox[1]) > 0.5 * 1000 * 1000:
            continue  # a union crop of over half the image magnifies nothing: no S at all
        tried += 1
        ctx = ToolContext(state=state, visible_images=1)
        rec = REGISTRY.execute(ctx, "crop", {"image_index": 0, "bbox_2d": bbox}, 0, "big")
        assert rec.ok, rec.error
        report = evaluate_checkpoints(task, Trace(steps=[[rec]]), state)
        assert sum(r.passed for r in report.results if r.kind == "crop_covers") == 1
        # one S checkpoint only; one v_tool at most, and only where a tag is legible in it
        assert report.S == 0.5 and report.V_tool == (0.5 if report.V_true > 0 else 0.0)
        assert "one call satisfies at most one S checkpoint" in " ".join(
            r.reason for r in report.results if not r.passed)
    assert tried >= 4
