"""The M3 score and the overthink penalty: hand-computed cases and hypothesis properties."""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.scoring.alignment import NON_IMAGE_TOOLS, align
from m3gym.scoring.m3 import (
    M3Weights,
    descends_from,
    f1,
    m3_score,
    parents_from_trace,
    score_trace,
)
from m3gym.scoring.overthink import agent_interactions, overthink, overthink_score
from m3gym.spec import RefCall
from m3gym.trace import TraceCall
from tests.scoring.traces import REFERENCE, A, B, cr, rc

CHAIN = (
    (rc("r1", "crop", image_index=0, bbox_2d=A),),
    (rc("r2", "rotate", ("r1",), image_index=1, angle=90),),
)


def split_trace() -> list[list[TraceCall]]:
    """Return a trace that splits REFERENCE's parallel crops and merges its search and fetch."""
    return [
        [cr(0, "c1", "crop", out=1, image_index=0, bbox_2d=A)],
        [cr(1, "c3", "web_search", query="acme corp founder", top_k=10),
         cr(1, "c4", "fetch_webpage", url="https://wiki.local/acme")],
        [cr(2, "c2", "crop", out=2, image_index=0, bbox_2d=B)],
        [cr(3, "c5", "grayscale", out=3, image_index=1),
         cr(3, "c6", "crop", ok=False, image_index=9, bbox_2d=A)],
    ]


# ----------------------------------------------------------------------------- hand-built cases


def test_split_and_merged_trace_m3_and_overthink() -> None:
    trace = split_trace()
    al, m3 = score_trace(REFERENCE, 1, trace)
    # recall 4/4, precision 4/6 -> F1 = 2*(2/3)/(5/3) = 4/5
    assert m3.multi_modal == pytest.approx(0.8)
    # r1 -> r3 (not an image edge): c3 in step 1 > c1 in step 0 -> pass
    # r3 -> r4: c4 issued in the same step as c3 (results not seen) -> fail  => 1/2
    assert (m3.hop_edges, m3.hop_passed, m3.multi_hop) == (2, 1, 0.5)
    # group {r1, r2} landed in predicted steps 0 and 2 -> 0/1
    assert (m3.parallel_groups, m3.parallel_passed, m3.multi_threaded) == (1, 0, 0.0)
    assert m3.total == pytest.approx((0.8 + 0.5 + 0.0) / 3)
    # C_agent = 6 (failed c6 counts), C_ref = 4 -> (6 - 4) / (4 + 1)
    assert overthink_score(REFERENCE, trace) == pytest.approx(0.4)
    json.dumps(m3.to_dict())
    assert al.metrics.num_matched == 4


def test_multi_hop_image_edge_passes_on_right_data_flow() -> None:
    trace = [
        [cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A)],
        [cr(1, "b", "rotate", out=2, image_index=1, angle=90)],
    ]
    _, m3 = score_trace(CHAIN, 1, trace)
    assert (m3.multi_hop, m3.multi_threaded) == (1.0, None)
    assert m3.total == 1.0  # mean of multi_modal 1 and multi_hop 1


def test_multi_hop_right_tools_wrong_data_flow_fails() -> None:
    # The rotate reads the original image instead of the crop. It is still matched:
    # angle 1, expand (default both sides) absent -> keys {angle, image_index}: image 0 is not
    # the aligned producer's output -> 0 ... = 1/2 < 0.6, so add expand to make it a match:
    trace = [
        [cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A)],
        [cr(1, "b", "rotate", out=2, image_index=0, angle=90, expand=True)],
    ]
    al, m3 = score_trace(CHAIN, 1, trace)
    # rotate sim = (angle 1 + expand 1 (ref default True) + image 0) / 3 = 2/3 -> matched
    assert [p.sim for p in al.matches] == pytest.approx([1.0, 2 / 3])
    assert m3.multi_modal == 1.0
    assert (m3.hop_edges, m3.hop_passed) == (1, 0)
    assert m3.total == pytest.approx(0.5)  # (1 + 0) / 2


