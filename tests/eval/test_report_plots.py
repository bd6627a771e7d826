"""The report's plots: rows grouped by level, error bars, and the three PNG plots."""

import base64
from pathlib import Path

import pytest

from m3gym.eval.report_plots import error_bar, level_rows, plot_images
from m3gym.eval.report_runs import Run
from m3gym.eval.summary import summarize

pytest.importorskip("matplotlib", reason="the eval extra (matplotlib) is not installed")


def _record(i: int, level: int, correct: bool) -> dict:
    return {"episode_id": f"e{i}", "index": i, "status": "ok", "level": level,
            "family": "faint_text", "answer_correct": correct, "failure_mode": None,
            "metrics": {"acc": float(correct), "OT": 0.0}, "calls": 1, "reward": 1.0}


def test_records_group_by_level_label() -> None:
    rows = [_record(0, 1, True), _record(1, 2, False), _record(2, 1, False)]
    run = Run("r", Path("."), {}, rows, summarize(rows))
    grouped = level_rows(run)
    assert sorted(grouped) == ["L1", "L2"] and [r["index"] for r in grouped["L1"]] == [0, 2]
    assert error_bar(0.5, (0.25, 0.875)) == (0.25, 0.375)
    assert error_bar(None, (0.0, 1.0)) == error_bar(0.5, None) == (0.0, 0.0)


def test_three_png_plots() -> None:
    rows = [_record(i, 1 + i % 2, i % 3 == 0) for i in range(6)]
    plots = plot_images([Run("r", Path("."), {}, rows, summarize(rows))])
    assert sorted(plots) == ["accuracy", "failure_modes", "ot_vs_acc"]
    for url in plots.values():
        assert url.startswith("data:image/png;base64,")
        assert base64.b64decode(url.split(",", 1)[1])[:8] == b"\x89PNG\r\n\x1a\n"
