"""The knowledge_count plan (m3gym.agents.heuristic.teams): goal areas, shirts counted."""

from __future__ import annotations

import cv2
import numpy as np

from m3gym.agents.heuristic import teams
from m3gym.agents.heuristic.lookup import KIT_RGB, kit_mask
from m3gym.tasks.families.knowledge_count import _draw_small_player, player_width
from m3gym.tasks.registry import make_task


def test_shirt_count_splits_players_standing_shoulder_to_shoulder() -> None:
    rng = np.random.default_rng(0)
    img = np.full((120, 160, 3), (62, 128, 58), np.uint8)
    size, bw = 9, player_width(9)
    kits = ["red", "red", "blue", "red", "blue"]
    for k, kit in enumerate(kits):  # one clump, 1 px apart
        _draw_small_player(img, 20 + k * (bw + 1), 40, size, KIT_RGB[kit], rng)
    _draw_small_player(img, 120, 80, size, KIT_RGB["red"], rng)
    zoom = cv2.resize(img, None, fx=3.0, fy=3.0, interpolation=cv2.INTER_LINEAR)
    surface = (62, 128, 58)
    assert teams.shirt_count(kit_mask(zoom, "red", others=[surface]), 3.0) == 4
    assert teams.shirt_count(kit_mask(zoom, "blue", others=[surface]), 3.0) == 2


def test_goal_areas_match_the_drawn_markings() -> None:
    t = make_task("knowledge_count", 3)
    h, w = t.images[0].shape[:2]
    # the run-off box the view shows: the areas the plan derives lie within a few px of the truth
    from m3gym.agents.heuristic.lookup import pitch_box
    from m3gym.view import to_view

    view = to_view(t.images[0], 768)
    s = view.shape[1] / w
    box = pitch_box(view)
    assert box is not None
    for found, true in zip(teams.goal_areas(tuple(v / s for v in box)), t.metadata["goal_areas"]):
        assert max(abs(a - b) for a, b in zip(found, true)) <= 12


def test_team_in_question_reads_each_phrasing() -> None:
    for q in ("How many players of the Boko Wolves are inside the two goal areas in this photo?",
              "Count the Boko Wolves players standing inside the goal areas.",
              "In this match photo, how many players inside the goal areas wear the kit of "
              "the Boko Wolves?"):
        assert teams.team_in_question(q) == "Boko Wolves"