def test_multi_hop_uses_given_parents() -> None:
    # The trace's own lineage says image 2 comes from image 0; explicit parents say image 1.
    trace = [
        [cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A)],
        [cr(1, "b", "rotate", out=2, image_index=0, angle=90, expand=True)],
    ]
    al = align(CHAIN, 1, trace)
    assert parents_from_trace(trace) == {1: 0, 2: 0}
    # An agent-side lineage in which the rotate's input (image 0) derives from image 1.
    m3 = m3_score(CHAIN, 1, trace, al, parents=[1, 0, 0])
    assert m3.multi_hop == 1.0


def test_unmatched_endpoint_fails_edge_and_group() -> None:
    trace = [[cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A)]]
    _, m3 = score_trace(REFERENCE, 1, trace)
    # recall 1/4, precision 1 -> F1 = 2*(1/4)/(5/4) = 2/5; both edges miss an endpoint;
    # the parallel group lacks r2.
    assert m3.multi_modal == pytest.approx(0.4)
    assert (m3.multi_hop, m3.multi_threaded) == (0.0, 0.0)
    assert m3.total == pytest.approx(0.4 / 3)


def test_multi_threaded_group_in_one_step_passes() -> None:
    ref = ((rc("r1", "web_search", query="alpha"), rc("r2", "web_search", query="beta")),)
    together = [[cr(0, "a", "web_search", query="alpha"), cr(0, "b", "web_search", query="beta")]]
    apart = [[cr(0, "a", "web_search", query="alpha")], [cr(1, "b", "web_search", query="beta")]]
    _, m_together = score_trace(ref, 0, together)
    _, m_apart = score_trace(ref, 0, apart)
    assert (m_together.multi_threaded, m_together.multi_hop, m_together.total) == (1.0, None, 1.0)
    assert m_apart.multi_threaded == 0.0
    assert m_apart.total == 0.5  # (F1 1 + threaded 0) / 2


def test_weights_renormalize_over_existing_terms() -> None:
    trace = [
        [cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A)],
        [cr(1, "b", "rotate", out=2, image_index=0, angle=90, expand=True)],
    ]
    al = align(CHAIN, 1, trace)
    # multi_modal 1 (w=1), multi_hop 0 (w=3), multi_threaded absent (w=5 ignored) -> 1/4
    m3 = m3_score(CHAIN, 1, trace, al, weights=M3Weights(1.0, 3.0, 5.0))
    assert m3.total == pytest.approx(0.25)
    assert m3.components == {"multi_modal": 1.0, "multi_hop": 0.0}
    zero = m3_score(((rc("r", "grayscale", image_index=0),),), 1, [], align(
        ((rc("r", "grayscale", image_index=0),),), 1, []), weights=M3Weights(0.0, 1.0, 1.0))
    assert zero.total == 0.0  # the only existing term has weight 0: no free 1.0
    with pytest.raises(ValueError, match="multi_hop"):
        M3Weights(multi_hop=-1.0)


def test_unknown_dependency_is_a_reference_bug() -> None:
    ref = ((rc("r1", "web_search", ("nope",), query="x"),),)
    with pytest.raises(ValueError, match="unknown id 'nope'"):
        score_trace(ref, 0, [])


def test_overthink_counts() -> None:
    assert overthink(3, 4) == 0.0
    assert overthink(7, 4) == pytest.approx(3 / 5)
    assert overthink(1, 0) == 1.0
    assert agent_interactions([[cr(0, "a", "crop", ok=False)], []]) == 1
    assert f1(0.0, 0.0) == 0.0


