"""Peer metrics: Agentic-MME's and M3-Bench's scoring reproduced on a hand-built trajectory set.

Every expected value is computed here from the peers' formulas written out by hand
(``eval_runs_search.py``'s ``eval_process`` / ``check_final_answer_only`` and
``evaluate_trajectories.py``'s ``compute_metrics_for_id`` / ``aggregate_metrics``).
"""

from __future__ import annotations

import json
import math
from fractions import Fraction as F
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from m3gym.scoring.peers import (
    PEER_METRICS,
    PeerEpisode,
    PeerMatch,
    amme_answer_correct,
    amme_episode,
    amme_metrics,
    m3bench_metrics,
    m3bench_task_metrics,
    parse_metric_names,
    peer_episode,
)


def _m(ref: int, pred: int, sim: float) -> PeerMatch:
    return PeerMatch(ref, pred, sim)


# E1: hedged answer ("X or Y") that only the lenient contains match accepts; 5 calls for 2 ref.
E1 = PeerEpisode("e1", 1, "Litudan Harbor or Pinus Falls", ("Litudan Harbor",), acc=0.0,
                 s_passed=2, s_total=3, v_passed=1, v_total=2, calls=5, reference_steps=(1, 1),
                 pred_steps=5, matches=(_m(0, 0, 1.0), _m(1, 1, 0.7)))
# E2: numeric answer, no S checkpoint (S is None), one reference step split over two rounds.
E2 = PeerEpisode("e2", 2, "12", ("12",), match="numeric", acc=1.0, s_passed=0, s_total=0,
                 v_passed=2, v_total=2, calls=2, reference_steps=(2,), pred_steps=2,
                 matches=(_m(0, 0, 0.9), _m(0, 1, 0.65)))
# E3: no answer, no V checkpoint, 20 calls (over the 15-call budget), one inverted pair.
E3 = PeerEpisode("e3", 2, None, ("Pobax",), acc=0.0, s_passed=1, s_total=4, v_passed=0,
                 v_total=0, calls=20, reference_steps=(1, 2, 1), pred_steps=6,
                 matches=(_m(0, 0, 0.9), _m(1, 2, 0.8), _m(1, 1, 0.7), _m(2, 1, 0.6)))
EPISODES = (E1, E2, E3)


def _h3() -> float:
    """Normalized conditional entropy of E3's step matrix (only column 1 is mixed)."""
    q = (0.7 / 1.3, 0.6 / 1.3)
    return (1.3 / 3.0) * -sum(x * math.log(x) for x in q) / math.log(3)


# ----------------------------------------------------------------------------- Agentic-MME


@pytest.mark.parametrize(("answer", "golden", "mtype", "tol", "expected"), [
    ("Litudan Harbor or Pinus Falls", "Litudan Harbor", "contains", 0.0, True),
    ("litudan harbor", "Litudan Harbor", "contains", 0.0, True),
    ("Pinus Falls", "Litudan Harbor", "contains", 0.0, False),
    ("In 2017 it opened", "1", "contains", 0.0, False),   # 1-2 digit numbers: whole words only
    ("The answer is 1.", "1", "contains", 0.0, True),
    ("120", "12", "contains", 0.0, False),
    ("12 or 13", "12", "contains", 0.0, True),            # a hedge passes contains
    ("Luvu Lisero ", "Luvu Lisero", "exact", 0.0, True),  # stripped
    ("luvu lisero", "Luvu Lisero", "exact", 0.0, False),  # case-sensitive
    ("39.845", "39.84", "numeric", 0.01, True),
    ("12 apples", "12", "numeric", 0.0, False),           # the whole answer must parse
    (None, "12", "contains", 0.0, False),
])
def test_amme_answer_match(answer, golden, mtype, tol, expected) -> None:
    assert amme_answer_correct(answer, golden, mtype, tol) is expected


def test_amme_per_episode_scores_follow_eval_process() -> None:
    s1 = amme_episode(E1)
    assert (s1["S"], s1["V"]) == (pytest.approx(2 / 3), 0.5)
    assert s1["base"] == pytest.approx(float(F(7, 12)))
    assert (s1["penalty"], s1["PQS"]) == (0.0, pytest.approx(float(F(7, 12))))
    assert s1["correct"] is True and s1["checkpoint_rate"] == pytest.approx(0.6)
    s2 = amme_episode(E2)
    assert (s2["S"], s2["V"], s2["base"], s2["PQS"], s2["correct"]) == (None, 1.0, 1.0, 1.0, True)
    s3 = amme_episode(E3)
    assert (s3["S"], s3["V"], s3["base"]) == (0.25, None, 0.25)
    assert (s3["penalty"], s3["PQS"], s3["correct"]) == (1.0, 0.0, False)  # 20 > 15 calls
    # with a per-call penalty: E1 has 3 extra calls
    p1 = amme_episode(E1, penalty_per_extra_call=0.1)
    assert p1["penalty"] == pytest.approx(0.3)
    assert p1["PQS"] == pytest.approx(7 / 12 * 0.7)
    assert amme_episode(E1, penalty_per_extra_call=0.5)["penalty"] == 1.0  # capped at 1
    assert amme_episode(E3, max_tool_calls=0)["penalty"] == 0.0  # no budget: no penalty


