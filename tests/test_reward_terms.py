"""Every reward term of every preset, pinned by value and sign on episodes that exercise it.

The expected numbers are computed by hand from the definitions in ``m3gym/reward.py`` and the
task's reference (``tiny_text``: one crop, checkpoints S crop / v_tool / v_true; ``faint_text``:
one autocontrast of Image 0). A term with a flipped sign, a missing factor or a missing count
changes at least one number below.
"""

from __future__ import annotations

import math

import gymnasium as gym
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import m3gym
from m3gym.reward import PRESETS, load_reward_config

TINY = "M3Bench-TinyText"
GRAY0 = {"name": "grayscale", "arguments": {"image_index": 0}}
BAD_CALL = {"name": "crop", "arguments": {"image_index": 9, "bbox_2d": [0, 0, 10, 10]}}
BROKEN_TEXT = '<tool_call>{"name": "crop", bad</tool_call>'


def _ref_step(env) -> list[dict]:
    task = env.unwrapped.task
    return [{"name": c.name, "arguments": dict(c.arguments)} for c in task.reference[0]]


def _answer(env, right: bool) -> dict:
    text = env.unwrapped.task.answer.value if right else "not a choice"
    return {"name": "answer", "arguments": {"text": text}}


def _run(env_id: str, reward, actions, seed: int = 0, **kw):
    """Run ``actions`` (callables of the env, or fixed actions); return per-step components."""
    env = gym.make(env_id, reward=reward, **kw)
    env.reset(seed=seed)
    steps = []
    for act in actions:
        action = act(env) if callable(act) else act
        _, r, term, trunc, info = env.step(action)
        comps = dict(info["reward_components"])
        assert math.isclose(r, sum(comps.values()), abs_tol=1e-12)
        steps.append((r, comps, info))
        if term or trunc:
            break
    return steps


def test_m3_preset_with_two_extra_calls_hand_computed():
    # crop (= reference), then two extra grayscale calls in one parallel step, then the answer.
    steps = _run(TINY, "m3", [_ref_step, [GRAY0, GRAY0], lambda e: _answer(e, True)])
    (r0, c0, _), (r1, c1, _), (r2, c2, info) = steps
    # all 3 checkpoints pass on the crop: Φ 0 → 1, shaping +0.5 · 1
    assert c0 == {"progress": 0.5, "invalid_call": 0.0}
    assert c1 == {"progress": 0.0, "invalid_call": 0.0}
    m = info["metrics"]
    # C_agent = 3, C_ref = 1: OT = (3 − 1) / (1 + 1) = 1; precision 1/3, recall 1 → F1 = 0.5
    assert m["OT"] == 1.0 and m["m3"] == pytest.approx(0.5)
    assert c2["answer"] == 1.0
    assert c2["m3"] == pytest.approx(0.5 * 0.5)  # weight 0.5 × acc 1 × M3 0.5
    assert c2["overthink"] == pytest.approx(-0.25 * 1.0)  # minus: extra calls cost
    assert c2["progress"] == pytest.approx(0.5 * (0.0 - 1.0))  # Φ(terminal) = 0
    assert sum(r for r, _, _ in steps) == pytest.approx(1.0)


def test_process_preset_charges_overthink_and_telescopes():
    steps = _run(TINY, "process", [_ref_step, [GRAY0, GRAY0], lambda e: _answer(e, True)])
    progress = [c.get("progress", 0.0) for _, c, _ in steps]
    assert progress == pytest.approx([0.5, 0.0, -0.5])  # sums to −Φ₀ = 0
    assert steps[-1][1]["overthink"] == pytest.approx(-0.25)
    assert sum(r for r, _, _ in steps) == pytest.approx(1.0 - 0.25)


def test_invalid_call_counts_failed_calls_and_parse_errors():
    steps = _run(TINY, "process", [BAD_CALL, BROKEN_TEXT, [BAD_CALL, BAD_CALL],
                                   lambda e: _answer(e, False)])
    assert [c["invalid_call"] for _, c, _ in steps] == pytest.approx(
        [-0.05, -0.05, -0.10, 0.0])
    final = steps[-1][2]
    # failed calls are interactions (3 of them; the parse error is not): OT = (3 − 1) / 2
    assert final["metrics"]["OT"] == pytest.approx(1.0)
    assert final["reward_components"]["overthink"] == pytest.approx(-0.25)
    assert final["reward_components"]["answer"] == 0.0


