"""Look-up plans (m3gym.agents.heuristic.lookup): shirts counted, the PII guard."""

from __future__ import annotations

import numpy as np

from m3gym.agents.heuristic import lookup
from m3gym.agents.heuristic.lookup import is_pii
from m3gym.agents.ocr import OcrWord
from m3gym.tasks.families.knowledge_count import _draw_player


def test_shirt_count_counts_rendered_players() -> None:
    rng = np.random.default_rng(0)
    img = np.full((300, 500, 3), (62, 128, 58), np.uint8)
    spots = [(20, 20), (80, 40), (200, 150), (400, 220), (300, 60)]
    for k, (x, y) in enumerate(spots):
        _draw_player(img, x, y, 22, lookup.KIT_RGB["red" if k < 3 else "blue"], rng)
    assert lookup.shirt_count(img, "red", 1.0) == 3
    assert lookup.shirt_count(img, "blue", 1.0) == 2


def test_pii_guard_rejects_text_legible_in_the_full_view() -> None:
    badge = [OcrWord("Dada", 90, (0, 0, 10, 10)), OcrWord("Vorason", 90, (12, 0, 40, 10)),
             OcrWord("7434-0407-55", 90, (0, 12, 40, 20))]
    assert is_pii("Dada Vorason", badge)
    assert is_pii("Vorasen", badge)  # a near spelling of the badge name
    assert is_pii("7434 0407", [])  # an ID-like number is never sent
    assert not is_pii("Tobavil Bridge", badge)