def test_amme_run_aggregate() -> None:
    out = amme_metrics(EPISODES)
    o = out["overall"]
    expected = {
        "total_cases": 3, "total_s_cases": 2, "total_v_cases": 2,
        "avg_S": F(11, 24),                     # (2/3 + 1/4) / 2: tasks with S checkpoints only
        "avg_V": F(3, 4),                       # (1/2 + 1) / 2
        "final_answer_accuracy": F(2, 3), "final_answer_correct_count": 2,
        "acc_m3gym": F(1, 3), "contains_only_correct": 1,
        "avg_PQS": F(19, 36),                   # (7/12 + 1 + 0) / 3
        "perfect_cases": 1, "avg_penalty": F(1, 3), "avg_tool_calls_per_case": 9,
        "checkpoint_pass_rate_50": F(2, 3),     # 3/5, 2/2 pass; 1/4 does not
        "checkpoint_pass_rate_80": F(1, 3),
        "avg_overthink_ratio": F(17, 6),        # (5/2 + 2/2 + 20/4) / 3
        "cases_overthink": 2, "cases_underthink": 0, "cases_optimal": 1,
        "OT_paper": F(7, 5),                    # (3/3 + 0 + 16/5) / 3
    }
    for key, value in expected.items():
        assert o[key] == pytest.approx(float(value), abs=1e-12), key
    assert set(out["by_level"]) == {"L1", "L2"}
    assert out["by_level"]["L2"]["avg_S"] == 0.25 and out["by_level"]["L2"]["avg_V"] == 1.0
    assert out["by_level"]["L1"]["final_answer_accuracy"] == 1.0


# ----------------------------------------------------------------------------- M3-Bench


def test_m3bench_per_task_formulas() -> None:
    t1 = m3bench_task_metrics(E1)
    assert (t1["recall"], t1["precision"]) == (1.0, 0.4)
    assert t1["avg_sim_all_cov"] == pytest.approx(0.85)
    assert t1["avg_sim_strong_cov"] == pytest.approx(0.5)   # 1 strong of 2 ref × 1.0
    assert (t1["step_coherence_cov"], t1["order_consistency_cov"], t1["merge_purity_cov"]) \
        == (1.0, 1.0, 1.0)
    t2 = m3bench_task_metrics(E2)
    assert t2["avg_sim_all_cov"] == pytest.approx(0.775)
    assert t2["avg_sim_strong_cov"] == pytest.approx(0.45)
    assert t2["step_coherence_cov"] == 0.5                  # split over 2 rounds: frag 1/2
    assert t2["order_consistency_cov"] == 0.0               # one ref step: pair coverage 0/0 → 0
    assert t2["merge_purity_cov"] == 1.0                    # G_active = 1
    t3 = m3bench_task_metrics(E3)
    assert (t3["recall"], t3["precision"]) == (1.0, 0.2)
    assert t3["avg_sim_all_cov"] == pytest.approx(0.75)
    assert t3["avg_sim_strong_cov"] == pytest.approx(0.425)
    assert t3["step_coherence_cov"] == pytest.approx(0.75)
    assert t3["order_consistency_cov"] == pytest.approx(0.75)  # 1 inversion in 4 pairs
    assert t3["merge_purity_cov"] == pytest.approx(1 - _h3(), abs=1e-9)


def test_m3bench_aggregate_weights_by_reference_calls() -> None:
    out = m3bench_metrics(EPISODES)
    assert (out["num_ids"], out["total_gt_calls"], out["total_pred_calls"], out["matched"]) \
        == (3, 8, 27, 8)
    assert out["recall"] == 1.0
    assert out["precision"] == pytest.approx(8 / 27)        # pooled: Σ matched / Σ predicted
    assert out["avg_sim_all_cov"] == pytest.approx(0.78125)  # (0.85·2 + 0.775·2 + 0.75·4) / 8
    assert out["avg_sim_strong_cov"] == pytest.approx(0.45)
    assert out["step_coherence_cov"] == pytest.approx(0.75)
    assert out["order_consistency_cov"] == pytest.approx(5 / 8)
    assert out["merge_purity_cov"] == pytest.approx((2 + 2 + 4 * (1 - _h3())) / 8, abs=1e-9)
    assert out["avg_Rounds"] == pytest.approx(13 / 3) and out["avg_tool_calls"] == 9
    # the plain episode mean (m3gym's way) differs on this set
    plain = out["plain_mean"]
    assert plain["precision"] == pytest.approx(8 / 15)      # (2/5 + 1 + 1/5) / 3
    assert plain["order_consistency_cov"] == pytest.approx(7 / 12)
    assert plain["precision"] != pytest.approx(out["precision"])
    assert out["m3gym_mean"]["recall"] is None              # hand-built: no m3gym metrics


