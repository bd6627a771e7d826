"""Tests of the classic-RL discrete wrapper: spaces, masks, determinism, vector envs."""

from __future__ import annotations

from dataclasses import replace

import gymnasium as gym
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import m3gym  # noqa: F401  (registers the base ids)
from m3gym.wrappers import (
    DEFAULT_TOOLS,
    REGION_NAMES,
    DiscreteToolWrapper,
    action_table,
    discrete_env_ids,
    make_discrete_env,
)
from m3gym.wrappers.discrete import letterbox, region_box, render_choices

POOL = {"task_pool": 3, "cache_size": 3}


def masked_segments(env: gym.Env) -> list[np.ndarray]:
    """Return the valid values of each action dimension under the current mask."""
    mask = env.get_wrapper_attr("action_masks")()
    offsets = np.concatenate([[0], np.cumsum(env.action_space.nvec)])
    return [np.flatnonzero(mask[offsets[i]:offsets[i + 1]]) for i in range(len(offsets) - 1)]


def test_discrete_ids_registered() -> None:
    assert discrete_env_ids()
    for env_id in discrete_env_ids():
        assert env_id in gym.registry


def test_action_table_rows() -> None:
    rows = action_table()
    assert [r["dimension"] for r in rows[:5]] == ["tool", "source", "region", "param", "choice"]
    assert [r["size"] for r in rows[:5]] == [len(DEFAULT_TOOLS), 3, 14, 6, 8]
    assert rows[5]["dimension"] == "param[answer]" and rows[5]["size"] == 0


def test_region_boxes() -> None:
    assert len(REGION_NAMES) == 14
    assert region_box(0) == ([0.0, 0.0, 1000.0, 1000.0], 1.0)
    assert region_box(4) == ([500.0, 500.0, 1000.0, 1000.0], 0.5)
    box, frac = region_box(13)
    assert frac == pytest.approx(1 / 3) and box[2] == 1000.0 and box[0] == pytest.approx(2000 / 3)
    with pytest.raises(ValueError):
        region_box(14)


def test_letterbox_and_choice_panel_shapes() -> None:
    img = np.full((200, 100), 7, np.uint8)
    out = letterbox(img, 48)
    assert out.shape == (48, 48, 3) and out.dtype == np.uint8
    assert out[24, 0, 0] == 0 and out[24, 24, 0] == 7  # black bars left/right
    panel = render_choices(["AB-12", "CD-34"], 48, 8)
    assert panel.shape == (48, 48, 1) and panel[:12].max() > 128 and panel[24:].max() == 0


@pytest.mark.parametrize("env_id", discrete_env_ids())
def test_check_env_sb3_and_gymnasium(env_id: str) -> None:
    from gymnasium.utils.env_checker import check_env as gym_check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gym.make(env_id, **POOL)
    sb3_check_env(env, warn=True)
    gym_check_env(gym.make(env_id, **POOL).unwrapped, skip_render_check=True)


def test_obs_in_space_and_mask_layout() -> None:
    env = gym.make("M3Bench-L1-Discrete", **POOL)
    obs, info = env.reset(seed=0)
    assert env.observation_space.contains(obs)
    mask = info["action_mask"]
    assert mask.dtype == bool and mask.shape == (int(env.action_space.nvec.sum()),)
    segs = masked_segments(env)
    assert list(segs[1]) == [0, 1]  # no "previous" before the first tool call
    assert list(segs[4]) == list(range(len(info["choices"])))
    assert obs["image"].shape == (96, 96, 3) and obs["choices"].shape == (96, 96, 1)


def test_last_step_must_answer() -> None:
    env = make_discrete_env(level=1, max_steps=2, **POOL)
    env.reset(seed=1)
    _, _, term, trunc, _ = env.step([DEFAULT_TOOLS.index("invert"), 0, 0, 0, 0])
    assert not (term or trunc)
    assert list(masked_segments(env)[0]) == [0]  # only answer
    _, _, term, _, info = env.step([0, 0, 0, 0, 0])
    assert term and "answer_correct" in info


def test_answer_choice_maps_to_task_choice() -> None:
    env = make_discrete_env(level=1, **POOL)
    _, info = env.reset(seed=2)
    task = env.unwrapped.task
    k = list(task.choices).index(task.answer.value)
    _, reward, term, _, info = env.step([0, 0, 0, 0, k])
    assert term and info["answer_correct"] is True and reward > 0


