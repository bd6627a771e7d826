"""Drawing helpers of the famB scenes (dials, pitch, maps, small objects) and the knob helpers."""

from __future__ import annotations

import numpy as np
import pytest

from m3gym.agents import heuristic_lookup as hl
from m3gym.agents import heuristic_plans as hp
from m3gym.agents.heuristic_dials import gauge_labels, label_box
from m3gym.agents.ocr import OcrWord
from m3gym.tasks.families import _scene_common as c2
from m3gym.tasks.registry import make_task
from m3gym.tasks.render import dials, maps, pitch, smallobjects


def test_lerp_range_ends_and_rounding() -> None:
    assert c2.lerp(0.0, 2.0, 6.0) == 2.0
    assert c2.lerp(0.25, 2.0, 6.0) == 3.0
    assert c2.lerp_range(0.5, (1.0, 3.0), (5.0, 9.0)) == (3.0, 6.0)
    # ints round half up and stay ordered: 0.5 * (1 + 4) = 2.5 -> 3; (6 + 12) / 2 = 9
    assert c2.lerp_range(0.5, (1, 6), (4, 12), integer=True) == (3, 9)
    assert c2.lerp_range(1.0, (9, 11), (5, 6), integer=True) == (5, 6)


def test_bezel_shading_is_neutral_at_zero_and_lit_top_left() -> None:
    assert np.array_equal(dials.bezel_shading(40, 18.0, 3.0, 0.0), np.ones((40, 40), np.float32))
    s = dials.bezel_shading(40, 18.0, 3.0, 0.4)
    # outer half of the rim: brighter towards the top-left light, darker bottom-right
    assert s[7, 7] > 1.0 > s[32, 32]
    assert s[20, 20] == pytest.approx(1.0)  # the face's centre is untouched
    assert s[0, 0] == 1.0  # outside the dial


def test_drop_shadow_darkens_only_below_right() -> None:
    img = np.full((60, 60, 3), 200, np.uint8)
    dials.drop_shadow(img, (30.0, 30.0), 10.0, (3.0, 4.0), 1.5, 0.5)
    assert img[34, 33, 0] == 100  # inside the shifted disk: 200 * (1 - 0.5)
    assert img[5, 5, 0] == 200


def test_legend_size_matches_drawing() -> None:
    entries = (("area", (150, 200, 140), "Park"), ("dot", (214, 36, 36), "Pin"))
    size = maps.legend_size(entries, 8.0)
    img = np.zeros((80, 300, 3), np.uint8)
    box = maps.draw_legend(img, (5, 6), entries, 8.0, (40, 40, 48))
    assert (box[2] - box[0], box[3] - box[1]) == size
    assert img[6 + 1, 5 + 1].tolist() == [250, 250, 248]


@pytest.mark.parametrize("kit", ["red", "white", "black", "yellow"])
@pytest.mark.parametrize("size", [18, 22, 25])
def test_shirt_counter_counts_drawn_players(kit: str, size: int) -> None:
    rng = np.random.default_rng(size)
    img = np.full((300, 500, 3), (62, 128, 58), np.uint8)
    for x, y in [(20, 20), (80, 40), (200, 150), (400, 220), (300, 60)]:
        pitch.draw_player(img, x, y, size, hl.KIT_RGB[kit], rng)
    assert hl.shirt_count(img, kit, 1.0) == 5


def test_car_keeps_one_colour_blob() -> None:
    img = np.full((40, 60, 3), 80, np.uint8)
    smallobjects.draw_car(img, 10, 10, 15, 9, (206, 40, 40))
    assert hp.count_colour_blobs(img, "red", 0.5 * 1.7 * 25, 1.6 * 1.7 * 100) == 1


def test_gauge_question_labels_and_ocr_runs() -> None:
    q = ("Among the small gauges on the lab bench, which reads higher: the one labelled PUMP A "
         "or the one labelled TANK 2? Answer with the label.")
    assert gauge_labels(q) == ["PUMP A", "TANK 2"]
    words = [OcrWord("PUMP", 90, (10, 10, 40, 20)), OcrWord("A", 90, (44, 10, 50, 20)),
             OcrWord("TANK", 90, (100, 50, 130, 60), line=1)]
    assert label_box(words, "PUMP A") == (10, 10, 50, 20)
    assert label_box(words, "MIXER") is None


def test_pitch_markings_are_symmetric() -> None:
    x0, y0, x1, y1, sx, sy = pitch.pitch_markings((100, 50, 1100, 650))
    assert (x0 + x1) / 2 == 600.0 and (y0 + y1) / 2 == 350.0
    assert sx == pytest.approx((x1 - x0) / 105.0) and sy == pytest.approx((y1 - y0) / 68.0)


def test_knobs_change_the_scene() -> None:
    easy, hard = make_task("price_sum", 3, difficulty=0.0), make_task("price_sum", 3,
                                                                     difficulty=1.0)
    assert easy.evidence[0].glyph_height > hard.evidence[0].glyph_height
    e, h = make_task("knowledge_count", 5, difficulty=0.0), make_task("knowledge_count", 5,
                                                                     difficulty=1.0)
    assert len(e.metadata["colours"]) < len(h.metadata["colours"])
    g = make_task("grid_period", 2, difficulty=1.0)
    assert g.metadata["rows"] >= 9 and g.metadata["cols"] >= 12
