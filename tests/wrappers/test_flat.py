"""Tests of the flat action wrapper: one ``Discrete`` action per distinct tool call."""

from __future__ import annotations

import gymnasium as gym
import numpy as np
import pytest

import m3gym  # noqa: F401  (registers the base ids)
from m3gym.wrappers import discrete_env_ids
from m3gym.wrappers.flat import FlatToolActions, flat_action_table

CLASSIC_TOOLS = ["answer", "crop", "rotate", "flip", "autocontrast"]
POOL = {"task_pool": 3, "cache_size": 3}


def test_table_counts_by_hand() -> None:
    table = flat_action_table(tuple(CLASSIC_TOOLS), 8)
    # answer 8 choices, crop 3 sources x 14 regions, rotate 3 x 3 angles, flip 3 x 3
    # directions, autocontrast 3 x 6 cutoffs
    assert len(table) == 8 + 42 + 9 + 9 + 18 == 86
    assert np.bincount(table[:, 0]).tolist() == [8, 42, 9, 9, 18]
    assert len({tuple(r) for r in table}) == len(table)  # every call listed once
    assert table[:8, 4].tolist() == list(range(8)) and not table[:8, 1:4].any()
    assert (table[table[:, 0] != 1, 2] == 0).all()  # only crops use a region
    assert (table[table[:, 0] != 0, 4] == 0).all()  # only answers use a choice
    # a tool without options gets one row per source
    assert len(flat_action_table(("answer", "equalize"), 2)) == 2 + 3


def flat_and_twin(**kwargs: object) -> tuple[gym.Env, gym.Env]:
    """Return a flat env and its MultiDiscrete twin, both reset with seed 0."""
    flat = gym.make("M3Bench-Classic-Discrete", flat_actions=True, tools=CLASSIC_TOOLS,
                    obs_size=48, **POOL, **kwargs)
    twin = gym.make("M3Bench-Classic-Discrete", tools=CLASSIC_TOOLS, obs_size=48, **POOL,
                    **kwargs)
    flat.reset(seed=0)
    twin.reset(seed=0)
    return flat, twin


def components_valid(twin: gym.Env, table: np.ndarray) -> np.ndarray:
    """Return, per flat action, whether all its components are valid in the twin's mask."""
    mask = twin.get_wrapper_attr("action_masks")()
    offsets = np.concatenate([[0], np.cumsum(twin.action_space.nvec)])[:-1]
    return np.array([all(mask[offsets[d] + row[d]] for d in range(5)) for row in table])


@pytest.mark.parametrize("first", [9, 30, 55, 70])  # a crop, a crop, rotate, autocontrast
def test_masks_and_steps_match_the_multidiscrete_twin(first: int) -> None:
    flat, twin = flat_and_twin()
    table = flat.get_wrapper_attr("table")
    mask = flat.get_wrapper_attr("action_masks")()
    assert mask.tolist() == components_valid(twin, table).tolist()
    assert not mask[:8].any() and mask[first]  # a tool step first (answer_at_end)
    obs_f, r_f, term_f, _, info_f = flat.step(first)
    obs_t, r_t, term_t, _, info_t = twin.step(table[first])
    assert info_f["decoded_action"] == info_t["decoded_action"]
    assert r_f == r_t and term_f == term_t
    assert all(np.array_equal(obs_f[k], obs_t[k]) for k in obs_t)
    mask = info_f["action_mask"]
    assert mask.tolist() == components_valid(twin, table).tolist()
    assert mask[:8].sum() == len(twin.unwrapped.task.choices) and not mask[8:].any()
    answer = int(np.flatnonzero(mask)[0])
    *_, info_f = flat.step(answer)
    *_, info_t = twin.step(table[answer])
    assert info_f["answer_correct"] == info_t["answer_correct"]


