"""Alignment and M3-Bench metrics on hand-built traces, with values computed by hand."""

from __future__ import annotations

import json
import math

import pytest

from m3gym.scoring.alignment import (
    TAU_STRONG,
    TAU_WEAK,
    align,
    angle_similarity,
    box_iou,
    number_similarity,
    text_similarity,
    value_similarity,
)
from m3gym.trace import TraceCall
from tests.scoring.traces import REFERENCE, A, B, cr, rc

B2 = [500, 500, 1000, 900]



def split_merged_trace() -> list[list[TraceCall]]:
    """Reference step 0 split over predicted steps 0 and 2; reference steps 1 and 2 merged."""
    return [
        [cr(0, "c1", "crop", out=1, image_index=0, bbox_2d=A, zoom_scale=1.0, label=None)],
        [cr(1, "c3", "web_search", query="acme corp founder", top_k=10),
         cr(1, "c4", "fetch_webpage", url="http://www.wiki.local/acme/", max_chars=12000)],
        [cr(2, "c2", "crop", out=2, image_index=0, bbox_2d=B2, zoom_scale=1.0)],
        [cr(3, "c5", "grayscale", out=3, image_index=1),
         cr(3, "c6", "crop", ok=False, image_index=9, bbox_2d=A)],
    ]


def test_value_similarities() -> None:
    assert number_similarity(5, 10) == 0.5  # 1 - 5/10
    assert number_similarity(0, 0) == 1.0
    assert number_similarity(-1, 1) == 0.0  # 1 - 2/1 clipped
    assert angle_similarity(350, 10) == pytest.approx(1 - 20 / 180)
    assert angle_similarity(90, -270) == 1.0
    assert angle_similarity(0, 180) == 0.0
    assert box_iou(B, B2) == pytest.approx(0.8)  # 500*400 / (500*500)
    assert text_similarity("acme founder", "founder acme") == 1.0
    assert value_similarity("direction", "horizontal", "vertical") == 0.0
    assert value_similarity("expand", True, 1) == 0.0
    assert value_similarity("url", "https://a.b/c/", "http://www.A.b/c") == 1.0
    assert value_similarity("bbox_2d", [0, 0, 1], A) == 0.0


def test_metrics_on_split_and_merged_steps() -> None:
    al = align(REFERENCE, 1, split_merged_trace())
    m = al.metrics
    sims = {p.ref_id: p.sim for p in al.matches}
    # r1: image_index 1, bbox 1, zoom_scale (ref default 1.0) 1 -> 1
    # r2: bbox IoU 0.8, image_index 1, zoom 1 -> 2.8/3 = 14/15
    # r3: query 1, top_k 5 vs 10 -> 0.5 -> 1.5/2 = 0.75 (weak match)
    # r4: url equal after normalization 1, max_chars 12000 = default 1 -> 1
    assert sims == pytest.approx({"r1": 1.0, "r2": 14 / 15, "r3": 0.75, "r4": 1.0})
    assert {p.ref_id: p.call_id for p in al.matches} == {"r1": "c1", "r2": "c2", "r3": "c3",
                                                        "r4": "c4"}
    assert [p.strong for p in al.matches] == [True, True, False, True]
    assert al.unmatched_reference == ()
    assert al.unmatched_predicted == ("c5", "c6")
    assert m.recall == 1.0  # 4 / 4
    assert m.precision == pytest.approx(4 / 6)  # failed c6 and extra c5 count
    assert m.num_failed == 1
    # arg sim = recall * mean(1, 14/15, 3/4, 1) = (60 + 56 + 45 + 60) / 240 = 221/240
    assert m.arg_similarity == pytest.approx(221 / 240)
    # strong: 3 strong of 4 reference calls, mean (1 + 14/15 + 1)/3 = 44/45 -> 3/4*44/45 = 11/15
    assert m.arg_similarity_strong == pytest.approx(11 / 15)
    # step 0: n=2, cov=1, k=2 -> frag 1/2 -> 2*1*0.5 = 1; steps 1, 2: 1 each -> 3 / 4
    assert m.step_coherence == pytest.approx(0.75)
    # matched (ref step, pred step): r1 (0,0) r2 (0,2) r3 (1,1) r4 (2,1)
    # comparable pairs (different ref and pred steps): r1-r3 ok, r1-r4 ok, r2-r3 inv, r2-r4 inv
    # -> inversion rate 2/4; pair coverage (2*1 + 2*1 + 1*1) / 5 = 1 -> 0.5
    assert m.order_consistency == pytest.approx(0.5)
    # W: g0 -> p0: 1, p2: 14/15; g1 -> p1: 3/4; g2 -> p1: 1.  Only column p1 is mixed:
    # q = (3/7, 4/7), P(p1) = (7/4) / (221/60) = 105/221, G_active = 3
    h_p1 = -(3 / 7 * math.log(3 / 7) + 4 / 7 * math.log(4 / 7))
    assert m.merge_purity == pytest.approx(1 - (105 / 221) * h_p1 / math.log(3))
    json.dumps(al.to_dict())


