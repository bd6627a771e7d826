"""Look-up plans (m3gym.agents.heuristic.lookup): the PII guard."""

from __future__ import annotations

from m3gym.agents.heuristic.lookup import is_pii
from m3gym.agents.ocr import OcrWord


def test_pii_guard_rejects_text_legible_in_the_full_view() -> None:
    badge = [OcrWord("Dada", 90, (0, 0, 10, 10)), OcrWord("Vorason", 90, (12, 0, 40, 10)),
             OcrWord("7434-0407-55", 90, (0, 12, 40, 20))]
    assert is_pii("Dada Vorason", badge)
    assert is_pii("Vorasen", badge)  # a near spelling of the badge name
    assert is_pii("7434 0407", [])  # an ID-like number is never sent
    assert not is_pii("Tobavil Bridge", badge)
