"""score_episode wires every metric to its source: checked key by key on imperfect episodes."""

import math

import gymnasium as gym
import pytest

import m3gym
from m3gym.scoring.answer import answer_is_correct
from m3gym.scoring.checkpoints import evaluate_checkpoints
from m3gym.scoring.episode_score import METRIC_KEYS, score_episode
from m3gym.scoring.m3 import score_trace
from m3gym.scoring.safety import evaluate_safety
from m3gym.scoring.taxonomy import classify_failure


def _play(family, task_seed, mode):
    """An imperfect episode: a parse error, a failed call, an extra call, the reference, the
    answer. ``mode`` "pii" also sends the forbidden name to web_search and answers wrong;
    "overthink" adds two more extra calls (6 calls, OT >= 1) and answers wrong."""
    leak_pii = mode == "pii"
    env = gym.make(m3gym.family_env_id(family))
    env.reset(seed=0, options={"task": m3gym.make_task(family, task_seed)})
    base = env.unwrapped
    task = base.task
    actions = ["no tool call here",
               {"name": "crop", "arguments": {"image_index": 42, "bbox_2d": [0, 0, 5, 5]}},
               {"name": "grayscale", "arguments": {"image_index": 0}}]
    if leak_pii:
        actions.append({"name": "web_search", "arguments": {"query": task.safety[0].patterns[0]}})
    if mode == "overthink":
        actions += [{"name": "grayscale", "arguments": {"image_index": 0}}] * 2
    n_inputs = len(task.images)
    for step in task.reference:  # image indices shift by the grayscale output
        calls = []
        for c in step:
            args = dict(c.arguments)
            if isinstance(args.get("image_index"), int) and args["image_index"] >= n_inputs:
                args["image_index"] += 1 + 2 * (mode == "overthink")
            calls.append({"name": c.name, "arguments": args})
        actions.append(calls)
    wrong = [c for c in task.choices if c != task.answer.value]
    answer = wrong[0] if mode != "clean" else task.answer.value
    actions.append({"name": "answer", "arguments": {"text": answer}})
    info = {}
    for a in actions:
        *_, info = env.step(a)
    return base, info


@pytest.mark.parametrize("family,seed,mode", [("price_sum", 3, "clean"),
                                              ("privacy_safe_lookup", 3, "pii"),
                                              ("price_sum", 3, "overthink")])
def test_every_metric_comes_from_its_source(family, seed, mode):
    base, info = _play(family, seed, mode)
    task, trace, state = base.task, base.trace, base.state
    out = score_episode(task, trace, state, view_size=base.view_size)
    m = out["metrics"]
    assert tuple(m) == METRIC_KEYS
    assert m == info["metrics"]  # from scratch == the env's incremental report

    rep = evaluate_checkpoints(task, trace, state, base.view_size)
    parents = {e.index: e.provenance.parent for e in state}
    al, m3 = score_trace(task.reference, len(task.images), trace.steps, parents=parents)
    safety = evaluate_safety(task, trace)
    correct = answer_is_correct(trace.answer, task.answer)
    calls = [c for s in trace.steps for c in s]
    ref_calls = sum(len(s) for s in task.reference)
    ot = max(0, len(calls) - ref_calls) / (ref_calls + 1)
    assert ot > 0 and len(trace.parse_errors) == 1
    am = al.metrics
    assert m == {
        "acc": float(correct), "S": rep.S, "V": rep.V, "V_tool": rep.V_tool, "V_true": rep.V_true,
        "OT": ot, "multi_modal": m3.multi_modal, "multi_hop": m3.multi_hop,
        "multi_threaded": m3.multi_threaded, "m3": m3.total,
        "recall": am.recall, "precision": am.precision, "arg_similarity": am.arg_similarity,
        "arg_similarity_strong": am.arg_similarity_strong, "step_coherence": am.step_coherence,
        "order_consistency": am.order_consistency, "merge_purity": am.merge_purity,
        "safety": safety.score, "safety_violations": len(safety.violations),
        "failure_mode": classify_failure(task, trace, rep, correct, ot),
        "calls": len(calls), "failed_calls": sum(not c.ok for c in calls) + 1,
        "rounds": len(trace.steps),
    }
    assert m["acc"] == (1.0 if mode == "clean" else 0.0)
    assert (m["safety_violations"] > 0) == (mode == "pii")
    assert m["failure_mode"] == {"clean": None, "pii": m["failure_mode"],
                                 "overthink": "overthinking_collapse"}[mode]
    assert out["answer"] == trace.answer and out["answer_correct"] == correct
    assert out["audit"] == {"alignment": al.to_dict(), "checkpoints": rep.to_dict(),
                            "safety": safety.to_dict()}


def test_view_size_reaches_the_checkpoints():
    base, _ = _play("price_sum", 3, "clean")
    small = score_episode(base.task, base.trace, base.state, view_size=16)["metrics"]
    rep = evaluate_checkpoints(base.task, base.trace, base.state, 16)
    assert (small["V_true"], small["V"]) == (rep.V_true, rep.V)
    default = score_episode(base.task, base.trace, base.state)["metrics"]
    rep768 = evaluate_checkpoints(base.task, base.trace, base.state, 768)
    assert default["V_true"] == rep768.V_true != small["V_true"]


def test_m3_weights_reach_the_total():
    base, _ = _play("price_sum", 3, "clean")
    plain = score_episode(base.task, base.trace, base.state, view_size=base.view_size)["metrics"]
    w = {"multi_modal": 3.0, "multi_threaded": 1.0}
    got = score_episode(base.task, base.trace, base.state, view_size=base.view_size,
                        m3_weights=w)["metrics"]
    terms = [(plain[k], w.get(k, 1.0)) for k in ("multi_modal", "multi_hop", "multi_threaded")
             if plain[k] is not None]
    expected = sum(v * wt for v, wt in terms) / sum(wt for _, wt in terms)
    assert math.isclose(got["m3"], expected, rel_tol=1e-12)
    assert not math.isclose(got["m3"], plain["m3"])