@pytest.mark.parametrize("env_id", discrete_env_ids())
def test_flat_ids_pass_the_env_checkers(env_id: str) -> None:
    from stable_baselines3.common.env_checker import check_env as sb3_check_env

    env = gym.make(env_id, flat_actions=True, **POOL)
    assert isinstance(env.action_space, gym.spaces.Discrete)
    sb3_check_env(env, warn=True)
    _, info = env.reset(seed=1)
    valid = np.flatnonzero(info["action_mask"])
    rng = np.random.default_rng(0)
    for _ in range(4):  # masked-valid actions never fail
        _, _, term, trunc, info = env.step(int(rng.choice(valid)))
        assert info["metrics"]["failed_calls"] == 0 if term else info.get("error") is None
        if term or trunc:
            break
        valid = np.flatnonzero(info["action_mask"])


def test_refuses_an_env_without_the_discrete_wrapper() -> None:
    with pytest.raises(TypeError, match="DiscreteToolWrapper"):
        FlatToolActions(gym.make("M3Bench-L1"))


def test_maskable_ppo_runs_on_flat_actions() -> None:
    from sb3_contrib import MaskablePPO

    env = gym.make("M3Bench-Classic-Discrete", flat_actions=True, tools=CLASSIC_TOOLS,
                   obs_size=48, **POOL)
    model = MaskablePPO("MultiInputPolicy", env, n_steps=32, batch_size=16, n_epochs=1,
                        seed=0, device="cpu")
    model.learn(64)
    action, _ = model.predict(env.reset(seed=0)[0], action_masks=env.get_wrapper_attr(
        "action_masks")())
    assert env.get_wrapper_attr("action_masks")()[int(action)]


# ------------------------------------------------------------------ the oracle's actions


def play_expert(env: gym.Env, seed: int, check_mask: bool) -> dict:
    """Play one episode with the wrapper's expert actions; return the final info.

    ``check_mask`` asserts every action is valid under the flat ``action_mask`` of the info.
    """
    expert = env.get_wrapper_attr("expert_action")
    _, info = env.reset(seed=seed)
    done = False
    while not done:
        action = expert()
        if check_mask:
            assert info["action_mask"][action]
        _, _, term, trunc, info = env.step(action)
        done = term or trunc
    return info


@pytest.mark.parametrize("flat", [False, True])
@pytest.mark.parametrize("family", m3gym.family_names(suite="classic"))
def test_expert_actions_solve_the_classic_suite(flat: bool, family: str) -> None:
    env = gym.make("M3Bench-Classic-Discrete", flat_actions=flat, tools=CLASSIC_TOOLS,
                   obs_size=48, family=family)
    for seed in range(4):
        info = play_expert(env, seed, check_mask=flat)
        assert info["answer_correct"] and info["metrics"]["S"] == 1.0
        assert info["metrics"]["V"] == 1.0


def test_expert_actions_are_valid_and_answer_right_on_a_benchmark_level() -> None:
    env = gym.make("M3Bench-L1-Discrete", flat_actions=True, **POOL)
    for seed in range(3):
        assert play_expert(env, seed, check_mask=True)["answer_correct"]


def test_behaviour_cloning_fits_the_demos() -> None:
    import sys
    from pathlib import Path

    from sb3_contrib import MaskablePPO

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "training"))
    from bc import clone, collect_demos

    env = gym.make("M3Bench-Classic-Discrete", flat_actions=True, tools=CLASSIC_TOOLS,
                   obs_size=48, family="glyph_zoom", **POOL)
    obs, actions, masks = collect_demos(env, 6)
    assert len(actions) == 12 and set(obs) == {"image", "features"}
    assert all(m[a] for m, a in zip(masks, actions))  # the oracle acts within the masks
    model = MaskablePPO("MultiInputPolicy", env, n_steps=32, seed=0, device="cpu")
    history = clone(model, obs, actions, masks, epochs=80, batch_size=12, learning_rate=3e-3)
    assert history[-1]["loss"] < 0.5 * history[0]["loss"]
    assert history[-1]["accuracy"] == 1.0