def test_perfect_replay_scores_one() -> None:
    trace = [
        [cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A),
         cr(0, "b", "crop", out=2, image_index=0, bbox_2d=B)],
        [cr(1, "c", "web_search", query="acme corp founder")],
        [cr(2, "d", "fetch_webpage", url="https://wiki.local/acme")],
    ]
    m = align(REFERENCE, 1, trace).metrics
    for value in (m.recall, m.precision, m.arg_similarity, m.arg_similarity_strong,
                  m.step_coherence, m.order_consistency, m.merge_purity):
        assert value == 1.0


def test_one_step_reference_pair_coverage_falls_back_to_recall() -> None:
    ref = ((rc("r1", "crop", image_index=0, bbox_2d=A), rc("r2", "crop", image_index=0,
                                                          bbox_2d=B)),)
    trace = [[cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A)]]
    m = align(ref, 1, trace).metrics
    assert m.recall == 0.5
    assert m.order_consistency == 0.5  # no comparable pair -> 1 * recall
    assert m.merge_purity == 0.5  # G_active = 1 -> entropy 0 -> 1 * recall
    assert m.step_coherence == 0.5  # n=2, cov=1/2, k=1 -> 2*0.5*1 / 2


def test_failed_calls_are_not_aligned() -> None:
    ref = ((rc("r1", "crop", image_index=0, bbox_2d=A),),)
    trace = [[cr(0, "a", "crop", ok=False, image_index=0, bbox_2d=A)]]
    al = align(ref, 1, trace)
    assert al.matches == ()
    assert al.metrics.precision == 0.0 and al.metrics.num_predicted == 1


def test_below_weak_threshold_is_dropped() -> None:
    ref = ((rc("r1", "crop", image_index=0, bbox_2d=A),),)
    # image 1 (not an input): 0; bbox IoU 0; zoom default 1 -> 1/3 < 0.6
    trace = [[cr(0, "a", "crop", out=2, image_index=1, bbox_2d=B)]]
    al = align(ref, 2, trace)
    assert al.matches == () and al.unmatched_reference == ("r1",)
    assert TAU_WEAK == 0.6 and TAU_STRONG == 0.8


def test_crop_of_crop_boxes_compare_in_root_coordinates() -> None:
    ref = (
        (rc("r1", "crop", image_index=0, bbox_2d=A),),
        (rc("r2", "crop", ("r1",), image_index=1, bbox_2d=A),),  # root box [0, 0, 250, 250]
    )
    # The agent crops the same region straight from the original.
    trace = [
        [cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A)],
        [cr(1, "b", "crop", out=2, image_index=0, bbox_2d=[0, 0, 250, 250], zoom_scale=1.0)],
    ]
    al = align(ref, 1, trace)
    sims = {p.ref_id: p.sim for p in al.matches}
    # r2 ~ b: root IoU 1 (raw IoU would be 0.25), image 1 vs 0 -> 0 (b reads no aligned
    # producer's image), zoom_scale 1.0 = default -> 1 -> 2/3
    assert sims == pytest.approx({"r1": 1.0, "r2": 2 / 3})


