"""The grid_period family: count the objects of a washed-out grid photo after a threshold."""

from __future__ import annotations

import os

import pytest

from m3gym.agents import OracleAgent
from m3gym.env import M3BenchEnv
from m3gym.scoring.checkpoints import evaluate_checkpoints, measure_evidence
from m3gym.tasks.registry import make_task
from tests.family_helpers import assert_checkpoint_density


def _input_entry(task, index):
    from m3gym.state import ImageState

    state = ImageState(8, 1 << 30)
    for img in task.images:
        state.add_root(img)
    return state[index]


ORACLE_SEEDS = int(os.environ.get("M3GYM_ORACLE_SEEDS", "200"))
"""Seeds of the slow oracle sweep (check_family checks the oracle on a few seeds by default)."""


def _run_oracle(env: M3BenchEnv, seed: int):
    obs, info = env.reset(seed=seed, options={"task_seed": seed})
    task = env.task
    agent = OracleAgent(task)
    agent.reset(obs, info)
    done, calls = False, []
    while not done:
        obs, _, term, trunc, info = env.step(agent.act(obs, info))
        calls += info["calls"]
        done = term or trunc
    return task, term, info, calls


@pytest.mark.slow
def test_oracle_solves_every_seed_and_the_input_never_shows_the_evidence():
    """check_family's oracle and legibility checks, swept over ORACLE_SEEDS seeds."""
    env = M3BenchEnv(family="grid_period")
    for seed in range(ORACLE_SEEDS):
        task, term, info, calls = _run_oracle(env, seed)
        assert term and info["answer_correct"], seed
        assert all(c["ok"] for c in calls), (seed, [c for c in calls if not c["ok"]])
        assert len(calls) == len(task.reference_calls)
        report = evaluate_checkpoints(task, env.trace, env.state)
        assert report.S == 1.0 and report.V == 1.0, (seed, report.to_dict())
        for ev in task.evidence:  # not legible in the full input image at view size 768
            assert not measure_evidence(_input_entry(task, ev.image), ev).passed, (seed, ev.id)


def test_level_choices_and_checkpoint_density():
    """What check_family leaves to the family: level 3, at least four choices, one checkpoint
    per reference call and per evidence."""
    for seed in range(30):
        task = make_task("grid_period", seed)
        assert task.level == 3 and task.choices is not None and len(task.choices) >= 4
        assert_checkpoint_density(task)


def test_grid_answer_matches_grid():
    for seed in range(20):
        task = make_task("grid_period", seed)
        r, c = task.metadata["rows"], task.metadata["cols"]
        assert task.answer.value in (f"{r}x{c}", str(r * c))


def test_grid_photo_is_washed_out_and_the_threshold_splits_objects_from_their_surround():
    """The whole photo (bench, light box, sky included) spans few levels; after the reference's
    autocontrast and threshold nearly every object pixel and nearly every pixel of the ring
    around the objects fall on opposite sides, for each of the three scenes."""
    import cv2
    import numpy as np

    from m3gym.tasks import render as R

    seen = set()
    for seed in range(9):
        task = make_task("grid_period", seed, difficulty=0.5)
        seen.add(task.metadata["scene"])
        img = np.asarray(task.images[0])
        gray = R.to_gray(img)
        lo, hi = np.percentile(gray, [0.5, 99.5])
        assert hi - lo < 28, (seed, lo, hi)
        ref = task.reference[0][0].arguments["cutoff"]
        stretched = R.to_gray(R.autocontrast_pil(img, ref))
        binary = stretched > task.reference[1][0].arguments["value"]
        ev = task.evidence[0]
        x0, y0, x1, y1 = (int(v) for v in ev.box)
        ink = ev.mask.astype(np.uint8)
        reach = max(2, int(ev.glyph_height * 0.15))
        ring = (cv2.dilate(ink, np.ones((2 * reach + 1,) * 2, np.uint8))
                & (1 - cv2.dilate(ink, np.ones((5, 5), np.uint8)))).astype(bool)
        box = binary[y0:y1, x0:x1]
        assert box[ev.mask].mean() < 0.1 and box[ring].mean() > 0.9, seed
    assert seen == {"well_plate", "dot_slide", "facade"}
