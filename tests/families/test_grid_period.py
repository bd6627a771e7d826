"""The grid_period family: count the rows and columns of a dot array finer than the view."""

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


def test_the_view_averages_the_dot_array_away_and_the_crop_restores_it():
    """The view's first step is a 3 x 3 block mean and the array lies on its grid: inside the
    framed square the view is flat (no dot, no moiré, no outline of the array), while the
    reference's zoomed crop shows the dots at full contrast."""
    import numpy as np

    from m3gym.audit.tool_necessity import replay_calls
    from m3gym.tasks.families.grid_period import PITCH
    from m3gym.view import block_factor, to_view, view_shape

    for seed in range(8):
        task = make_task("grid_period", seed)
        img = np.asarray(task.images[0])
        h, w = img.shape[:2]
        assert block_factor(h, w, *view_shape(h, w, 768)) == PITCH
        x0, y0, x1, y1 = (int(v) for v in task.evidence[0].box)
        assert x0 % PITCH == 0 and y0 % PITCH == 0
        sx0, sy0, sx1, sy1 = task.metadata["square"]
        blocks = img[sy0:sy1, sx0:sx1].astype(np.float64)  # the noise-free mean of each block
        blocks = blocks.reshape((sy1 - sy0) // 3, 3, (sx1 - sx0) // 3, 3, 3).mean(axis=(1, 3))
        assert blocks.std(axis=(0, 1)).max() < 1.5, seed  # sensor noise alone
        view = to_view(img, 768)
        assert view.shape[1] == 768
        crop = replay_calls(task, task.images).state[1].array
        assert crop.shape[1] >= 4 * (sx1 - sx0)  # zoomed at least 4 times
        assert int(task.metadata["contrast"]) >= 36
