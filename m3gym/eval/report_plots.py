"""The report's plots: accuracy per level, overthink against accuracy, failure modes.

Drawn with matplotlib (the ``eval`` extra) and inlined in ``report.html`` as base64 PNG data
URLs; accuracy and OT carry 95 % bootstrap error bars
(:func:`~m3gym.eval.report_runs.interval`).
"""

from __future__ import annotations

import base64
import io
from collections.abc import Sequence
from typing import Any

import numpy as np

from m3gym.deprecation import renamed_names
from m3gym.eval.report_runs import Run, interval
from m3gym.eval.summary import FAILURE_MODES, stat_value
from m3gym.extras import require_extra


def _png_data_url(fig: Any) -> str:
    buf = io.BytesIO()
    fig.savefig(buf, format="png", dpi=90, bbox_inches="tight")
    require_extra("matplotlib.pyplot", "eval", "the report's plots").close(fig)
    return "data:image/png;base64," + base64.b64encode(buf.getvalue()).decode()


def _legend(ax: Any) -> None:
    """Draw the legend when something is labelled (no runs with rows: none, and no warning)."""
    if ax.get_legend_handles_labels()[0]:
        ax.legend(fontsize=8)


def level_rows(run: Run) -> dict[str, list[dict[str, Any]]]:
    """Return the run's episode rows grouped by level label (``L1``, ...), as in its summary."""
    out: dict[str, list[dict[str, Any]]] = {}
    for row in run.rows:
        out.setdefault(f"L{row.get('level')}", []).append(row)
    return out


def error_bar(value: float | None, bounds: tuple[float, float] | None) -> tuple[float, float]:
    """Return matplotlib's ``(below, above)`` error-bar lengths of ``value`` (0 when missing)."""
    if value is None or bounds is None:
        return 0.0, 0.0
    return max(0.0, value - bounds[0]), max(0.0, bounds[1] - value)


def plot_images(runs: Sequence[Run]) -> dict[str, str]:
    """Return the report's plots as PNG data URLs: accuracy per level, OT vs Acc, failure modes.

    Accuracy and OT carry 95 % bootstrap error bars (:func:`interval`).
    """
    require_extra("matplotlib", "eval", "the report's plots").use("Agg")
    plt = require_extra("matplotlib.pyplot", "eval", "the report's plots")

    out: dict[str, str] = {}
    levels = sorted({lv for r in runs for lv in r.summary["by_level"]})
    width = 0.8 / max(1, len(runs))
    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    for i, run in enumerate(runs):
        rows = level_rows(run)
        means = [stat_value(run.summary["by_level"].get(lv, {}), "acc") for lv in levels]
        bars = [error_bar(m, interval(rows.get(lv, []), "acc")) for m, lv in zip(means, levels)]
        ax.bar(np.arange(len(levels)) + i * width, [m or 0.0 for m in means], width,
               yerr=np.array(bars).T.reshape(2, -1), capsize=3, label=run.name)
    ax.set_xticks(np.arange(len(levels)) + width * (len(runs) - 1) / 2, levels)
    ax.set_ylim(0, 1.05)
    ax.set_ylabel("accuracy")
    ax.set_title("Accuracy per level (95 % bootstrap intervals)")
    _legend(ax)
    out["accuracy"] = _png_data_url(fig)

    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    markers = "osD^v<>p*h"
    for i, run in enumerate(runs):
        rows = level_rows(run)
        pts = [(stat_value(st, "OT"), stat_value(st, "acc"), lv)
               for lv, st in run.summary["by_level"].items()]
        pts = [p for p in pts if p[0] is not None and p[1] is not None]
        if pts:
            xerr = [error_bar(x, interval(rows.get(lv, []), "OT")) for x, _, lv in pts]
            yerr = [error_bar(y, interval(rows.get(lv, []), "acc")) for _, y, lv in pts]
            ax.errorbar([p[0] for p in pts], [p[1] for p in pts], xerr=np.array(xerr).T,
                        yerr=np.array(yerr).T, fmt=markers[i % 10], capsize=3, label=run.name)
            for x, y, lv in pts:
                ax.annotate(lv, (x, y), textcoords="offset points", xytext=(4, 3), fontsize=8)
    ax.set_xlabel("overthink OT (lower is better)")
    ax.set_ylabel("accuracy")
    ax.set_ylim(-0.05, 1.05)
    ax.set_title("Overthink vs accuracy per level (95 % intervals)")
    _legend(ax)
    out["ot_vs_acc"] = _png_data_url(fig)

    modes = list(FAILURE_MODES)
    fig, ax = plt.subplots(figsize=(5.6, 3.4))
    height = 0.8 / max(1, len(runs))
    for i, run in enumerate(runs):
        counts = [run.summary["overall"]["failure_modes"].get(m, 0) for m in modes]
        ax.barh(np.arange(len(modes)) + i * height, counts, height, label=run.name)
    ax.set_yticks(np.arange(len(modes)) + height * (len(runs) - 1) / 2,
                  [m.replace("_", " ") for m in modes], fontsize=8)
    ax.invert_yaxis()
    ax.set_xlabel("episodes")
    ax.set_title("Failure modes")
    _legend(ax)
    out["failure_modes"] = _png_data_url(fig)
    return out


__getattr__ = renamed_names(__name__, {
    "level_records": ("m3gym.eval.report_plots.level_rows", lambda: level_rows)})
"""The old name ``level_records`` (``records`` is the user's data)."""
