"""The strong reader's text-line pass: a window of several lines is read line by line."""

from __future__ import annotations

import os

import cv2
import numpy as np
import pytest

from m3gym.audit.readers import (
    blank_window,
    line_variants,
    make_reader,
    rapidocr_available,
    read_task,
)

needs_rapidocr = pytest.mark.skipif(
    not rapidocr_available() and os.environ.get("M3GYM_REQUIRE_EXTRA") != "audit",
    reason="rapidocr-onnxruntime is not installed (the 'audit' extra)")


def _bar_window() -> np.ndarray:
    """Return a chart-like window: a data label, a tall dark bar under it, a category label."""
    img = np.full((180, 110, 3), 250, np.uint8)
    cv2.putText(img, "128.66", (14, 18), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (60, 60, 60), 1,
                cv2.LINE_AA)
    img[26:150, 10:100] = (40, 90, 160)
    cv2.putText(img, "25 C", (34, 170), cv2.FONT_HERSHEY_SIMPLEX, 0.5, (60, 60, 60), 1,
                cv2.LINE_AA)
    return img


@needs_rapidocr
def test_line_variants_cut_each_text_line_in_eight_orientations() -> None:
    variants = line_variants(_bar_window())
    assert variants and len(variants) % 8 == 0
    reader = make_reader("rapidocr")
    assert reader is not None and getattr(reader, "detect", False)
    texts = [t for t, _ in reader(variants)]
    assert any("128.66" in t for t in texts)


@needs_rapidocr
def test_a_bar_label_is_read_with_the_tool() -> None:
    """chart_value's evidence window is a bar with its label and category: read line by line."""
    from m3gym.audit.tool_necessity import held_out_tasks

    tasks = [t for t in held_out_tasks("chart_value", 6) if t.metadata["kind"] == "value"]
    score = read_task(tasks[0], make_reader("rapidocr"))
    assert score is not None and score.kind == "answer" and score.with_tool == 1.0


def test_a_flat_window_is_blank_and_never_read() -> None:
    flat = np.full((20, 40, 3), 131, np.uint8)
    assert blank_window(flat) and blank_window(flat[:0])
    one_dot = flat.copy()
    one_dot[5, 5] = 130
    assert not blank_window(one_dot) and not blank_window(_bar_window())


def test_a_task_whose_windows_are_blank_scores_chance_whatever_the_reader_says() -> None:
    """A reader that answers every image with the right choice still earns only chance from the
    no-tool windows of a family whose view is flat over the evidence (glyph_faint)."""
    from m3gym.audit.leaks import answer_index, drawn_answer_evidence
    from m3gym.audit.readers import no_tool_windows
    from m3gym.audit.tool_necessity import held_out_tasks

    task = held_out_tasks("glyph_faint", 1)[0]
    ev = drawn_answer_evidence(task)
    assert ev is not None and all(blank_window(w) for w in no_tool_windows(task, ev, 96))
    right = task.choices[answer_index(task)]

    def oracle_reader(images: list[np.ndarray]) -> list[tuple[str, float]]:
        return [(right, 1.0) for _ in images]

    score = read_task(task, oracle_reader)
    assert score is not None and score.with_tool == 1.0
    assert score.no_tool == pytest.approx(1.0 / len(task.choices))