def test_image_index_through_aligned_producer_and_flip() -> None:
    ref = (
        (rc("r1", "flip", image_index=0, direction="horizontal"),),
        (rc("r2", "crop", ("r1",), image_index=1, bbox_2d=[0, 0, 100, 100]),),
    )
    # Flip is replayed; the crop reads the flipped image with the same box -> all 1.
    replay = [
        [cr(0, "a", "flip", out=1, image_index=0, direction="horizontal")],
        [cr(1, "b", "crop", out=2, image_index=1, bbox_2d=[0, 0, 100, 100])],
    ]
    assert [p.sim for p in align(ref, 1, replay).matches] == [1.0, 1.0]
    # Cropping the mirrored box on the original covers the same root region:
    # flip maps x in [0, 0.1] to [0.9, 1.0] -> IoU 1; image index 0 vs produced 1 -> 0;
    # zoom_scale 1.0 = the reference's default -> 1 -> 2/3.
    direct = [
        [cr(0, "a", "flip", out=1, image_index=0, direction="horizontal")],
        [cr(1, "b", "crop", out=2, image_index=0, bbox_2d=[900, 0, 1000, 100], zoom_scale=1.0)],
    ]
    assert [p.sim for p in align(ref, 1, direct).matches] == pytest.approx([1.0, 2 / 3])


def test_empty_reference() -> None:
    assert align((), 1, []).metrics.precision == 1.0
    m = align((), 1, [[cr(0, "a", "web_search", query="x")]]).metrics
    assert (m.recall, m.precision, m.merge_purity) == (1.0, 0.0, 0.0)


def test_permutation_within_step_changes_nothing() -> None:
    trace = split_merged_trace()
    swapped = [list(reversed(s)) for s in trace]
    assert align(REFERENCE, 1, trace).to_dict() == align(REFERENCE, 1, swapped).to_dict()


def test_missing_and_none_arguments_use_defaults() -> None:
    ref = ((rc("r1", "resize", image_index=0, width=200, height=100),
            rc("r2", "threshold", image_index=0)),)
    trace = [[
        # validated arguments carry unset optionals as None: same as omitted -> all 1
        cr(0, "a", "resize", out=1, image_index=0, width=200, height=100, scale=None, label=None),
        # value 128 and mode binary are the defaults; the reference omits them -> 1
        # keys {image_index, value, mode}: value 64 vs default 128 -> 1 - 64/128 = 0.5
        cr(0, "b", "threshold", out=2, image_index=0, value=64, mode="binary"),
    ]]
    sims = {p.ref_id: p.sim for p in align(ref, 1, trace).matches}
    assert sims == pytest.approx({"r1": 1.0, "r2": (1 + 0.5 + 1) / 3})
    # A key without a default on one side only scores 0: keys {image_index, width, height,
    # scale} -> (1 + 1 + 1 + 0) / 4
    odd = [[cr(0, "a", "resize", out=1, image_index=0, width=200, height=100, scale=2.0)]]
    assert align(ref, 1, odd).matches[0].sim == pytest.approx(0.75)


def test_builtin_defaults_agree_with_tool_models() -> None:
    visual = pytest.importorskip("m3gym.tools.visual")
    from m3gym.scoring.alignment import DEFAULT_ARGUMENTS, defaults_from_registry
    from m3gym.tools.registry import ToolRegistry

    found = defaults_from_registry(ToolRegistry(visual.VISUAL_TOOLS))
    for tool, args in found.items():
        assert args == dict(DEFAULT_ARGUMENTS.get(tool, {})), tool