def test_extractor_pretraining_fits_the_demos_and_leaves_the_heads() -> None:
    """``pretrain_extractor`` trains the features extractor only: the policy's own heads keep
    their initial weights, and the extractor alone (through its discarded linear head) comes to
    predict the expert's actions."""
    import sys
    from pathlib import Path

    import torch
    from sb3_contrib import MaskablePPO

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "training"))
    from bc import collect_demos, pretrain_extractor

    env = gym.make("M3Bench-Classic-Discrete", flat_actions=True, tools=CLASSIC_TOOLS,
                   obs_size=48, family="glyph_zoom", **POOL)
    obs, actions, _ = collect_demos(env, 6)
    model = MaskablePPO("MultiInputPolicy", env, n_steps=32, seed=0, device="cpu")
    policy = model.policy
    heads = {k: v.clone() for k, v in policy.state_dict().items()
             if not k.startswith(("features_extractor", "pi_features", "vf_features"))}
    before = {k: v.clone() for k, v in policy.features_extractor.state_dict().items()}
    history = pretrain_extractor(model, obs, actions, epochs=60, batch_size=12,
                                 learning_rate=3e-3)
    assert len(history) == 60
    assert history[-1]["loss"] < 0.5 * history[0]["loss"]
    assert history[-1]["accuracy"] == 1.0
    after = policy.state_dict()
    assert all(torch.equal(after[k], v) for k, v in heads.items())
    assert any(not torch.equal(policy.features_extractor.state_dict()[k], v)
               for k, v in before.items())


def test_extractor_pretraining_needs_flat_actions() -> None:
    import sys
    from pathlib import Path

    from sb3_contrib import MaskablePPO

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "training"))
    from bc import collect_demos, pretrain_extractor

    env = gym.make("M3Bench-Classic-Discrete", tools=CLASSIC_TOOLS, obs_size=48,
                   family="glyph_zoom", **POOL)
    obs, actions, _ = collect_demos(env, 2)
    model = MaskablePPO("MultiInputPolicy", env, n_steps=32, seed=0, device="cpu")
    with pytest.raises(ValueError, match="flat_actions"):
        pretrain_extractor(model, obs, actions, epochs=1)


def test_glyph_rotate_demos_crop_then_answer() -> None:
    """glyph_rotate's demos are its reference (one crop of the card's cell) and the answer.

    (The cloning tests above fit glyph_zoom's demos: glyph_rotate's pool of three tasks here
    gives one task five of six demos, and the cloned policy keeps the majority's actions.)
    """
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "training"))
    from bc import collect_demos

    env = gym.make("M3Bench-Classic-Discrete", flat_actions=True, tools=CLASSIC_TOOLS,
                   obs_size=48, family="glyph_rotate", **POOL)
    obs, actions, masks = collect_demos(env, 4)
    assert len(actions) == 8 and all(m[a] for m, a in zip(masks, actions))
    assert len({int(a) for a in actions[0::2]} & {int(a) for a in actions[1::2]}) == 0


def test_behaviour_cloning_goes_on_until_the_demo_accuracy() -> None:
    import sys
    from pathlib import Path

    from sb3_contrib import MaskablePPO

    sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "training"))
    from bc import clone, collect_demos

    env = gym.make("M3Bench-Classic-Discrete", flat_actions=True, tools=CLASSIC_TOOLS,
                   obs_size=48, family="glyph_zoom", **POOL)
    obs, actions, masks = collect_demos(env, 6)
    model = MaskablePPO("MultiInputPolicy", env, n_steps=32, seed=0, device="cpu")
    short = clone(model, obs, actions, masks, epochs=1, batch_size=12, learning_rate=3e-3)
    assert len(short) == 1
    model = MaskablePPO("MultiInputPolicy", env, n_steps=32, seed=0, device="cpu")
    longer = clone(model, obs, actions, masks, epochs=1, batch_size=12, learning_rate=3e-3,
                   min_accuracy=1.0, max_epochs=200)
    assert 1 < len(longer) < 200 and longer[-1]["accuracy"] == 1.0
    assert all(h["accuracy"] < 1.0 for h in longer[:-1])  # stops at the first epoch reaching it