def test_m3bench_empty_task_is_perfect() -> None:
    empty = PeerEpisode("e0", 1, "x", ("x",))
    t = m3bench_task_metrics(empty)
    assert (t["recall"], t["precision"], t["step_coherence_cov"]) == (1.0, 1.0, 1.0)
    assert m3bench_metrics([empty, E1])["recall"] == 1.0    # weight 0


# ----------------------------------------------------------------------------- parsing


def test_parse_metric_names() -> None:
    assert parse_metric_names([]) == ("m3gym",)
    assert parse_metric_names(["amme,m3bench", "AMME"]) == ("amme", "m3bench")
    with pytest.raises(ValueError, match="unknown metric family"):
        parse_metric_names(["amme,mme"])


@given(st.lists(st.sampled_from(PEER_METRICS), min_size=1), st.sampled_from([",", ", ", " ,"]))
def test_parse_metric_names_joined(names: list[str], sep: str) -> None:
    got = parse_metric_names([sep.join(names)])
    assert got == tuple(dict.fromkeys(names))


def test_peer_episode_rejects_non_traces() -> None:
    with pytest.raises(ValueError, match="only finished episodes"):
        peer_episode({"status": "agent_error"})
    with pytest.raises(ValueError, match="not a finished m3gym trace"):
        peer_episode({"status": "ok"})


# ----------------------------------------------------------------------------- real run


def test_cli_metrics_flag_writes_blocks(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from m3gym.cli import main

    out = tmp_path / "run"
    rc = main(["eval", "--env", "M3Bench-L1-v4", "--agent", "oracle", "--episodes", "2",
               "--out", str(out), "--metrics", "amme", "--metrics", "m3bench", "--quiet"])
    assert rc == 0
    summary = json.loads((out / "summary.json").read_text())
    assert summary["metrics"] == ["amme", "m3bench"]
    amme = summary["amme"]["overall"]
    assert (amme["total_cases"], amme["final_answer_accuracy"], amme["acc_m3gym"]) == (2, 1.0, 1.0)
    assert (amme["avg_S"], amme["avg_V"], amme["avg_PQS"], amme["OT_paper"]) == (1.0, 1.0, 1.0, 0.0)
    m3b = summary["m3bench"]
    assert (m3b["num_ids"], m3b["recall"], m3b["precision"]) == (2, 1.0, 1.0)
    traces = sorted((out / "traces").glob("*.json"))
    eps = [peer_episode(json.loads(p.read_text())) for p in traces]
    assert m3b["total_gt_calls"] == sum(e.reference_calls for e in eps)
    assert main(["report", str(out), "--no-full-images"]) == 0
    md = (out / "report.md").read_text()
    assert "## Agentic-MME metrics" in md and "## M3-Bench metrics (call-weighted)" in md
    pred, gt = tmp_path / "pred.jsonl", tmp_path / "gt.json"
    assert main(["export", "m3bench-trajectories", str(out), str(pred), "--reference",
                 str(gt)]) == 0
    preds = [json.loads(line) for line in pred.read_text().splitlines()]
    refs = json.loads(gt.read_text())
    assert [p["id"] for p in preds] == [r["id"] for r in refs] == [e.episode_id for e in eps]
    for p, r in zip(preds, refs, strict=True):  # the oracle sends the reference's arguments
        assert [[c["arguments"] for c in s["calls"]] for s in p["steps"]] \
            == [[c["arguments"] for c in s["calls"]] for s in r["steps"]]
        assert all(c["raw_arguments"] for s in p["steps"] for c in s["calls"])
    capsys.readouterr()
    assert main(["eval", "--env", "M3Bench-L1-v4", "--out", str(tmp_path / "x"),
                 "--metrics", "amme,pqs", "--quiet"]) == 2
    assert "--metrics 'pqs': unknown metric family" in capsys.readouterr().err


def test_export_keeps_raw_arguments_and_falls_back() -> None:
    from m3gym.eval.m3bench_export import step_calls

    record = {"name": "web_search", "requested_name": "google_search", "ok": True,
              "arguments": {"query": "Nesol Museum", "top_k": 5, "label": None}}
    sent = {"id": "c1", "name": "google_search", "arguments": '{"query": "Nesol Museum"}'}
    assert step_calls({"calls": [record], "raw_action": sent}) == [
        {"name": "web_search", "arguments": {"query": "Nesol Museum"}, "raw_arguments": True}]
    text = '<tool_call>{"name": "google_search", "arguments": {"query": "Nesol"}}</tool_call>'
    assert step_calls({"calls": [record], "action": text})[0]["arguments"] == {"query": "Nesol"}
    # no recorded action (an older trace): validated arguments, unset fields dropped
    assert step_calls({"calls": [record], "action": None}) == [
        {"name": "web_search", "arguments": {"query": "Nesol Museum", "top_k": 5},
         "raw_arguments": False}]
    assert step_calls({"calls": [], "action": "<answer>x</answer>"}) == []


def test_export_rejects_non_run_folder(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    from m3gym.cli import main

    assert main(["export", "m3bench-trajectories", str(tmp_path), str(tmp_path / "o.jsonl")]) == 2
    assert "is not an m3gym run folder" in capsys.readouterr().err
