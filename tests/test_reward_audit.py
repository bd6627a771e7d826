"""The reward audit (m3gym.audit): machinery on hand-built cases, blindness, determinism, CLI.

The ``reward_target`` tests at the end are the issue-10 targets measured on a few episodes; they
are expected to FAIL until the reward mechanism is fixed (content-gated alignment, checkpoints
that require the effect, strictly potential-based shaping). Deselect them with
``-m "not reward_target"``.
"""

import json
import math

import numpy as np
import pytest

import m3gym
from m3gym.audit.blind import (
    FORM_ARGUMENTS,
    WHOLE_BOX,
    BlindContent,
    ShapeCall,
    ShapePlayer,
    blind_shape,
    make_blind_policy,
    random_answer,
    with_answer,
)
from m3gym.audit.reward_audit import (
    DEFAULT_ENVS,
    EnvAudit,
    EpisodeOutcome,
    PolicyResult,
    _paired,
    audit_env,
    chance_accuracy,
    check_targets,
    counterfactual_answers,
    episode_tasks,
    family_rows,
    format_table,
    mix_outcomes,
    outcome_of,
    reward_presets,
    summary_markdown,
)
from m3gym.cli import main
from m3gym.spec import AnswerSpec, RefCall, Task
from tests.sandbox_options import CODE_SANDBOX


def _task(answer: AnswerSpec, choices: tuple[str, ...] | None) -> Task:
    return Task(task_id="t", family="tiny_text", level=1, domain="Diagram",
                images=(np.zeros((4, 4, 3), np.uint8),), question="Q?", answer=answer,
                reference=((RefCall("c1", "crop", {"image_index": 0, "bbox_2d": [1, 2, 3, 4],
                                                   "zoom_scale": 2.0}),),),
                choices=choices)


def _outcome(ret: float, answer: float = 0.0, **metrics: float) -> EpisodeOutcome:
    m = {"acc": 0.0, "S": 0.0, "V": 0.0, "m3": 0.0, "OT": 0.0, **metrics}
    return EpisodeOutcome(seed=0, ret=ret, answer_reward=answer, answered=True, **m)


def _audit(**returns: list[EpisodeOutcome]) -> EnvAudit:
    audit = EnvAudit("M3Bench-L1", "m3", 0)
    for name, outcomes in returns.items():
        audit.results[name] = PolicyResult(name, outcomes)
    return audit


# ---------------------------------------------------------------- chance adjustment

def test_chance_accuracy_exact_and_numeric():
    assert chance_accuracy(_task(AnswerSpec("B"), ("A", "B", "C", "D"))) == 0.25
    numeric = AnswerSpec("10", match="numeric", tolerance=0.5)
    assert chance_accuracy(_task(numeric, ("10", "10.4", "11", "12"))) == 0.5
    assert chance_accuracy(_task(AnswerSpec("B"), None)) == 0.0


def test_outcome_and_mixing_exact():
    info = {"metrics": {"acc": 1.0, "S": 0.5, "V": 1.0, "m3": 0.25, "OT": 0.0},
            "reward_components": {"answer": 1.0, "m3": 0.125}}
    right = outcome_of(3, 1.625, info, answered=True, family="f")
    assert right.non_answer == 0.625 and right.family == "f"
    wrong = outcome_of(3, 0.5, {"metrics": {**info["metrics"], "acc": 0.0},
                                "reward_components": {"answer": 0.0}}, answered=True)
    mixed = mix_outcomes(0.25, right, wrong)
    assert mixed.ret == pytest.approx(0.25 * 1.625 + 0.75 * 0.5)  # 0.78125
    assert mixed.answer_reward == 0.25 and mixed.acc == 0.25 and mixed.S == 0.5
    assert mixed.non_answer == pytest.approx(0.53125)
    assert mix_outcomes(0.0, None, wrong) is wrong and mix_outcomes(1.0, right, None) is right
    with pytest.raises(ValueError):
        mix_outcomes(0.0, right, None)


def test_counterfactual_answers():
    assert counterfactual_answers(_task(AnswerSpec("B"), ("A", "B", "C"))) == ("B", "A")
    assert counterfactual_answers(_task(AnswerSpec("B"), ("B",))) == ("B", None)
    assert counterfactual_answers(_task(AnswerSpec("B"), None)) == (None, "unknown")


