"""Helpers of the scene families (m3gym.tasks.families._scene_common) and their difficulty knobs."""

from __future__ import annotations

from m3gym.tasks.families import _scene_common as c2
from m3gym.tasks.registry import make_task


def test_lerp_range_ends_and_rounding() -> None:
    assert c2.lerp(0.0, 2.0, 6.0) == 2.0
    assert c2.lerp(0.25, 2.0, 6.0) == 3.0
    assert c2.lerp_range(0.5, (1.0, 3.0), (5.0, 9.0)) == (3.0, 6.0)
    # ints round half up and stay ordered: 0.5 * (1 + 4) = 2.5 -> 3; (6 + 12) / 2 = 9
    assert c2.lerp_range(0.5, (1, 6), (4, 12), integer=True) == (3, 9)
    assert c2.lerp_range(1.0, (9, 11), (5, 6), integer=True) == (5, 6)


def test_knobs_change_the_scene() -> None:
    easy, hard = make_task("price_sum", 3, difficulty=0.0), make_task("price_sum", 3,
                                                                     difficulty=1.0)
    assert easy.evidence[0].glyph_height > hard.evidence[0].glyph_height
    e, h = make_task("knowledge_count", 5, difficulty=0.0), make_task("knowledge_count", 5,
                                                                     difficulty=1.0)
    assert len(e.metadata["colours"]) < len(h.metadata["colours"])
    g = make_task("grid_period", 2, difficulty=1.0)
    assert g.metadata["rows"] >= 9 and g.metadata["cols"] >= 12