def test_overthink_counts_failed_calls_but_not_the_answer() -> None:
    steps = [[cr(0, "a", "crop", out=1, image_index=0), cr(0, "b", "zoom", ok=False)],
             [cr(1, "c", "web_search", query="x")], [cr(2, "answer", "answer", text="12")]]
    assert agent_interactions(steps) == 3
    # C_ref = 1, C_agent = 3: OT = (3 - 1) / (1 + 1) = 1.0
    assert overthink_score(CHAIN[:1], steps) == 1.0
    # C_ref = 4 (REFERENCE): under budget, no penalty
    assert overthink_score(REFERENCE, steps) == 0.0


# ----------------------------------------------------------------------------- properties

VISUAL = ("crop", "rotate", "grayscale", "flip")
WORDS = ("acme", "founder", "logo", "river", "museum", "year", "plaque", "signal")


def random_reference(rng: np.random.Generator, n_inputs: int) -> tuple[tuple[RefCall, ...], ...]:
    """A random but well-formed reference (images only read once they exist)."""
    steps = []
    n_images = n_inputs
    producer: dict[int, str] = {}
    searches: list[str] = []
    ids: list[str] = []
    for _ in range(int(rng.integers(1, 5))):
        step = []
        visible = n_images
        for _ in range(int(rng.integers(1, 4))):
            cid = f"r{len(ids) + len(step)}"
            kind = str(rng.choice(["visual", "visual", "web_search", "fetch_webpage",
                                   "download_image", "image_search"]))
            img = int(rng.integers(0, visible))
            deps = (producer[img],) if img in producer else ()
            if kind == "visual":
                name = str(rng.choice(VISUAL))
                args: dict[str, Any] = {"image_index": img}
                if name == "crop":
                    x = np.sort(rng.integers(0, 1001, 2))
                    y = np.sort(rng.integers(0, 1001, 2))
                    args["bbox_2d"] = [int(x[0]), int(y[0]), int(x[1]) + 1, int(y[1]) + 1]
                elif name == "rotate":
                    args["angle"] = int(rng.choice([90, 180, 270, 15]))
                elif name == "flip":
                    args["direction"] = str(rng.choice(["horizontal", "vertical", "both"]))
            elif kind == "web_search":
                name, deps = kind, (str(rng.choice(ids)),) if ids and rng.random() < 0.5 else ()
                args = {"query": " ".join(rng.choice(WORDS, 3).tolist())}
            elif kind == "fetch_webpage":
                name = kind
                deps = (searches[-1],) if searches else ()
                args = {"url": f"https://wiki.local/{rng.choice(WORDS)}"}
            elif kind == "download_image":
                name, deps, args = kind, (), {"url": f"https://img.local/{rng.choice(WORDS)}.png"}
            else:
                name, args = kind, {"image_index": img}
            step.append(rc(cid, name, deps, **args))
            if name not in NON_IMAGE_TOOLS:
                producer[n_images] = cid
                n_images += 1
        ids.extend(c.id for c in step)
        searches.extend(c.id for c in step if c.name == "web_search")
        steps.append(tuple(step))
    return tuple(steps)


def replay(reference: tuple[tuple[RefCall, ...], ...], n_inputs: int) -> list[list[TraceCall]]:
    """The trace of an agent that replays the reference exactly."""
    trace, next_image, n = [], n_inputs, 0
    for s, step in enumerate(reference):
        calls = []
        for r in step:
            out = None
            if r.name not in NON_IMAGE_TOOLS:
                out, next_image = next_image, next_image + 1
            calls.append(cr(s, f"c{n}", r.name, out=out, **dict(r.arguments)))
            n += 1
        trace.append(calls)
    return trace