def test_forced_answer_keeps_the_calls():
    assert with_answer({"name": "answer", "arguments": {"text": "A"}}, "B") == \
        {"name": "answer", "arguments": {"text": "B"}}
    call = [{"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [0, 0, 1, 1]}}]
    assert with_answer(call, "B") is call
    assert with_answer({"name": "answer", "arguments": {"text": "A"}}, None)["arguments"] == \
        {"text": "A"}


# ---------------------------------------------------------------- rows and targets

def test_rows_percentages_and_targets_exact():
    audit = _audit(
        oracle=[_outcome(2.0, 1.0, acc=1, S=1, V=1, m3=1)] * 2,
        random=[_outcome(0.3, 0.2, acc=0.2), _outcome(-1.1, 0.2, acc=0.2)],
        answer_now=[_outcome(0.2, 0.2, acc=0.2)] * 2,
        heuristic=[_outcome(1.5, 1.0, acc=1), _outcome(0.5, 0.0)],
        ref_whole=[_outcome(0.25, 0.25, acc=0.25), _outcome(0.75, 0.25, acc=0.25)],
    )
    rows = {r["policy"]: r for r in audit.rows()}
    assert audit.oracle_return == 2.0
    assert rows["random"]["return"] == pytest.approx(-0.4)
    assert rows["answer_now"]["pct_oracle"] == pytest.approx(10.0)
    assert rows["ref_whole"]["pct_oracle"] == pytest.approx(25.0)
    assert rows["ref_whole"]["acc"] == 0.25 and rows["heuristic"]["acc"] == 0.5
    assert rows["ref_whole"]["non_answer"] == pytest.approx(0.25)
    checks = {(c.target, c.policy): c for c in check_targets(audit)}
    assert checks[("oracle", "oracle")].passed
    # floor = answer_now (10 %); ref_whole 25 % - 10 % = +15 points > 5
    blind = checks[("blind<=random+5", "ref_whole")]
    assert not blind.passed and "+15.0 points" in blind.detail and "answer_now" in blind.detail
    assert checks[("blind<=random+5", "answer_now")].passed
    # non-answer: heuristic [0.5, 0.5] vs ref_whole [0.0, 0.5] -> passes
    assert checks[("heuristic>blind", "ref_whole")].passed
    # heuristic vs answer_now: [0.5, 0.5] vs [0, 0] -> passes
    assert checks[("heuristic>blind", "answer_now")].passed
    assert "ref_whole (blind) | 0.500* | 25.0 |" in format_table(audit)
    summary = summary_markdown([audit], {("M3Bench-L1", "m3"): list(checks.values())})
    assert "| ref_whole (blind) | 25.0 | 0.25 | 0.00 | 0.00 | 0.00 | 0.00 |" in summary
    assert "- `m3` blind<=random+5 ref_whole: 25.0% vs random floor 10.0%" in summary


def test_family_rows_split_by_family():
    def fam(ret: float, family: str) -> EpisodeOutcome:
        o = _outcome(ret)
        return EpisodeOutcome(**{**o.__dict__, "family": family})

    audit = _audit(oracle=[fam(2.0, "a"), fam(1.0, "b"), fam(2.0, "a")],
                   random=[fam(0.0, "a"), fam(0.5, "b"), fam(1.0, "a")],
                   answer_now=[fam(0.0, "a"), fam(0.0, "b"), fam(0.0, "a")])
    rows = family_rows(audit)
    assert [r["family"] for r in rows] == ["a", "b"]
    assert rows[0]["episodes"] == 2 and rows[0]["oracle_return"] == 2.0
    assert rows[0]["random"] == 25.0 and rows[1]["random"] == 50.0  # 0.5/2, 0.5/1
    assert rows[1]["answer_now"] == 0.0


def test_targets_with_sample_size_allowance():
    assert _paired(np.array([1.0, 3.0]), 0.0) == (2.0, 0.0)
    mean, allow = _paired(np.array([1.0, 3.0]), 2.0)  # SE = sqrt(2) / sqrt(2) = 1
    assert mean == 2.0 and allow == pytest.approx(2.0)
    audit = _audit(
        oracle=[_outcome(1.0, 1.0, acc=1, S=1, V=1, m3=1)] * 2,
        random=[_outcome(0.0)] * 2, answer_now=[_outcome(0.0)] * 2,
        ref_whole=[_outcome(0.0), _outcome(0.12)],  # +6 points, SE 6 points
    )
    strict = {c.policy: c.passed for c in check_targets(audit) if c.target.startswith("blind")}
    loose = {c.policy: c.passed for c in check_targets(audit, z=1.0)
             if c.target.startswith("blind")}
    assert strict == {"answer_now": True, "ref_whole": False}
    assert loose == {"answer_now": True, "ref_whole": True}


@pytest.mark.parametrize("preset", ["sparse", "process"])
def test_oracle_target_and_not_applicable_non_answer(preset):
    audit = _audit(
        oracle=[_outcome(1.0, 1.0, acc=1, S=0.5, V=1, m3=1, OT=0.25)],
        random=[_outcome(0.0)], answer_now=[_outcome(0.0)], heuristic=[_outcome(1.0, 1.0)],
    )
    audit.preset = preset  # no credit besides the answer: heuristic>blind does not apply
    checks = {(c.target, c.policy): c for c in check_targets(audit)}
    assert not checks[("oracle", "oracle")].passed
    assert checks[("oracle", "oracle")].detail == "S=0.500, OT=0.250"
    na = checks[("heuristic>blind", "answer_now")]
    assert na.passed and na.detail.startswith("n/a")


def test_pays_process_credit_per_preset():
    from m3gym.audit.reward_audit import pays_process_credit

    assert {p: pays_process_credit(p) for p in reward_presets()} == {
        "checkpoint_bonus": True, "m3": True, "paper": True, "process": False, "sparse": False}


def test_oracle_return_must_be_positive():
    audit = _audit(oracle=[_outcome(0.0, acc=1, S=1, V=1, m3=1)], random=[_outcome(0.0)],
                   answer_now=[_outcome(0.0)])
    checks = check_targets(audit)
    assert [c.target for c in checks] == ["oracle", "oracle_return>0"] and not checks[1].passed


# ---------------------------------------------------------------- blindness

@pytest.mark.parametrize("family", m3gym.family_names(suite=None))
def test_blind_shape_has_no_content(family):
    task = m3gym.make_task(family, 3)
    shape = blind_shape(task)
    assert [[c.name for c in s] for s in shape] == [[c.name for c in s] for s in task.reference]
    for step in shape:
        for call in step:
            assert set(call.settings) <= FORM_ARGUMENTS


def test_no_content_argument_of_the_catalogue_is_copied():
    from m3gym.tools.catalogue import CONTENT_ARGUMENTS

    declared = {k for args in CONTENT_ARGUMENTS.values() for k in args} - {"image_index"}
    assert declared and not declared & FORM_ARGUMENTS


def test_shape_player_remaps_images_and_fills_blind_content():
    shape = ((ShapeCall("crop", 0, {"zoom_scale": 2.0}), ShapeCall("web_search", None, {})),
             (ShapeCall("autocontrast", 1, {}), ShapeCall("fetch_webpage", None, {})))
    player = ShapePlayer(shape, num_inputs=1, content=BlindContent("fixed"), question="Who?")
    rng = np.random.default_rng(0)
    first = player.next_step(rng)
    assert first == [
        {"name": "crop", "arguments": {"zoom_scale": 2.0, "image_index": 0,
                                       "bbox_2d": [400, 400, 600, 600]}},
        {"name": "web_search", "arguments": {"query": "Who?"}}]
    player.observe({"calls": [{"output_index": 5}, {"output_index": None}]})
    second = player.next_step(rng)
    assert second[0] == {"name": "autocontrast", "arguments": {"image_index": 5}}
    assert second[1]["arguments"] == {"url": "https://blind.example/page"}
    assert player.cycle_done and player.calls_per_cycle == 4
    # a new replay starts over with a fresh mapping
    assert player.next_step(rng)[0]["arguments"]["image_index"] == 0


def test_random_answer_is_uniform_over_choices():
    rng = np.random.default_rng(0)
    counts = {c: 0 for c in "ABC"}
    for _ in range(3000):
        counts[random_answer(rng, ("A", "B", "C"))["arguments"]["text"]] += 1
    assert all(abs(n - 1000) < 100 for n in counts.values())
    assert random_answer(rng, ())["arguments"]["text"] == "unknown"


def test_blind_policy_calls_carry_no_task_content():
    task = m3gym.make_task("tiny_text", 5)
    policy = make_blind_policy("ref_whole", seed=0, shape_source=lambda: blind_shape(task))
    obs = {"text": "What is it?\n\nImages (address them", "image_indices": (0,)}
    policy.reset(obs, {"choices": task.choices, "max_tool_calls": 15, "max_rounds": 15})
    calls = policy.act(obs, {})
    assert calls == [{"name": "crop", "arguments": {
        "zoom_scale": task.reference[0][0].arguments["zoom_scale"], "image_index": 0,
        "bbox_2d": list(WHOLE_BOX)}}]
    assert policy.act(obs, {"calls": [{"output_index": 1}]})["arguments"]["text"] in task.choices


def test_unknown_policy_is_a_clear_error():
    with pytest.raises(ValueError, match="unknown blind policy"):
        make_blind_policy("peek")
    with pytest.raises(ValueError, match="unknown audit policies"):
        audit_env("M3Bench-Classic", "sparse", 1, policies=["peek"])


# ---------------------------------------------------------------- runs

def test_every_preset_yaml_is_audited():
    assert set(reward_presets()) >= {"sparse", "process", "m3", "paper"}


def test_audit_is_deterministic_and_shares_tasks():
    tasks = episode_tasks("M3Bench-Classic", 3, seed=7)
    assert [t.task_id for t in tasks] == [t.task_id for t in episode_tasks("M3Bench-Classic", 3,
                                                                           seed=7)]
    policies = ["ref_random", "every_tool", "never_answer"]
    a = audit_env("M3Bench-Classic", "m3", 3, seed=7, policies=policies, tasks=tasks)
    b = audit_env("M3Bench-Classic", "m3", 3, seed=7, policies=policies)
    assert list(a.results) == ["oracle", "random", "answer_now", "every_tool", "ref_random",
                              "never_answer"]
    for name in a.results:
        assert a.results[name].outcomes == b.results[name].outcomes
    never = a.results["never_answer"].outcomes
    assert not any(o.answered for o in never) and all(o.acc == 0 for o in never)


def test_cli_writes_json(tmp_path, capsys):
    out = tmp_path / "audit.json"
    rc = main(["audit-reward", "--env", "M3Bench-Classic", "--episodes", "2", "--preset",
               "sparse", "--policy", "answer_now", "--json", str(out)])
    text = capsys.readouterr().out
    data = json.loads(out.read_text())
    assert rc in (0, 1) and "### M3Bench-Classic · preset `sparse`" in text
    assert ("FAIL" in text) == (rc == 1)
    (audit,) = data["audits"]
    assert audit["oracle_return"] == 1.0
    rows = {r["policy"]: r for r in audit["rows"]}
    # under sparse the audited return of answer_now is exactly the chance of a random choice
    chance = np.mean([o["acc"] for o in audit["episodes"]["answer_now"]])
    assert math.isclose(rows["answer_now"]["return"], chance)
    assert main(["audit-reward", "--env", "M3Bench-Classic", "--episodes", "1", "--preset",
                 "nope"]) == 2


# ---------------------------------------------------------------- targets (issue 10)

TARGET_EPISODES = 8
TARGET_Z = 2.0


@pytest.mark.reward_target
@pytest.mark.slow
@pytest.mark.parametrize("preset", reward_presets())
@pytest.mark.parametrize("env_id", DEFAULT_ENVS)
def test_reward_targets(env_id, preset):
    """Issue 10's targets on 8 episodes, each allowed 2 standard errors of its paired difference.

    KNOWN TO FAIL on the reward before the issue-10 fixes (blind reference-shaped calls earn
    30-50 % of the oracle's return): this test is the fix's acceptance check.
    """
    audit = audit_env(env_id, preset, TARGET_EPISODES, seed=1000)
    failed = [c for c in check_targets(audit, z=TARGET_Z) if not c.passed]
    if failed:
        pytest.fail("\n".join(f"{c.target} {c.policy}: {c.detail}" for c in failed),
                    pytrace=False)


def test_code_mode_audit_scores_the_same_calls_sent_as_cells():
    """In code mode every policy's tool steps go through run_python cells, scored the same."""
    from m3gym.audit.reward_audit import tool_cell

    assert tool_cell([{"name": "crop", "arguments": {"image_index": 0, "bbox_2d": [1, 2, 3, 4]}},
                      {"name": "autocontrast", "arguments": {"image_index": 1}}]) == (
        "crop(image_index=0, bbox_2d=[1, 2, 3, 4])\nautocontrast(image_index=1)")
    tasks = episode_tasks("M3Bench-L1", 3, 7)
    code = audit_env("M3Bench-L1", "m3", 3, seed=7, tasks=tasks, interface="code",
                     policies=["ref_whole", "whole_crop"], sandbox=CODE_SANDBOX)
    atomic = audit_env("M3Bench-L1", "m3", 3, seed=7, tasks=tasks,
                       policies=["ref_whole", "whole_crop"])
    assert code.results["oracle"].mean("m3") == 1.0 and code.results["oracle"].mean("S") == 1.0
    for name in ("oracle", "ref_whole", "whole_crop", "answer_now"):
        assert code.results[name].returns().tolist() == pytest.approx(
            atomic.results[name].returns().tolist()), name
    assert all(c.passed for c in check_targets(code) if c.target != "heuristic>blind")
    with pytest.raises(ValueError, match="interface"):
        audit_env("M3Bench-L1", "m3", 1, interface="gen")
