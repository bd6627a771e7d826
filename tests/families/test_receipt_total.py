"""receipt_total: receipt layout, look-alike amounts, the answer's arithmetic, the chain."""

from __future__ import annotations

import numpy as np
import pytest

from m3gym.tasks.families import _document_common as dc
from m3gym.tasks.families.receipt_total import (
    ReceiptTotalFamily,
    draw_receipt,
    price_lookalikes,
    receipt_line,
)
from m3gym.tasks.registry import make_task


def test_receipt_line_pads_to_the_width() -> None:
    assert receipt_line("A", "1.00", 10) == "A     1.00"  # 10 - 1 - 4 = 5 spaces
    assert receipt_line("LONG NAME", "12.49", 12) == "LONG NAME 12.49"  # at least one space


def test_money_formats_cents() -> None:
    assert dc.money(1249) == "12.49"
    assert dc.money(5) == "0.05"
    assert dc.money(-705) == "-7.05"


def test_digit_lookalikes_follow_the_cycle() -> None:
    # "0865392741": 1 -> 4 (0 would lead), 2 -> 9/7, 4 -> 7/1, 9 -> 3/2
    assert sorted(dc.digit_lookalikes(1249)) == [1219, 1242, 1243, 1279, 1749, 1949, 4249]


def test_money_choices_hold_the_answer_once() -> None:
    rng = np.random.default_rng(3)
    choices = dc.money_choices(rng, 1249)
    assert len(set(choices)) == 6 and "12.49" in choices


def test_marked_lines_are_the_asked_items() -> None:
    receipt = draw_receipt(np.random.default_rng(0), 6, 11.0, [1, 4])
    assert len(receipt.sheet.marks["item0"]) == len(receipt.sheet.marks["item1"]) == 1
    assert len(set(receipt.prices)) == 6 and len(set(receipt.names)) == 6
    y = [receipt.sheet.marks[k][0].box[1] for k in ("item0", "item1")]
    assert y[0] < y[1]


def test_fixed_prices_are_kept_and_the_others_stay_distinct() -> None:
    receipt = draw_receipt(np.random.default_rng(4), 6, 11.0, [2], fixed={2: 1234})
    assert receipt.prices[2] == 1234 and len(set(receipt.prices)) == 6


def test_price_lookalikes_are_a_product_set_of_money_strings() -> None:
    for seed in range(20):
        prices = price_lookalikes(np.random.default_rng(seed), 10.0, 0.35)
        assert len(set(prices)) == 6 and len({len(p) for p in prices}) == 1
        assert all(p == dc.money(int(round(100 * float(p)))) and p[0] != "0" for p in prices)
        varying = [i for i in range(len(prices[0])) if len({p[i] for p in prices}) > 1]
        assert sorted(len({p[i] for p in prices}) for i in varying) == [2, 3]


def test_a_price_question_offers_lookalike_prices_holding_the_printed_answer() -> None:
    seen = 0
    for seed in range(12):
        task = make_task("receipt_total", seed)
        if task.metadata["kind"] != "price":
            continue
        seen += 1
        assert task.answer.value in task.choices
        assert task.evidence[0].text == task.answer.value  # drawn: the view-only probe's target
        varying = [i for i in range(len(task.answer.value))
                   if len({c[i] for c in task.choices}) > 1]
        assert len(varying) == 2
    assert seen >= 2


def test_answer_is_the_printed_arithmetic_and_the_chain_fits() -> None:
    kinds = set()
    for task in (make_task("receipt_total", seed) for seed in range(10)):
        m = task.metadata
        kinds.add(m["kind"])
        a, b = (m["prices"] * 2)[:2]
        expect = {"price": a, "sum": a + b, "difference": a - b}[m["kind"]]
        assert task.answer.value == dc.money(expect)
        # one zoomed crop per asked line, in one parallel step; no rotate, no contrast op
        asked = 1 if m["kind"] == "price" else 2
        assert [[c.name for c in step] for step in task.reference] == [["crop"] * asked]
        assert [e.id for e in task.evidence] == ["item_a", "item_b"][:asked]
        assert all(e.angle == 0.0 for e in task.evidence)
    assert len(kinds) >= 2


def test_difficulty_sets_glyphs_and_items() -> None:
    easy, hard = ReceiptTotalFamily.difficulty_knobs(0.0), ReceiptTotalFamily.difficulty_knobs(1.0)
    assert easy["glyph_range"][0] > hard["glyph_range"][1]
    assert easy["items"][1] < hard["items"][0]


def test_validate_refuses_a_tilt_that_leaves_upright() -> None:
    with pytest.raises(ValueError):
        ReceiptTotalFamily(tilt_deg=20.0).validate()
