"""Alignment gated by content: hand-computed cases for every tool kind.

A call whose content argument is wrong (the box, the angle, the direction, the query, the url,
the image a photometric op reads) must not match the reference call, whatever its other
arguments — its M3 is that of a missing call (plus an extra, unmatched call).
"""

from __future__ import annotations

from typing import Any

import pytest

from m3gym.scoring.alignment import (
    ContentContext,
    EvidenceRegion,
    SearchTarget,
    align,
    crop_content_similarity,
    query_similarity,
    upright_angle_similarity,
)
from m3gym.scoring.m3 import score_trace
from m3gym.tools.catalogue import CONTENT_ARGUMENTS
from m3gym.trace import TraceCall
from tests.scoring.traces import rc


def cr(call_id: str, name: str, out: int | None = None, payload: dict | None = None,
       **args: Any) -> TraceCall:
    return TraceCall(step=0, call_id=call_id, name=name, requested_name=name, arguments=args,
                      ok=True, output_index=out, input_index=args.get("image_index"),
                      payload=dict(payload or {}))


# Evidence at x 0.60–0.64, y 0.40–0.43 of a 1000x1000 input (share 0.0012).
EV = EvidenceRegion(0, (0.60, 0.40, 0.64, 0.43), "KX-4821")
CTX = ContentContext(evidence=(EV,),
                     search_targets=(SearchTarget("web_search", "corpus.test/kx-4821", 3),))
REF_BOX = [580, 380, 660, 450]


def m3_of(reference, trace_steps, ctx=CTX) -> tuple[float, float, float]:
    alignment, score = score_trace(reference, 1, trace_steps, context=ctx)
    return alignment.metrics.recall, alignment.metrics.precision, score.total


def test_every_tool_declares_its_content():
    assert CONTENT_ARGUMENTS["crop"] == {"bbox_2d": "box"}
    assert CONTENT_ARGUMENTS["rotate"] == {"angle": "upright_angle"}
    assert CONTENT_ARGUMENTS["flip"] == {"direction": "exact"}
    assert CONTENT_ARGUMENTS["web_search"] == {"query": "query"}
    assert CONTENT_ARGUMENTS["fetch_webpage"] == {"url": "url"}
    assert CONTENT_ARGUMENTS["image_search"] == {"image_index": "image"}
    for name in ("autocontrast", "equalize", "threshold", "grayscale", "denoise", "sharpen"):
        assert CONTENT_ARGUMENTS[name] == {"image_index": "image"}
    assert CONTENT_ARGUMENTS["answer"] == {}


def test_crop_content_similarity_by_hand():
    # covers the evidence and keeps 0.08 x 0.07 of the root: magnifies -> 1
    assert crop_content_similarity((0.58, 0.38, 0.66, 0.45), (0.55, 0.35, 0.70, 0.50),
                                   [EV]) == 1.0
    # the whole image covers it but magnifies nothing: IoU = 0.0056 / 1
    whole = crop_content_similarity((0.58, 0.38, 0.66, 0.45), (0, 0, 1, 1), [EV])
    assert whole == pytest.approx(0.08 * 0.07)
    # exactly half of the root covering the evidence still magnifies
    assert crop_content_similarity((0.58, 0.38, 0.66, 0.45), (0.5, 0, 1, 1), [EV]) == 1.0
    # misses part of the evidence: IoU only (0.02x0.07 overlap / union)
    cut = crop_content_similarity((0.58, 0.38, 0.66, 0.45), (0.62, 0.38, 0.66, 0.45), [EV])
    assert cut == pytest.approx((0.04 * 0.07) / (0.08 * 0.07))


def test_whole_image_crop_is_a_missing_call():
    ref = ((rc("r", "crop", image_index=0, bbox_2d=REF_BOX, zoom_scale=2.0),),)
    good = [[cr("a", "crop", out=1, image_index=0, bbox_2d=[550, 350, 700, 500],
                zoom_scale=2.0)]]
    whole = [[cr("a", "crop", out=1, image_index=0, bbox_2d=[0, 0, 1000, 1000],
                 zoom_scale=2.0)]]
    corner = [[cr("a", "crop", out=1, image_index=0, bbox_2d=[0, 0, 100, 100],
                  zoom_scale=2.0)]]
    assert m3_of(ref, good) == (1.0, 1.0, 1.0)
    assert m3_of(ref, whole) == (0.0, 0.0, 0.0)  # same image, same zoom: still no match
    assert m3_of(ref, corner) == (0.0, 0.0, 0.0)
    assert m3_of(ref, []) == (0.0, 0.0, 0.0)


def test_rotation_must_give_the_same_upright_result():
    ref = ((rc("r", "rotate", image_index=0, angle=90, expand=True),),)
    for angle, matched in ((90, True), (450, True), (-270, True), (95, True), (101, False),
                           (180, False), (0, False), (-90, False)):
        trace = [[cr("a", "rotate", out=1, image_index=0, angle=angle, expand=True)]]
        assert m3_of(ref, trace)[0] == float(matched), angle
    assert upright_angle_similarity(90, 100) == 1.0 and upright_angle_similarity(90, 100.5) == 0


