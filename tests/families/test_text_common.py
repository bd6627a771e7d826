"""What the text families share: look-alike choices at view scale and stacked field plates."""

from __future__ import annotations

import itertools

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.tasks import render as R
from m3gym.tasks.families._text_common import (
    char_view_distances,
    group_sizes,
    lookalike_groups,
    lookalike_product,
    text_patch,
    view_lookalike_codes,
)
from m3gym.tasks.registry import make_task
from m3gym.tasks.render import text_scenes as TS


def test_group_sizes_by_hand():
    assert group_sizes(6) == (3, 2)
    assert group_sizes(4) == (4,)
    assert group_sizes(8) == (4, 2)
    assert group_sizes(9) == (3, 3)
    assert group_sizes(5) == (5,)
    assert group_sizes(2) == (2,)
    with pytest.raises(ValueError, match="at least 2"):
        group_sizes(1)


def test_lookalike_groups_are_the_least_spread_and_sorted():
    d = char_view_distances(R.CODE_DIGITS, "sans", 9.0, 0.32)
    groups = lookalike_groups(R.CODE_DIGITS, 2, "sans", 9.0, 0.32)
    spreads = [d[R.CODE_DIGITS.index(a), R.CODE_DIGITS.index(b)] for a, b in groups]
    assert spreads == sorted(spreads)
    others = [d[i, j] for i, j in itertools.combinations(range(len(R.CODE_DIGITS)), 2)]
    assert max(spreads) <= sorted(others)[len(groups) - 1] + 1e-12


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 2**32 - 1), st.sampled_from(["sans", "serif-bold", "mono"]))
def test_view_lookalike_codes_form_a_product_set_holding_the_answer(seed, face):
    rng = np.random.default_rng(seed)
    answer, choices = view_lookalike_codes(rng, face, 9.0, 0.32, 6)
    assert answer in choices and len(set(choices)) == 6
    # a 3 x 2 product: two positions vary, every code agrees with the answer elsewhere
    varying = [i for i in range(len(answer)) if len({c[i] for c in choices}) > 1]
    assert sorted(len({c[i] for c in choices}) for i in varying) == [2, 3]
    assert all(len(c) == len(answer) for c in choices)
    for i in set(range(len(answer))) - set(varying):
        assert {c[i] for c in choices} == {answer[i]}


def test_lookalike_product_varies_only_the_offered_positions():
    rng = np.random.default_rng(5)
    variants = lookalike_product(rng, "12.34", {0: "123456789", 3: "0123456789"}, "mono",
                                 10.0, 0.35, 6)
    assert variants is not None and len(set(variants)) == 6
    assert {v[1:3] for v in variants} == {"2."} and {v[4] for v in variants} == {"4"}
    assert all(v[0] != "0" for v in variants)
    # too few editable positions for a 3 x 2 product
    assert lookalike_product(rng, "12.34", {0: "123456789"}, "mono", 10.0, 0.35, 6) is None


def test_view_lookalike_codes_respect_the_exclusions():
    rng = np.random.default_rng(3)
    _, first = view_lookalike_codes(np.random.default_rng(3), "sans", 9.0, 0.32, 6)
    _, again = view_lookalike_codes(rng, "sans", 9.0, 0.32, 6, exclude=first[:1])
    assert first[0] not in again


def test_answer_position_is_uniform_over_seeds():
    counts = np.zeros(6, int)
    for seed in range(300):
        answer, choices = view_lookalike_codes(np.random.default_rng(seed), "sans", 9.0, 0.32)
        counts[choices.index(answer)] += 1
    assert counts.min() >= 25  # 50 expected per position


def test_field_plate_places_every_code_and_turning_keeps_the_ink():
    rows = [(text_patch(n, 12.0, "sans"), text_patch(c, 12.0, "sans"))
            for n, c in (("REF", "K7-4F2"), ("LOT", "K7-4F3"))]
    flat, lay = TS.draw_field_plate(rows, 12.0, (240, 240, 240), (20, 20, 20), strip_w=10)
    assert flat.rgb.shape[:2] == (lay.size[1], lay.size[0])
    assert len(flat.value_boxes) == 2
    for box, mask in zip(flat.value_boxes, flat.value_masks):
        assert mask.shape == (box[3] - box[1], box[2] - box[0]) and mask.any()
    turned = TS.turn_plate(flat, 1)
    assert turned.rgb.shape[:2] == flat.rgb.shape[1::-1]
    assert [int(m.sum()) for m in turned.value_masks] == [int(m.sum()) for m in flat.value_masks]
    img = np.zeros((200, 300, 3), np.uint8)
    quad = R.perspective_quad(np.random.default_rng(0), lay.size[0], lay.size[1], 0.0) + 20.0
    box, codes = TS.paste_plate(img, flat, quad)
    assert box[:2] == (20, 20)
    for (x0, y0, x1, y1), mask in codes:
        assert mask.shape == (y1 - y0, x1 - x0)
        assert img[y0:y1, x0:x1][mask].mean() < 60  # dark ink where the mask says


@pytest.mark.parametrize("family", ["tiny_text", "tiny_faint_text"])
def test_the_question_names_the_target_field(family):
    t = make_task(family, 5)
    assert t.metadata["target_field"] in t.question
