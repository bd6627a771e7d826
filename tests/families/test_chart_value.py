"""chart_value: bar height <-> value mapping, data labels, look-alike decimals, parallel crops."""

from __future__ import annotations

import textwrap

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from m3gym.tasks import render as R
from m3gym.tasks.families import _document_common as dc
from m3gym.tasks.families.chart_value import ChartValueFamily, wrap_line
from m3gym.tasks.registry import make_task
from m3gym.tasks.render import documents as D


def test_bar_heights_are_proportional_to_values_and_labels_print_them() -> None:
    img = R.solid_image(500, 700, (255, 255, 255))
    chart = D.draw_bar_chart(img, (10, 10, 690, 490), ["A", "B"], ["Q1", "Q2"],
                             [[250, 500], [125, 375]], 50, 9.0, legend_top=True)
    heights = {k: b[3] - b[1] for k, b in chart.bars.items()}
    # 25.0, 50.0, 12.5, 37.5 of an axis to 50: heights 1/2, 1, 1/4, 3/4 of the full one
    full = heights["0/1"]
    for key, share in (("0/0", 0.5), ("1/0", 0.25), ("1/1", 0.75)):
        assert abs(heights[key] - share * full) <= 1.0, key
    assert chart.texts["label/0/0"].text == "25.0" and chart.texts["label/1/1"].text == "37.5"
    two = D.draw_bar_chart(img.copy(), (10, 10, 690, 490), ["A", "B"], ["Q1", "Q2"],
                           [[2500, 5000], [1208, 3760]], 50, 9.0, legend_top=True, decimals=2)
    assert two.texts["label/1/0"].text == "12.08" and two.texts["label/1/1"].text == "37.60"
    assert two.bars["0/1"] == chart.bars["0/1"]
    with pytest.raises(ValueError):
        D.draw_bar_chart(img.copy(), (10, 10, 690, 490), ["A"], ["Q1"], [[1]], 50, 9.0, True, 3)
    # every data label sits just above its bar, centred on it
    for key, bar in chart.bars.items():
        label = chart.texts[f"label/{key}"].box
        assert label[3] <= bar[1] and bar[1] - label[3] <= 9
        assert abs((label[0] + label[2]) / 2 - (bar[0] + bar[2]) / 2) <= 1.0


def test_closed_tail_choices_vary_only_closed_decimals() -> None:
    got = dc.closed_tail_choices(np.random.default_rng(0), 4768, dc.money)
    assert len(set(got)) == 6 and all(g.startswith("47.") for g in got)
    assert "47.68" in got
    assert {g[-2] for g in got} == {"0", "6", "8"}  # every closed tenth
    hundredths = {g[-1] for g in got}
    assert len(hundredths) == 2 and "8" in hundredths
    for bad in (4763, 4738, -4768):
        with pytest.raises(ValueError):
            dc.closed_tail_choices(np.random.default_rng(0), bad)


def test_closed_tail_choices_do_not_single_out_the_answer() -> None:
    # each option set is a product; over draws, the answer's hundredth is the pair's low and
    # high member equally often (the partner is uniform), so no position in the set is special
    rng = np.random.default_rng(1)
    low = 0
    n = 3000
    for _ in range(n):
        value = dc.closed_tail_value(rng, 10, 90)
        got = dc.closed_tail_choices(rng, value, dc.money)
        low += int(dc.money(value)[-1] == min(g[-1] for g in got))
    assert abs(low / n - 0.5) < 0.04


def test_chart_values_print_two_decimals_and_bars_hide_them() -> None:
    for task in (make_task("chart_value", seed) for seed in range(6)):
        if task.metadata["kind"] == "value":
            assert task.answer.value[-3] == "." and task.answer.value[-2:][0] in "068"
        else:
            # the first value minus six closed-tail look-alikes of the second: all positive,
            # sharing the units of (first - second's units), within 0.88 of each other
            cents = sorted(round(float(c) * 100) for c in task.choices)
            assert cents[0] > 0 and cents[-1] - cents[0] <= 88 and len(set(cents)) == 6
            assert task.answer.value in task.choices
        assert task.metadata["axis_max"] in D.AXIS_MAXIMA


def test_legend_and_value_are_cropped_in_one_parallel_step() -> None:
    for task in (make_task("chart_value", seed) for seed in range(8)):
        (step,) = task.reference
        assert [c.name for c in step] == ["crop", "crop"]
        assert [e.id for e in task.evidence] == ["legend", "value"]
        if task.metadata["kind"] == "value":
            assert task.evidence[1].text == task.answer.value
            assert task.answer.value[-1] in "068" and task.answer.value[-2] in "068"


def test_difficulty_scales_text_and_clutter() -> None:
    easy, hard = ChartValueFamily.difficulty_knobs(0.0), ChartValueFamily.difficulty_knobs(1.0)
    assert easy["glyph_range"][0] > hard["glyph_range"][1]
    assert easy["categories"][1] < hard["categories"][0]
    with pytest.raises(ValueError):
        ChartValueFamily(series=(1, 5)).validate()


def _textwrap(text: str, chars: int) -> list[str]:
    """The rule wrap_line implements: textwrap's whole-word wrapping."""
    return textwrap.wrap(text, chars, break_long_words=False, break_on_hyphens=False)


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet="abcXYZ019-.,' ", max_size=120), st.integers(1, 40))
def test_wrap_line_equals_textwrap_on_spaced_words(text, chars):
    assert wrap_line(text, chars) == _textwrap(text, chars)


@settings(max_examples=600, deadline=None)
@given(st.text(alphabet="ab-. \t\n\r\x0b\x0c\xa0\u2003\x1c\x85é€", max_size=60),
       st.integers(1, 20))
def test_wrap_line_equals_textwrap_on_any_whitespace(text, chars):
    # tabs, newlines, non-breaking and Unicode spaces: textwrap's own rules (the fallback)
    assert wrap_line(text, chars) == _textwrap(text, chars)


@settings(max_examples=300, deadline=None)
@given(st.lists(st.text(alphabet="abcdefghijklmnopqrstuvwxyz.,", min_size=1, max_size=25),
                min_size=1, max_size=40), st.integers(1, 100))
def test_wrap_line_equals_textwrap_on_prose(words, chars):
    text = " ".join(words)
    assert wrap_line(text, chars) == _textwrap(text, chars)


def test_wrap_line_keeps_textwraps_errors_and_edge_cases():
    for text in ("", " ", "a", "  lead", "trail  ", "a  b", "toolongword x", "x toolongword"):
        for chars in (1, 3, 5, 100):
            assert wrap_line(text, chars) == _textwrap(text, chars)
    with pytest.raises(ValueError):
        wrap_line("some words", 0)
