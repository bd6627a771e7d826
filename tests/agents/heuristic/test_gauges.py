"""The gauges (m3gym.agents.heuristic.gauges): labels from the question, label boxes from OCR."""

from __future__ import annotations

from m3gym.agents.heuristic.gauges import gauge_labels, label_box
from m3gym.agents.ocr import OcrWord


def test_gauge_question_labels_and_ocr_runs() -> None:
    q = ("Among the small gauges on the lab bench, which reads higher: the one labelled PUMP A "
         "or the one labelled TANK 2? Answer with the label.")
    assert gauge_labels(q) == ["PUMP A", "TANK 2"]
    words = [OcrWord("PUMP", 90, (10, 10, 40, 20)), OcrWord("A", 90, (44, 10, 50, 20)),
             OcrWord("TANK", 90, (100, 50, 130, 60), line=1)]
    assert label_box(words, "PUMP A") == (10, 10, 50, 20)
    assert label_box(words, "MIXER") is None