def test_flip_direction_is_content():
    ref = ((rc("r", "flip", image_index=0, direction="vertical"),),)
    assert m3_of(ref, [[cr("a", "flip", out=1, image_index=0, direction="vertical")]])[0] == 1
    assert m3_of(ref, [[cr("a", "flip", out=1, image_index=0, direction="horizontal")]])[0] == 0


def test_photometric_op_must_read_the_right_image():
    # reference: crop the evidence, then autocontrast the crop (image 1)
    ref = ((rc("c", "crop", image_index=0, bbox_2d=REF_BOX, zoom_scale=2.0),),
           (rc("a", "autocontrast", ("c",), image_index=1, cutoff=1.0),))
    crop_ok = cr("c1", "crop", out=1, image_index=0, bbox_2d=REF_BOX, zoom_scale=2.0)
    on_crop = TraceCall(step=1, call_id="a1", name="autocontrast", requested_name="autocontrast",
                         arguments={"image_index": 1, "cutoff": 1.0}, ok=True, output_index=2,
                         input_index=1)
    on_original = TraceCall(step=1, call_id="a1", name="autocontrast",
                             requested_name="autocontrast",
                             arguments={"image_index": 0, "cutoff": 1.0}, ok=True,
                             output_index=2, input_index=0)
    assert align(ref, 1, [[crop_ok], [on_crop]], context=CTX).metrics.recall == 1.0
    # autocontrast of the original with the right cutoff: no match (only the crop does)
    assert align(ref, 1, [[crop_ok], [on_original]], context=CTX).metrics.recall == 0.5
    # the crop has the wrong box: the autocontrast of its output no longer matches either
    bad_crop = cr("c1", "crop", out=1, image_index=0, bbox_2d=[0, 0, 1000, 1000],
                  zoom_scale=2.0)
    assert align(ref, 1, [[bad_crop], [on_crop]], context=CTX).metrics.recall == 0.0


def test_search_query_content_and_found_target():
    ref = ((rc("s", "web_search", query="KX-4821"),),)
    found = {"results": [{"url": "https://www.corpus.test/kx-4821/"}]}
    missed = {"results": [{"url": "https://corpus.test/other"}]}
    question = "What year was the company that makes the product on the sticker founded?"
    cases = [
        (cr("q", "web_search", query="KX-4821", payload=missed), 1.0),  # the reference query
        (cr("q", "web_search", query="kx 4821 valve", payload=missed), 1.0),  # F1 0.8
        (cr("q", "web_search", query=question, payload=missed), 0.0),  # question text
        (cr("q", "web_search", query=question, payload=found), 1.0),  # ... that finds the page
        (cr("q", "web_search", query="product sticker", payload=missed), 0.0),
    ]
    for call, recall in cases:
        assert m3_of(ref, [[call]])[0] == recall, call.arguments
    assert query_similarity("KX-4821", "kx 4821 valve") == pytest.approx(2 * 2 / 5)


def test_url_is_content():
    ref = ((rc("f", "fetch_webpage", url="https://corpus.test/kx-4821"),),)
    same = cr("f", "fetch_webpage", url="http://www.corpus.test/KX-4821/")
    other = cr("f", "fetch_webpage", url="https://corpus.test/kx-4822")
    assert m3_of(ref, [[same]])[0] == 1.0
    assert m3_of(ref, [[other]])[0] == 0.0


def test_image_search_must_search_the_produced_crop():
    ref = ((rc("c", "crop", image_index=0, bbox_2d=REF_BOX),),
           (rc("s", "image_search", ("c",), image_index=1),))
    crop_ok = cr("c1", "crop", out=1, image_index=0, bbox_2d=REF_BOX)
    on_crop = TraceCall(step=1, call_id="s1", name="image_search", requested_name="image_search",
                         arguments={"image_index": 1, "top_k": 5}, ok=True, input_index=1)
    on_original = TraceCall(step=1, call_id="s1", name="image_search",
                             requested_name="image_search",
                             arguments={"image_index": 0, "top_k": 5}, ok=True, input_index=0)
    assert align(ref, 1, [[crop_ok], [on_crop]], context=CTX).metrics.recall == 1.0
    assert align(ref, 1, [[crop_ok], [on_original]], context=CTX).metrics.recall == 0.5


def test_wrong_content_scores_no_better_than_a_missing_call():
    ref = ((rc("c", "crop", image_index=0, bbox_2d=REF_BOX, zoom_scale=2.0),),
           (rc("s", "web_search", ("c",), query="KX-4821"),))
    crop_ok = cr("c1", "crop", out=1, image_index=0, bbox_2d=REF_BOX, zoom_scale=2.0)
    wrong_query = TraceCall(step=1, call_id="q", name="web_search", requested_name="web_search",
                             arguments={"query": "valve company", "top_k": 5}, ok=True,
                             payload={"results": []})
    missing = m3_of(ref, [[crop_ok]])
    wrong = m3_of(ref, [[crop_ok], [wrong_query]])
    # missing: recall 1/2, precision 1/1 -> F1 2/3; the hop edge c -> s fails
    assert missing == (0.5, 1.0, pytest.approx((2 / 3 + 0.0) / 2))
    # wrong: recall 1/2, precision 1/2 -> F1 1/2
    assert wrong == (0.5, 0.5, pytest.approx((0.5 + 0.0) / 2))
    assert wrong[2] <= missing[2]