def test_refuses_tasks_without_choices() -> None:
    env = make_discrete_env(level=1, **POOL)
    env.reset(seed=0)
    bare = replace(env.unwrapped.task, choices=None)
    with pytest.raises(ValueError, match="tiny_text|rotated_text|faint_text"):
        env.reset(seed=0, options={"task": bare})


def test_bad_configs_raise() -> None:
    base = m3gym.M3BenchEnv(level=1)
    for kwargs in ({"tools": ("crop", "answer")}, {"tools": ("answer", "web_search")},
                   {"zoom": "x"}, {"obs_size": 16}, {"task_pool": 0}):
        with pytest.raises(ValueError):
            DiscreteToolWrapper(base, **kwargs)


def rollout(env: gym.Env, seed: int, actions: list[list[int]]) -> list[bytes]:
    obs, _ = env.reset(seed=seed)
    out = [b"".join(v.tobytes() for v in obs.values())]
    for a in actions:
        obs, r, term, trunc, _ = env.step(a)
        out.append(b"".join(v.tobytes() for v in obs.values()) + np.float64(r).tobytes())
        if term or trunc:
            break
    return out


def test_deterministic_with_seed() -> None:
    actions = [[1, 0, 6, 0, 0], [2, 0, 0, 1, 0], [0, 0, 0, 0, 1]]
    a = rollout(make_discrete_env(level=1, zoom="view"), 5, actions)
    b = rollout(make_discrete_env(level=1, zoom="view"), 5, actions)
    assert a == b


def test_sequential_pool_cycles_and_heldout_offset() -> None:
    env = make_discrete_env(level=1, task_pool=2, pool_offset=10**9, pool_order="sequential")
    ids = []
    for i in range(4):
        env.reset(seed=0 if i == 0 else None)
        ids.append(env.unwrapped.task.task_id)
    assert ids[0] == ids[2] and ids[1] == ids[3] and ids[0] != ids[1]
    assert all(int(t.split("/")[1]) >= 10**9 for t in ids)


