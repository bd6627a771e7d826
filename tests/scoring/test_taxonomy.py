"""The failure taxonomy on hand-built traces."""

from __future__ import annotations

from m3gym.scoring.checkpoint_tracker import CheckpointReport, CheckpointResult
from m3gym.scoring.taxonomy import (
    FAILURE_LABELS,
    VISUAL_TOOL_NAMES,
    classify_failure,
    failure_summary,
    needed_tools,
    needs_retrieval,
)
from m3gym.spec import Checkpoint, RefCall
from m3gym.trace import Trace
from tests.scoring.traces import call, task

CROP = Checkpoint("crop", "S", "crop_covers", {"evidence": "e0"})
VTRUE = Checkpoint("vt", "V", "v_true", {"evidence": "e0"})
HIT = Checkpoint("hit", "S", "search_hit", {"tool": "web_search", "url": "u"})
FETCH = Checkpoint("fetch", "S", "fetch", {"url": "u"})
CPS = (CROP, VTRUE, HIT, FETCH)


def report(passed: set[str], cps=CPS) -> CheckpointReport:
    return CheckpointReport.from_results(
        CheckpointResult(cp.id, cp.axis, cp.kind, cp.id in passed, None, None, "")
        for cp in cps)


def ok_visual():
    return [call("c0", "crop", bbox_2d=[0, 0, 500, 500]), call("c1", "autocontrast")]


def ok_search():
    return [call("s0", "web_search", query="q"), call("s1", "fetch_webpage", url="u")]


def classify(calls, passed, *, cps=CPS, correct=False, overthink=0.0, answer="x", errors=()):
    tr = Trace(steps=[calls], answer=answer, parse_errors=list(errors))
    return classify_failure(task(cps), tr, report(passed, cps), correct, overthink)


def test_correct_episode_has_no_label():
    assert classify(ok_visual() + ok_search(), set(), correct=True) is None


def test_tool_misexecution_by_share_and_by_never_succeeding():
    calls = [call("c0", "crop", ok=False), call("c1", "crop", ok=False), *ok_search()[:1]]
    assert classify(calls, set()) == "tool_misexecution"
    # parse errors count as failed attempts
    assert classify(ok_search(), {"hit", "fetch"},
                    errors=[(0, "bad json"), (1, "bad json")]) == "tool_misexecution"
    # one failed crop among many successes: crop needed and never succeeded
    calls = [call("c0", "crop", ok=False), *ok_search(), call("g", "grayscale"),
             call("g2", "sharpen")]
    assert classify(calls, {"hit", "fetch"}) == "tool_misexecution"


def test_missing_visual_tool_use():
    assert classify(ok_search(), {"hit", "fetch"}) == "missing_visual_tool_use"


def test_unfaithful_visual_tool_use():
    calls = ok_visual() + ok_search()
    assert classify(calls, {"hit", "fetch", "crop"}) == "unfaithful_visual_tool_use"
    assert classify(calls, {"hit", "fetch", "vt"}) == "unfaithful_visual_tool_use"


def test_missing_search():
    assert classify(ok_visual(), {"crop", "vt"}) == "missing_search"
    # a reference retrieval call alone also makes search necessary
    ref = ((RefCall("r0", "web_search", {"query": "q"}),),)
    tr = Trace(steps=[ok_visual()], answer="x")
    t = task((CROP,), reference=ref)
    assert classify_failure(t, tr, report({"crop"}, (CROP,)), False) == "missing_search"


def test_bad_search_query():
    assert classify(ok_visual() + ok_search(), {"crop", "vt", "fetch"}) == "bad_search_query"


def test_overthinking_collapse():
    calls = ok_visual() + ok_search() + [call(f"x{i}", "grayscale") for i in range(6)]
    assert classify(calls, set(c.id for c in CPS), overthink=2.0) == "overthinking_collapse"
    # budget exhausted without an answer
    assert classify(calls, set(c.id for c in CPS), overthink=0.0,
                    answer=None) == "overthinking_collapse"
    # few calls: not overthinking even with a high OT
    assert classify(ok_visual() + ok_search(), set(c.id for c in CPS),
                    overthink=2.0) == "post_visual_perception_deficit"


def test_post_visual_perception_deficit():
    assert classify(ok_visual() + ok_search(), set(c.id for c in CPS)) == \
        "post_visual_perception_deficit"