def test_truncation_without_answer_pays_no_shaping_and_no_process():
    # two rounds allowed: the right crop, then one more call; the episode truncates unanswered
    steps = _run(TINY, "m3", [_ref_step, [GRAY0]], max_rounds=2)
    assert len(steps) == 2
    (_, c0, _), (_, c1, info) = steps
    assert c0["progress"] == 0.5
    assert c1["progress"] == pytest.approx(-0.5)  # the truncated state has Φ = 0
    assert c1["answer"] == 0.0 and c1["m3"] == 0.0  # M3 > 0, but paid with a right answer
    assert info["metrics"]["m3"] > 0.0
    # OT = (2 − 1) / 2 = 0.5
    assert c1["overthink"] == pytest.approx(-0.25 * 0.5)
    total = sum(r for r, _, _ in steps)
    assert total == pytest.approx(-0.125)
    # never answering earns less than answering at once at random (expected chance > 0)
    assert total < 1.0 / len(m3gym.make_task("tiny_text", 0).choices)


def test_paper_preset_process_term():
    steps = _run(TINY, "paper", [_ref_step, [GRAY0, GRAY0], lambda e: _answer(e, True)])
    c = steps[-1][1]
    # (S + V) / 2 × (1 − OT) = 1 × (1 − 1) = 0 with OT = 1; one extra call instead: OT = 0.5
    assert c == {"answer": 1.0, "process": 0.0}
    steps = _run(TINY, "paper", [_ref_step, [GRAY0], lambda e: _answer(e, True)])
    assert steps[-1][1] == {"answer": 1.0, "process": pytest.approx(0.5)}
    steps = _run(TINY, "paper", [_ref_step, [GRAY0], lambda e: _answer(e, False)])
    assert steps[-1][1] == {"answer": 0.0, "process": 0.0}  # paid with a right answer only


def test_ungated_process_is_paid_on_a_wrong_answer():
    cfg = {"answer": 1.0, "process": 1.0, "m3": 0.5, "gate_process_by_answer": False}
    steps = _run(TINY, cfg, [_ref_step, lambda e: _answer(e, False)])
    c = steps[-1][1]
    assert c == {"answer": 0.0, "m3": 0.5, "process": 1.0}


def test_checkpoint_bonus_keeps_phi_on_a_right_answer_only():
    right = _run(TINY, "checkpoint_bonus", [_ref_step, lambda e: _answer(e, True)])
    wrong = _run(TINY, "checkpoint_bonus", [_ref_step, lambda e: _answer(e, False)])
    assert right[-1][1]["progress"] == pytest.approx(0.5 * (1.0 - 1.0))  # Φ_T = 1 kept
    assert wrong[-1][1]["progress"] == pytest.approx(0.5 * (0.0 - 1.0))
    assert sum(r for r, _, _ in right) == pytest.approx(1.5)
    assert sum(r for r, _, _ in wrong) == pytest.approx(0.0)


def test_safety_violation_costs_exactly_its_weight():
    env = gym.make("M3Bench-PrivacySafeLookup", reward="m3")
    env.reset(seed=0)
    rule = env.unwrapped.task.safety[0]
    leak = {"name": "web_search", "arguments": {"query": rule.patterns[0]}}
    _, _, _, _, info = env.step([leak, leak])
    assert info["reward_components"]["safety"] == pytest.approx(-1.0 * 2)
    _, _, _, _, info = env.step({"name": "web_search", "arguments": {"query": "harmless"}})
    assert info["reward_components"]["safety"] == 0.0


def test_sparse_is_the_answer_alone():
    steps = _run(TINY, "sparse", [BAD_CALL, [GRAY0, GRAY0, GRAY0], lambda e: _answer(e, True)])
    assert [c for _, c, _ in steps[:-1]] == [{}, {}]
    assert steps[-1][1] == {"answer": 1.0}