@settings(max_examples=16, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(seed=st.integers(0, 2), draws=st.lists(st.integers(0, 10**6), min_size=5, max_size=30),
       zoom=st.sampled_from(["source", "view"]), suite=st.sampled_from(["m3bench", "classic"]))
def test_masked_valid_actions_never_fail(seed: int, draws: list[int], zoom: str,
                                         suite: str) -> None:
    env = make_discrete_env(level=1, suite=suite, zoom=zoom, max_steps=6,
                            tools=(*DEFAULT_TOOLS, "blur", "edge_detect"), **POOL)
    env.reset(seed=seed)
    it = iter(draws)
    done = False
    while not done:
        action = []
        for seg in masked_segments(env):
            action.append(int(seg[next(it, 0) % len(seg)]))
        _, _, term, trunc, info = env.step(action)
        assert all(c["ok"] for c in info["calls"]), info["calls"]
        assert not info["parse_errors"]
        done = term or trunc
    assert term  # masks force an answer on the last step, so no truncation


def test_vector_envs() -> None:
    from stable_baselines3.common.vec_env import DummyVecEnv, SubprocVecEnv

    def thunk() -> gym.Env:
        # "module:id" imports the registering module first (needed in fresh subprocesses)
        return gym.make("m3gym.wrappers:M3Bench-L1-Discrete", **POOL)

    for cls in (DummyVecEnv, SubprocVecEnv):
        venv = cls([thunk, thunk], **({"start_method": "fork"} if cls is SubprocVecEnv else {}))
        venv.seed(3)
        obs = venv.reset()
        assert obs["image"].shape == (2, 96, 96, 3)
        masks = np.stack(venv.env_method("action_masks"))
        assert masks.shape == (2, int(venv.action_space.nvec.sum()))
        obs, rew, done, _ = venv.step(np.zeros((2, 5), np.int64))
        assert done.all() and rew.shape == (2,)
        venv.close()
    vec = gym.make_vec("M3Bench-L1-Discrete", num_envs=2, vectorization_mode="sync", **POOL)
    obs, info = vec.reset(seed=4)
    assert obs["features"].shape[0] == 2 and info["action_mask"].shape[0] == 2
    vec.step(np.zeros((2, 5), np.int64))
    vec.close()


def test_encode_choices_one_hot_exact() -> None:
    from m3gym.wrappers.discrete import CHOICE_ALPHABET, CHOICE_CHARS, encode_choices

    flat = encode_choices(["ab-1", "Z?é"], 3)
    assert flat.shape == (3 * CHOICE_CHARS * len(CHOICE_ALPHABET),) and flat.dtype == np.float32
    code = flat.reshape(3, CHOICE_CHARS, len(CHOICE_ALPHABET))
    assert code[0].sum() == 4 and code[1].sum() == 3 and code[2].sum() == 0
    assert [CHOICE_ALPHABET[k] for k in code[0, :4].argmax(1)] == ["A", "B", "-", "1"]
    assert [CHOICE_ALPHABET[k] for k in code[1, :3].argmax(1)] == ["Z", "?", "?"]  # é unknown
    assert encode_choices(["X" * 40], 1).sum() == CHOICE_CHARS  # cut at CHOICE_CHARS


def test_chars_choice_observation_passes_checks_and_matches_task() -> None:
    from gymnasium.utils.env_checker import check_env as gym_check_env
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    from m3gym.wrappers.discrete import encode_choices

    env = gym.make("M3Bench-L1-Discrete", choices_obs="chars", **POOL)
    sb3_check_env(env, warn=True)
    gym_check_env(gym.make("M3Bench-L1-Discrete", choices_obs="chars", **POOL).unwrapped,
                  skip_render_check=True)
    obs, _ = env.reset(seed=1)
    task = env.get_wrapper_attr("env").unwrapped.task
    assert np.array_equal(obs["choices"], encode_choices(task.choices, 8))


def test_answer_at_end_fixed_horizon_and_single_valued_idle_dimensions() -> None:
    env = make_discrete_env(level=1, suite="classic", max_steps=3, answer_at_end=True,
                            choices_obs="none", **POOL)
    obs, info = env.reset(seed=0)
    seg = masked_segments(env)
    assert 0 not in seg[0] and len(seg[0]) > 1  # a tool step: no answer
    assert list(seg[4]) == [0]  # the choice cannot matter
    assert len(seg[2]) == 14 and len(seg[3]) == 6
    env.step([1, 0, 0, 0, 0])
    env.step([2, 0, 0, 0, 0])
    seg = masked_segments(env)  # last step: answer only, and only the choice matters
    assert list(seg[0]) == [0] and [list(s) for s in seg[1:4]] == [[0], [0], [0]]
    assert len(seg[4]) == 8
    *_, term, trunc, info = env.step([0, 0, 0, 0, 5])
    assert term and info["calls"] == [] and env.env.unwrapped.trace.answer == "5"
    # without answer_at_end the answer stays open on tool steps, with every choice
    free = make_discrete_env(level=1, suite="classic", max_steps=3, **POOL)
    free.reset(seed=0)
    seg = masked_segments(free)
    assert 0 in seg[0] and len(seg[4]) == 8


def test_feature_layout_is_the_levels_whatever_families_are_drawn() -> None:
    full = gym.make("M3Bench-Classic-Discrete", **POOL)
    one = gym.make("M3Bench-Classic-Discrete", family_weights={"glyph_zoom": 1.0}, **POOL)
    assert full.observation_space == one.observation_space
    obs, _ = one.reset(seed=0)
    assert one.get_wrapper_attr("families") == ["glyph_faint", "glyph_rotate", "glyph_zoom"]
    assert list(obs["features"][:3]) == [0.0, 0.0, 1.0]


def test_pooled_wrapper_sizes_the_input_measure_cache_to_its_pool():
    from m3gym.wrappers import CLASSIC_DISCRETE_KWARGS, make_discrete_env
    from m3gym.wrappers.discrete import INPUT_MEASURES_PER_TASK

    pooled = make_discrete_env(**{**CLASSIC_DISCRETE_KWARGS, "task_pool": 500,
                                  "cache_size": 500})
    assert pooled.env.unwrapped._input_measures.maxsize == INPUT_MEASURES_PER_TASK * 500
    plain = make_discrete_env(**CLASSIC_DISCRETE_KWARGS)
    assert plain.env.unwrapped._input_measures.maxsize == 256
