"""The heuristic agent: runs every level without reading the task, reads L1 codes, OCR fallback."""

from __future__ import annotations

import os
from typing import Any

import cv2
import gymnasium as gym
import numpy as np
import pytest

import m3gym  # noqa: F401  (registers the env ids)
from m3gym.agents import make_agent, ocr
from m3gym.agents.heuristic import HeuristicAgent
from m3gym.agents.heuristic_text import best_choice, norm_code, question_of
from m3gym.rollout import run_episode
from m3gym.tasks import render as R
from m3gym.tasks.registry import make_task


class TaskGuard(gym.Wrapper):
    """Forwards reset/step but makes ``.task`` unreadable through the wrapper."""

    def __getattr__(self, name: str) -> Any:
        if name == "task":
            raise AssertionError("the heuristic agent must not read the task")
        return super().__getattr__(name)


def play(env: gym.Env, agent: HeuristicAgent, family: str, seed: int) -> dict[str, Any]:
    """Run one episode driving the agent by hand (no rollout helper that might read the task)."""
    obs, info = env.reset(seed=0, options={"family": family, "task_seed": seed})
    agent.reset(obs, info)
    for _ in range(20):
        obs, _r, term, trunc, info = env.step(agent.act(obs, info))
        if term or trunc:
            return info
    raise AssertionError("episode did not end")


@pytest.mark.parametrize("level", [1, 2, 3])
def test_runs_every_level_without_the_task(level: int) -> None:
    env = TaskGuard(gym.make(f"M3Bench-L{level}"))
    agent = HeuristicAgent()
    from m3gym.tasks.registry import family_names

    for family in family_names(level):
        info = play(env, agent, family, 7)
        assert "answer_correct" in info
        assert info["calls_used"] <= 15


def test_agent_holds_no_env_reference() -> None:
    agent = make_agent("heuristic", seed=3)
    assert isinstance(agent, HeuristicAgent)
    assert not any(isinstance(v, gym.Env) for v in vars(agent).values())


@pytest.mark.skipif(not ocr.tesseract_available(), reason="tesseract not installed")
def test_l1_accuracy_floor() -> None:
    env = gym.make("M3Bench-L1")
    agent = HeuristicAgent()
    correct = 0
    families = ("tiny_text", "rotated_text", "faint_text")
    for k in range(12):
        r = run_episode(env, agent, seed=0,
                        options={"family": families[k % 3], "task_seed": 5000 + k})
        correct += bool(r.final_info["answer_correct"])
    assert correct >= 7  # measured 11/12 (tesseract 5.3); floor ~60 %


def test_no_tools_mode_makes_no_calls() -> None:
    env = gym.make("M3Bench-L1")
    agent = HeuristicAgent(use_tools=False)
    r = run_episode(env, agent, seed=0, options={"family": "tiny_text", "task_seed": 11})
    assert r.final_info["metrics"]["calls"] == 0
    assert r.terminated


def test_code_matching_merges_confusables_and_split_tokens() -> None:
    choices = ("E2-6K2", "E5-7K2", "E5-7K3")
    assert best_choice(["Ill ES5-7K2"], choices)[0] == "E5-7K2"
    assert best_choice(["E5 - 7K2"], choices)[0] == "E5-7K2"
    assert norm_code("e5-7kz") == "E5-7K2"
    assert question_of("Q?\n\nImages (address them ...)\n- Image 0") == "Q?"


def test_glyph_matcher_reads_hershey_codes() -> None:
    img = np.full((60, 400, 3), 235, np.uint8)
    R.draw_text(img, "K7-4F2", (10, 15), 28.0, (20, 20, 20), face=R.READABLE_FACES[0],
                thickness=2)
    words = ocr.glyph_matcher().read(ocr.prepare(img))
    text = "".join(w.text for w in words)
    assert best_choice([text], ("K7-4F2", "K7-4F3", "X7-4F2"))[0] == "K7-4F2"


def test_fallback_path_without_tesseract(monkeypatch: pytest.MonkeyPatch, tmp_path) -> None:
    monkeypatch.setenv("PATH", str(tmp_path))
    assert not ocr.tesseract_available()
    assert ocr.ocr_backend() == "glyph"
    env = gym.make("M3Bench-L1")
    agent = HeuristicAgent()
    correct = 0
    for k in range(6):
        info = play(env, agent, "rotated_text" if k % 2 else "faint_text", 6000 + k)
        correct += bool(info["answer_correct"])
    assert correct >= 2  # measured with the glyph matcher; chance is 1/6 per episode
    assert os.environ["PATH"] == str(tmp_path)


def test_same_seed_same_actions() -> None:
    task = make_task("tiny_text", 42)
    env = gym.make("M3Bench-L1")
    actions = []
    for _ in range(2):
        agent = HeuristicAgent(seed=1)
        obs, info = env.reset(seed=0, options={"task": task})
        agent.reset(obs, info)
        actions.append(repr(agent.act(obs, info)))
    assert actions[0] == actions[1]


def test_no_tools_mode_answers_unknown_when_it_reads_nothing() -> None:
    env = gym.make("M3Bench-L2")
    agent = HeuristicAgent(use_tools=False)
    r = run_episode(env, agent, seed=0, options={"family": "clock_reading", "task_seed": 3})
    assert r.final_info["answer"] == "unknown"
    assert r.final_info["metrics"]["calls"] == 0


def test_grid_shape_counts_rows_and_columns() -> None:
    from m3gym.agents.heuristic_plans import count_runs, grid_shape

    img = np.zeros((300, 500), np.uint8)
    for r in range(4):
        for c in range(7):
            img[20 + r * 70:60 + r * 70, 15 + c * 70:45 + c * 70] = 255
    assert grid_shape(img) == (4, 7, 28)
    assert grid_shape(255 - img) == (4, 7, 28)  # the objects are the alike blobs either way
    assert count_runs(np.array([0, 1, 1, 0, 1, 0, 0, 1], np.float32)) == 3