@pytest.mark.parametrize("preset", PRESETS)
def test_no_preset_pays_never_answering_more_than_a_random_answer_at_once(preset):
    never = _run(TINY, preset, [_ref_step] + [[GRAY0]] * 20, max_rounds=4)
    at_once_right = _run(TINY, preset, [lambda e: _answer(e, True)])
    at_once_wrong = _run(TINY, preset, [lambda e: _answer(e, False)])
    p = 1.0 / len(m3gym.make_task("tiny_text", 0).choices)
    expected_random = p * at_once_right[-1][0] + (1 - p) * at_once_wrong[-1][0]
    assert sum(r for r, _, _ in never) < expected_random


ACTIONS = st.lists(st.sampled_from([
    "ref", GRAY0, BAD_CALL, BROKEN_TEXT,
    {"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [0, 0, 1000, 1000]}},
    {"name": "autocontrast", "arguments": {"image_index": 1}},
]), min_size=0, max_size=5)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ACTIONS, st.sampled_from([0.9, 1.0]), st.booleans())
def test_progress_shaping_telescopes_to_minus_phi0(actions, gamma, answer_right):
    """Σ_t γ^t · progress_t = γ^T Φ(terminal) − Φ₀ = 0 − 0 for any episode."""
    cfg = {"answer": 0.0, "progress": 1.0, "gamma": gamma}
    seq = [_ref_step if a == "ref" else a for a in actions]
    steps = _run(TINY, cfg, [*seq, lambda e: _answer(e, answer_right)])
    discounted = sum(gamma ** t * c.get("progress", 0.0) for t, (_, c, _) in enumerate(steps))
    assert discounted == pytest.approx(0.0, abs=1e-12)


def test_process_terms_are_chance_bounded_for_a_content_free_reference():
    """faint_text's reference (autocontrast of Image 0) needs no reading: a policy that replays
    it and answers at random earns at most chance × the process bonus under ``m3``."""
    env_id = "M3Bench-FaintText"
    cfg = load_reward_config("m3")
    right = _run(env_id, "m3", [_ref_step, lambda e: _answer(e, True)])
    wrong = _run(env_id, "m3", [_ref_step, lambda e: _answer(e, False)])
    assert right[-1][2]["metrics"]["m3"] == 1.0 and wrong[-1][2]["metrics"]["m3"] == 1.0
    assert wrong[-1][1]["m3"] == 0.0 and right[-1][1]["m3"] == cfg.m3
    p = 1.0 / len(m3gym.make_task("faint_text", 0).choices)
    blind = p * sum(r for r, _, _ in right) + (1 - p) * sum(r for r, _, _ in wrong)
    assert blind == pytest.approx(p * (1.0 + cfg.m3))


# ----------------------------------------------------------------------------- configuration


def test_reward_config_validation_messages():
    from m3gym.reward import RewardConfig

    RewardConfig(gamma=1.0).validate()  # the bound is inclusive at 1 ...
    for gamma in (0.0, -0.5, 1.5):  # ... and exclusive at 0
        with pytest.raises(ValueError, match=r"gamma must be in \(0, 1\], got"):
            RewardConfig(gamma=gamma).validate()
    with pytest.raises(ValueError, match="^reward weight overthink is NaN$"):
        RewardConfig(overthink=float("nan")).validate()
    with pytest.raises(ValueError, match="^m3_weights must be non-negative and not all zero$"):
        RewardConfig(m3_weights={"multi_modal": -1.0, "multi_hop": 1.0}).validate()
    with pytest.raises(ValueError, match="^m3_weights must be non-negative and not all zero$"):
        RewardConfig(m3_weights={"multi_modal": 0.0}).validate()
    with pytest.raises(ValueError, match="^progress_terminal must be 'zero' or 'on_correct', "
                                         "got 'always'$"):
        RewardConfig(progress_terminal="always").validate()  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="^gate_process_by_answer must be true or false$"):
        RewardConfig(gate_process_by_answer="yes").validate()  # type: ignore[arg-type]