def perturbed(trace: list[list[TraceCall]], rng: np.random.Generator) -> list[list[TraceCall]]:
    """Drop, fail, jitter and regroup calls of a trace (image indices stay unique)."""
    flat = [c for step in trace for c in step]
    out: list[list[TraceCall]] = [[] for _ in range(len(trace) + 2)]
    for c in flat:
        u = rng.random()
        if u < 0.15:
            continue
        args = dict(c.arguments)
        if "bbox_2d" in args and rng.random() < 0.5:
            args["bbox_2d"] = [min(1000, v + int(rng.integers(0, 150))) for v in args["bbox_2d"]]
        if "query" in args and rng.random() < 0.5:
            args["query"] = " ".join(rng.choice(WORDS, 2).tolist())
        if "image_index" in args and rng.random() < 0.2:
            args["image_index"] = int(rng.integers(0, 4))
        step = min(len(out) - 1, max(0, c.step + int(rng.integers(-1, 2))))
        out[step].append(TraceCall(step, c.call_id, c.name, c.name, args, ok=rng.random() > 0.1,
                                    output_index=c.output_index,
                                    input_index=args.get("image_index")))
    return [s for s in out if s]


def all_values(al: Any, m3: Any) -> list[float]:
    m = al.metrics
    vals = [m.recall, m.precision, m.arg_similarity, m.arg_similarity_strong, m.step_coherence,
            m.order_consistency, m.merge_purity, m3.total, *m3.components.values()]
    return vals + [p.sim for p in al.matches]


SEEDS = st.integers(0, 2**32 - 1)


@settings(max_examples=60, deadline=None)
@given(SEEDS, st.integers(1, 3))
def test_perfect_replay_scores_one_everywhere(seed: int, n_inputs: int) -> None:
    ref = random_reference(np.random.default_rng(seed), n_inputs)
    trace = replay(ref, n_inputs)
    al, m3 = score_trace(ref, n_inputs, trace)
    assert all(v == 1.0 for v in all_values(al, m3)), al.to_dict()
    assert overthink_score(ref, trace) == 0.0


@settings(max_examples=60, deadline=None)
@given(SEEDS, st.integers(1, 3))
def test_values_finite_and_in_unit_interval(seed: int, n_inputs: int) -> None:
    rng = np.random.default_rng(seed)
    ref = random_reference(rng, n_inputs)
    trace = perturbed(replay(random_reference(rng, n_inputs) if rng.random() < 0.3 else ref,
                             n_inputs), rng)
    al, m3 = score_trace(ref, n_inputs, trace)
    for v in all_values(al, m3):
        assert math.isfinite(v) and 0.0 <= v <= 1.0
    ot = overthink_score(ref, trace)
    assert math.isfinite(ot) and ot >= 0.0


@settings(max_examples=60, deadline=None)
@given(SEEDS)
def test_permuting_calls_within_a_step_changes_nothing(seed: int) -> None:
    rng = np.random.default_rng(seed)
    ref = random_reference(rng, 2)
    trace = perturbed(replay(ref, 2), rng)
    shuffled = [[step[i] for i in rng.permutation(len(step))] for step in trace]
    a1, m1 = score_trace(ref, 2, trace)
    a2, m2 = score_trace(ref, 2, shuffled)
    assert a1.to_dict() == a2.to_dict()
    assert m1.to_dict() == m2.to_dict()


@settings(max_examples=60, deadline=None)
@given(SEEDS, st.booleans())
def test_redundant_call_never_raises_m3_nor_lowers_overthink(seed: int, failed: bool) -> None:
    rng = np.random.default_rng(seed)
    ref = random_reference(rng, 1)
    trace = perturbed(replay(ref, 1), rng) or [[]]
    used = {r.name for step in ref for r in step}
    # Redundant: a successful call of a tool the reference never uses, or a failed call of any.
    spare = [t for t in ("invert", "sharpen", "equalize", "web_search") if t not in used]
    name = str(rng.choice(["crop", *used])) if failed or not spare else str(rng.choice(spare))
    taken = [c.output_index for s in trace for c in s if c.output_index is not None]
    extra = cr(0, "zz_extra", name, ok=not failed,
               out=None if failed or name in NON_IMAGE_TOOLS else max(taken, default=0) + 1,
               image_index=0, query="acme")
    where = int(rng.integers(0, len(trace) + 1))
    longer = [list(s) for s in trace] + [[]]
    longer[where].append(extra)
    longer = [s for s in longer if s]
    _, before = score_trace(ref, 1, trace)
    _, after = score_trace(ref, 1, longer)
    assert after.total <= before.total + 1e-12
    assert overthink_score(ref, longer) >= overthink_score(ref, trace)


