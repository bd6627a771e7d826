"""chart_value: bar height <-> value mapping, data labels, look-alike tenths, parallel crops."""

from __future__ import annotations

import numpy as np
import pytest

from m3gym.tasks import render as R
from m3gym.tasks.families import _document_common as dc
from m3gym.tasks.families.chart_value import ChartValue
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
    # every data label sits just above its bar, centred on it
    for key, bar in chart.bars.items():
        label = chart.texts[f"label/{key}"].box
        assert label[3] <= bar[1] and bar[1] - label[3] <= 9
        assert abs((label[0] + label[2]) / 2 - (bar[0] + bar[2]) / 2) <= 1.0


def test_round_tenths_choices_are_the_six_round_digits() -> None:
    got = dc.round_tenths_choices(np.random.default_rng(0), 475)
    assert sorted(got) == ["47.0", "47.3", "47.5", "47.6", "47.8", "47.9"]
    with pytest.raises(ValueError):
        dc.round_tenths_choices(np.random.default_rng(0), 471)
    assert dc.tenths(473) == "47.3" and dc.tenths(-5) == "-0.5"


def test_legend_and_value_are_cropped_in_one_parallel_step() -> None:
    for task in (make_task("chart_value", seed) for seed in range(8)):
        (step,) = task.reference
        assert [c.name for c in step] == ["crop", "crop"]
        assert [e.id for e in task.evidence] == ["legend", "value"]
        if task.metadata["kind"] == "value":
            assert task.evidence[1].text == task.answer.value
            assert task.answer.value[-1] in "035689"


def test_difficulty_scales_text_and_clutter() -> None:
    easy, hard = ChartValue.difficulty_knobs(0.0), ChartValue.difficulty_knobs(1.0)
    assert easy["glyph_range"][0] > hard["glyph_range"][1]
    assert easy["categories"][1] < hard["categories"][0]
    with pytest.raises(ValueError):
        ChartValue(series=(1, 5)).validate()