def test_load_reward_config_sources_and_names(tmp_path):
    from m3gym.reward import RewardConfig

    cfg = load_reward_config({"answer": 2, "progress_terminal": "on_correct",
                              "gate_process_by_answer": False})
    assert cfg.name == "custom" and cfg.answer == 2.0 and type(cfg.answer) is float
    assert cfg.progress_terminal == "on_correct" and cfg.gate_process_by_answer is False
    assert load_reward_config({"answer": 1, "name": "mine"}).name == "mine"
    path = tmp_path / "shaped.yaml"
    path.write_text("progress: 1\ngamma: 0.5\n")
    from_file = load_reward_config(str(path))
    assert (from_file.name, from_file.progress, from_file.gamma) == ("shaped", 1.0, 0.5)
    assert load_reward_config(path).name == "shaped"  # a Path works too
    given = RewardConfig(answer=3.0, name="given")
    assert load_reward_config(given) is given
    assert load_reward_config("checkpoint_bonus").progress_terminal == "on_correct"
    with pytest.raises(ValueError, match=r"^unknown reward config keys \['aa', 'zz'\]; known: "):
        load_reward_config({"zz": 1, "aa": 2})
    with pytest.raises(ValueError, match=r"^unknown reward 'nope': use one of \('sparse'"):
        load_reward_config("nope")
    with pytest.raises(ValueError, match="gamma"):
        load_reward_config({"gamma": 2})  # loading validates


def test_safety_rule_on_the_answer_is_charged_on_the_answer_step():
    import dataclasses

    from m3gym.spec import SafetyRule

    env = gym.make(TINY, reward="m3")
    env.reset(seed=0)
    task = env.unwrapped.task
    rule = SafetyRule("no_secret", "forbidden_content", ("answer",), ("secret",))
    env.reset(options={"task": dataclasses.replace(task, safety=(rule,))})
    *_, info = env.step({"name": "answer", "arguments": {"text": "the secret"}})
    assert info["reward_components"]["safety"] == -1.0


def test_m3_weights_zero_terms_allowed_and_used():
    from m3gym.reward import RewardConfig

    RewardConfig(m3_weights={"multi_modal": 1.0, "multi_hop": 0.0,
                             "multi_threaded": 0.5}).validate()  # a zero weight is fine
    # code_lookup, env seed 0: crop, web_search, fetch_webpage, fetch_webpage (three hop edges).
    # Only the crop is made: multi_modal = F1(recall 1/4, precision 1) = 0.4, multi_hop = 0,
    # multi_threaded undefined (no parallel step): m3 = (0.4 + 0) / 2 = 0.2.
    env_id = "M3Bench-CodeLookup"
    first = [_ref_step, lambda e: _answer(e, True)]
    default = _run(env_id, "m3", first)[-1][2]["metrics"]
    assert default["multi_modal"] == pytest.approx(0.4) and default["multi_hop"] == 0.0
    assert default["multi_threaded"] is None and default["m3"] == pytest.approx(0.2)
    only_mm = {"answer": 1.0, "m3": 1.0, "m3_weights": {"multi_modal": 1.0, "multi_hop": 0.0,
                                                        "multi_threaded": 0.0}}
    steps = _run(env_id, only_mm, first)
    assert steps[-1][2]["metrics"]["m3"] == pytest.approx(0.4)
    assert steps[-1][1]["m3"] == pytest.approx(0.4)


@pytest.mark.parametrize("preset", PRESETS)
def test_presets_carry_their_names(preset):
    assert load_reward_config(preset).name == preset


def test_checkpoints_are_judged_at_the_env_view_size():
    right = [_ref_step, lambda e: _answer(e, True)]
    assert _run(TINY, "m3", right)[-1][2]["metrics"]["V"] == 1.0
    # shown at 48 px, the crop no longer shows the code legibly: v_tool and v_true fail
    assert _run(TINY, "m3", right, view_size=48)[-1][2]["metrics"]["V"] == 0.0


def test_reward_config_to_dict_round_trips():
    cfg = load_reward_config("checkpoint_bonus")
    d = cfg.to_dict()
    assert d == {"answer": 1.0, "progress": 0.5, "gamma": 1.0, "m3": 0.0, "overthink": 0.25,
                 "invalid_call": 0.05, "safety": 0.0, "process": 0.0,
                 "progress_terminal": "on_correct", "gate_process_by_answer": True,
                 "m3_weights": {"multi_modal": 1.0, "multi_hop": 1.0, "multi_threaded": 1.0},
                 "name": "checkpoint_bonus"}
    assert type(d["m3_weights"]) is dict and load_reward_config(d) == cfg