# ----------------------------------------------------------------------------- pinned details


def test_f1_below_one_sum_and_to_dict_pinned() -> None:
    assert f1(0.3, 0.2) == pytest.approx(2 * 0.06 / 0.5)  # recall + precision < 1
    trace = [
        [cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A)],
        [cr(1, "b", "rotate", out=2, image_index=0, angle=90, expand=True)],
    ]
    m3 = m3_score(CHAIN, 1, trace, align(CHAIN, 1, trace), weights=M3Weights(2.0, 1.0, 4.0))
    assert m3.to_dict() == {
        "multi_modal": 1.0, "multi_hop": 0.0, "multi_threaded": None,
        "total": pytest.approx(2 / 3),
        "exists": {"multi_modal": True, "multi_hop": True, "multi_threaded": False},
        "hop_edges": 1, "hop_passed": 0, "parallel_groups": 0, "parallel_passed": 0,
        "weights": {"multi_modal": 2.0, "multi_hop": 1.0, "multi_threaded": 4.0},
    }
    together = [[cr(0, "a", "web_search", query="alpha"), cr(0, "b", "web_search", query="beta")]]
    ref = ((rc("r1", "web_search", query="alpha"), rc("r2", "web_search", query="beta")),)
    d = score_trace(ref, 0, together)[1].to_dict()
    assert d["exists"] == {"multi_modal": True, "multi_hop": False, "multi_threaded": True}
    assert (d["parallel_groups"], d["parallel_passed"]) == (1, 1)


def test_weighted_total_multiplies_values_by_weights() -> None:
    # multi_modal 0.8 (w 2), multi_hop 0.5 (w 1), multi_threaded 0.0 (w 1): (1.6 + 0.5) / 4
    trace = split_trace()
    w = M3Weights(2.0, 1.0, 1.0)
    _, m3 = score_trace(REFERENCE, 1, trace, weights=w)
    assert m3.total == pytest.approx((2 * 0.8 + 0.5 + 0.0) / 4)
    assert m3.weights == w


def test_parents_from_trace_skips_failed_calls_and_roots_downloads() -> None:
    trace = [[cr(0, "a", "crop", out=1, image_index=0),
              cr(0, "b", "download_image", out=2, image_index=1, url="https://x/y.png")],
             [cr(1, "c", "crop", ok=False, out=3, image_index=1), cr(1, "d", "web_search")]]
    assert parents_from_trace(trace) == {1: 0, 2: None}


def test_descends_from_mapping_sequence_bounds_and_cycles() -> None:
    assert descends_from({2: 1, 1: 0}, 2, 0)
    assert not descends_from({2: 1, 1: None}, 2, 0)
    assert descends_from([None, 0, 1, 2], 3, 0)  # a chain as long as the sequence
    assert descends_from([None, 0], 1, 1)
    assert not descends_from([None, 0], 2, 0)  # index == len: no parent, no IndexError
    assert not descends_from([None, 0], 5, 0)
    assert not descends_from({0: 1, 1: 0}, 0, 5)  # a cycle ends, without the ancestor


# r1 crop -> image 1; r2 rotate(image 1) -> image 2; r3 crop(image 2) reads a descendant of r1
DEEP = (
    (rc("r1", "crop", image_index=0, bbox_2d=A),),
    (rc("r2", "rotate", ("r1",), image_index=1, angle=90),),
    (rc("r3", "crop", ("r1", "r2"), image_index=2, bbox_2d=B),),
)


