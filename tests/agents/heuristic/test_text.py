"""Question text and choice matching (m3gym.agents.heuristic.text)."""

from __future__ import annotations

from m3gym.agents.heuristic.text import best_choice, norm_code, question_of


def test_code_matching_merges_confusables_and_split_tokens() -> None:
    choices = ("E2-6K2", "E5-7K2", "E5-7K3")
    assert best_choice(["Ill ES5-7K2"], choices)[0] == "E5-7K2"
    assert best_choice(["E5 - 7K2"], choices)[0] == "E5-7K2"
    assert norm_code("e5-7kz") == "E5-7K2"
    assert question_of("Q?\n\nImages (address them ...)\n- Image 0") == "Q?"