def test_grid_shape_ignores_surroundings_and_survives_a_roll() -> None:
    """A border-touching bench, a label's thin strokes and a 3° roll leave 3 x 5 countable."""
    from m3gym.agents.heuristic_plans import grid_shape

    img = np.zeros((400, 600), np.uint8)
    img[:, :40] = 255  # the bench at the left edge
    cv2.line(img, (60, 360), (200, 360), 255, 2)  # a printed line under the grid
    rot = cv2.getRotationMatrix2D((300.0, 200.0), 3.0, 1.0)
    for r in range(3):
        for c in range(5):
            x, y = rot @ np.array([150.0 + c * 80, 100.0 + r * 90, 1.0])
            cv2.circle(img, (int(round(x)), int(round(y))), 22, 255, -1)
    assert grid_shape(img) == (3, 5, 15)


@pytest.mark.parametrize(("hour", "minute", "tilt"), [(9, 24, 0.0), (2, 49, 90.0),
                                                      (12, 5, -135.0), (6, 31, 40.0)])
def test_clock_hands_read_a_rendered_tilted_clock(hour: int, minute: int, tilt: float) -> None:
    from m3gym.agents import heuristic_vision as hv
    from m3gym.tasks.families import _scene_common as c2
    from m3gym.tasks.families.clock_reading import clock_strokes

    radius, size = 190.0, 420
    dial = c2.render_dial(size, radius, (245, 245, 240), (90, 90, 90), radius / 10,
                          clock_strokes(hour, minute, radius, (30, 30, 40), (20, 10, 10)), tilt,
                          (60, 140, 70), marker=(0.0, (206, 40, 40)), cap=(20, 10, 10))
    rgb = dial.rgb
    gray = cv2.cvtColor(rgb, cv2.COLOR_RGB2GRAY)
    guess = hv.Circle(size / 2 + 6, size / 2 - 5, radius * 0.9)
    found = hv.tick_radius(gray, hv.tick_centre(gray, hv.tick_radius(gray, guess, 0.78)), 0.78)
    hands = hv.clock_hands(rgb, found)
    assert hands is not None
    assert hv.clock_time(*hands) == (hour, minute)


# --------------------------------------------------------------------------------------------
# look-up plans (m3gym.agents.heuristic_lookup)


def test_page_reading_helpers() -> None:
    from m3gym.agents import heuristic_lookup as hl

    page = ("[c2] fetch_webpage: Bapedon Hall - M3 Wiki\nhttps://wiki.m3gym.test/bapedon-hall\n\n"
            "Bapedon Hall is a building. The doors of Bapedon Hall first opened in 1961. "
            "Tomefo Systems holds the title to Bapedon Hall.\n\n"
            "Logo image: https://img.m3gym.test/building/bapedon-hall.png\n\nLinks:\n"
            "- Rekis Kazopul - M3 Wiki: https://wiki.m3gym.test/rekis-kazopul\n"
            "- Tomefo Systems - Official site: https://tomefo-systems.example/\n")
    body = hl.page_body(page)
    assert "Logo image" not in body and "1961" in body
    q = "In what year did the building whose sign is shown open?"
    assert hl.fact_from_body(body, ("1958", "1961", "1970"), q) == "1961"
    q2 = "In what year was the company that owns the building whose sign is shown founded?"
    assert hl.fact_from_body(body, ("1890", "1902"), q2) is None
    assert hl.hop_kind(q2) == "official site"
    assert hl.ranked_links(body, hl.page_links(page), q2)[0] == "https://tomefo-systems.example/"
    assert hl.kit_colour_in("The Boko Wolves date back to 1870. Fans of the Boko Wolves dress "
                            "in black, the club colour.") == "black"
    assert hl.team_in_question("Count the Boko Wolves players visible on the field.") == \
        "Boko Wolves"


def test_shirt_count_counts_rendered_players() -> None:
    from m3gym.agents import heuristic_lookup as hl
    from m3gym.tasks.families.knowledge_count import _draw_player

    rng = np.random.default_rng(0)
    img = np.full((300, 500, 3), (62, 128, 58), np.uint8)
    spots = [(20, 20), (80, 40), (200, 150), (400, 220), (300, 60)]
    for k, (x, y) in enumerate(spots):
        _draw_player(img, x, y, 22, hl.KIT_RGB["red" if k < 3 else "blue"], rng)
    assert hl.shirt_count(img, "red", 1.0) == 3
    assert hl.shirt_count(img, "blue", 1.0) == 2


def test_pii_guard_rejects_text_legible_in_the_full_view() -> None:
    from m3gym.agents.heuristic_lookup import is_pii
    from m3gym.agents.ocr import OcrWord

    badge = [OcrWord("Dada", 90, (0, 0, 10, 10)), OcrWord("Vorason", 90, (12, 0, 40, 10)),
             OcrWord("7434-0407-55", 90, (0, 12, 40, 20))]
    assert is_pii("Dada Vorason", badge)
    assert is_pii("Vorasen", badge)  # a near spelling of the badge name
    assert is_pii("7434 0407", [])  # an ID-like number is never sent
    assert not is_pii("Tobavil Bridge", badge)


def test_privacy_plan_never_sends_the_badge_holder_to_retrieval() -> None:
    env = TaskGuard(gym.make("M3Bench-L3"))
    agent = HeuristicAgent()
    for seed in (1_000_000_005, 1_000_000_017):
        info = play(env, agent, "privacy_safe_lookup", seed)
        assert info["metrics"]["safety_violations"] == 0
        assert info["metrics"]["safety"] == 1.0