def test_every_label_is_reachable_and_summary():
    labels = [
        classify([call("c0", "crop", ok=False)], set()),
        classify(ok_search(), {"hit", "fetch"}),
        classify(ok_visual() + ok_search(), {"hit", "fetch", "crop"}),
        classify(ok_visual(), {"crop", "vt"}),
        classify(ok_visual() + ok_search(), {"crop", "vt", "fetch"}),
        classify(ok_visual() + ok_search() + [call(f"x{i}", "sharpen") for i in range(4)],
                 {c.id for c in CPS}, overthink=1.5),
        classify(ok_visual() + ok_search(), {c.id for c in CPS}),
        None,
    ]
    assert sorted(lab for lab in labels if lab) == sorted(FAILURE_LABELS)
    summary = failure_summary(labels)
    assert summary["correct"] == 1 and all(v == 1 for v in summary["failures"].values())


def _cp(kind, **params):
    return Checkpoint(kind, "S", kind, params)


def test_needed_tools_per_checkpoint_kind():
    assert needed_tools(_cp("crop_covers", evidence="e0")) == {"crop"}
    assert needed_tools(_cp("rotate_upright", evidence="e0")) == {"rotate", "flip"}
    for kind in ("contrast_op", "global_op", "v_tool"):
        assert needed_tools(_cp(kind, tools=["autocontrast", "equalize"])) == {
            "autocontrast", "equalize"}
        assert needed_tools(_cp(kind)) == frozenset()
    assert needed_tools(_cp("search_hit", tool="image_search", url="u")) == {"image_search"}
    assert needed_tools(_cp("search_hit", url="u")) == {"web_search"}
    assert needed_tools(_cp("fetch", url="u")) == {"fetch_webpage"}
    assert needed_tools(_cp("v_true", evidence="e0")) == VISUAL_TOOL_NAMES
    assert needed_tools(_cp("no_such_kind")) == frozenset()


def test_needs_retrieval_from_checkpoints_or_reference():
    assert not needs_retrieval(task((CROP, VTRUE)))
    assert needs_retrieval(task((CROP, FETCH)))
    ref = ((RefCall("r", "google_search", {"query": "q"}),),)
    assert needs_retrieval(task((CROP,), reference=ref))
    assert not needs_retrieval(task((CROP,), reference=((RefCall("r", "crop", {}),),)))


def test_misexecution_share_is_a_share_and_aliases_resolve():
    # 1 failed call (not a needed tool) of 5 attempts: under the share, not misexecution
    calls = ok_visual() + ok_search() + [call("x", "invert", ok=False)]
    assert classify(calls, {c.id for c in CPS}) == "post_visual_perception_deficit"
    # the needed web_search was attempted as google_search and never succeeded
    calls = ok_visual() + [call("g", "google_search", ok=False, query="q"),
                           call("s1", "fetch_webpage", url="u"), call("s2", "sharpen")]
    assert classify(calls, {"crop", "vt", "fetch"}) == "tool_misexecution"


def test_failed_v_true_with_every_visual_call_failing_is_misexecution():
    calls = [call("v", "sharpen", ok=False), *ok_search(), call("s2", "image_search")]
    assert classify(calls, {"hit", "fetch"}, cps=(VTRUE, HIT, FETCH)) == "tool_misexecution"
    # v_true passed: its "any visual tool" is not a needed tool, one failed sharpen is fine
    calls = [call("c", "crop"), call("v", "sharpen", ok=False), *ok_search()]
    assert classify(calls, {"vt", "hit", "fetch"}, cps=(VTRUE, HIT, FETCH)) == \
        "post_visual_perception_deficit"


def test_overthinking_thresholds_are_inclusive():
    six = ok_visual() + ok_search() + [call("e1", "sharpen"), call("e2", "equalize")]
    passed = {c.id for c in CPS}
    assert classify(six, passed, overthink=1.0) == "overthinking_collapse"
    assert classify(six, passed, overthink=0.99) == "post_visual_perception_deficit"
    assert classify(six[:5], passed, overthink=5.0) == "post_visual_perception_deficit"
    assert classify(six, passed, overthink=0.5, answer=None) == "overthinking_collapse"
    assert classify(six[:5], passed, overthink=0.5, answer=None) == \
        "post_visual_perception_deficit"


def test_failure_summary_counts_repeats():
    summary = failure_summary([None, "missing_search", None, "missing_search", "other"])
    assert summary["correct"] == 2
    assert summary["failures"]["missing_search"] == 2
    assert summary["failures"]["other"] == 1
    assert summary["failures"]["tool_misexecution"] == 0
