"""OCR for the agents (m3gym.agents.ocr): the built-in glyph matcher reads rendered codes."""

from __future__ import annotations

import numpy as np

from m3gym.agents import ocr
from m3gym.agents.heuristic.text import best_choice
from m3gym.tasks import render as R


def test_glyph_matcher_reads_truetype_codes() -> None:
    img = np.full((60, 400, 3), 235, np.uint8)
    R.draw_text(img, "K7-4F2", (10, 15), 28.0, (20, 20, 20), face=R.READABLE_FACES[0],
                thickness=2)
    words = ocr.glyph_matcher().read(ocr.prepare(img))
    text = "".join(w.text for w in words)
    assert best_choice([text], ("K7-4F2", "K7-4F3", "X7-4F2"))[0] == "K7-4F2"