def test_image_edge_through_a_descendant_needs_data_flow() -> None:
    right = [[cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A)],
             [cr(1, "b", "rotate", out=2, image_index=1, angle=90)],
             [cr(2, "c", "crop", out=3, image_index=2, bbox_2d=B)]]
    _, m3 = score_trace(DEEP, 1, right)
    assert (m3.hop_edges, m3.hop_passed) == (3, 3)
    # a lineage in which image 2 (the rotate's output) is a root: r3's input no longer derives
    # from r1's output, and r1 -> r3 is an image edge (r3 reads a descendant of r1): it fails
    m3 = m3_score(DEEP, 1, right, align(DEEP, 1, right), parents={1: 0, 2: None, 3: 2})
    assert (m3.hop_edges, m3.hop_passed) == (3, 2)


def test_reference_download_is_a_root_and_bool_index_is_no_image() -> None:
    ref = ((rc("r0", "crop", image_index=0, bbox_2d=A),),
           (rc("r1", "download_image", image_index=1, url="https://x/y.png"),),
           (rc("r2", "crop", ("r0", "r1"), image_index=2, bbox_2d=B),))
    trace = [[cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A)],
             [cr(1, "b", "download_image", out=2, image_index=1, url="https://x/y.png")],
             [cr(2, "c", "crop", out=3, image_index=2, bbox_2d=B)]]
    _, m3 = score_trace(ref, 1, trace)
    # r0 -> r2: image 2 is a download (a root), not r0's descendant: a plain ordering edge
    assert (m3.hop_edges, m3.hop_passed) == (2, 2)
    ref_bool = ((rc("r1", "crop", image_index=0, bbox_2d=A),),
                (rc("r2", "web_search", ("r1",), image_index=True, query="acme"),))
    search = TraceCall(step=1, call_id="b", name="web_search", requested_name="web_search",
                        arguments={"image_index": True, "query": "acme"}, ok=True)
    trace_bool = [[cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A)], [search]]
    _, m3 = score_trace(ref_bool, 1, trace_bool)
    # True is not image 1: an ordering edge (step 1 after step 0), not an image edge that the
    # search (which reads no image) would fail
    assert (m3.hop_edges, m3.hop_passed) == (1, 1)


def test_an_unmatched_dependency_does_not_hide_the_next_one() -> None:
    ref = ((rc("r1", "crop", image_index=0, bbox_2d=A), rc("r2", "web_search", query="zeta")),
           (rc("r3", "fetch_webpage", ("r2", "r1"), url="https://wiki.local/acme"),))
    trace = [[cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A)],
             [cr(1, "b", "fetch_webpage", url="https://wiki.local/acme")]]
    _, m3 = score_trace(ref, 1, trace)
    # r2 -> r3 misses r2 (never searched); r1 -> r3 still counts: step 1 after step 0
    assert (m3.hop_edges, m3.hop_passed) == (2, 1)


def test_parallel_groups_after_a_single_step_are_counted() -> None:
    ref = ((rc("r0", "grayscale", image_index=0),),
           (rc("r1", "web_search", query="alpha"), rc("r2", "web_search", query="beta")))
    trace = [[cr(0, "g", "grayscale", out=1, image_index=0)],
             [cr(1, "a", "web_search", query="alpha"), cr(1, "b", "web_search", query="beta")]]
    _, m3 = score_trace(ref, 1, trace)
    assert (m3.parallel_groups, m3.parallel_passed) == (1, 1)


def test_score_trace_passes_parents_and_weights_through() -> None:
    trace = [
        [cr(0, "a", "crop", out=1, image_index=0, bbox_2d=A)],
        [cr(1, "b", "rotate", out=2, image_index=0, angle=90, expand=True)],
    ]
    _, own = score_trace(CHAIN, 1, trace)
    _, given_ = score_trace(CHAIN, 1, trace, parents=[1, 0, 0], weights=M3Weights(1.0, 3.0))
    assert (own.multi_hop, given_.multi_hop) == (0.0, 1.0)
    assert given_.weights == M3Weights(1.0, 3.0)
