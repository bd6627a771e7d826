"""Aggregate episode rows into a run summary and print it as tables.

Only episodes with ``status == "ok"`` are scored; infrastructure/agent/env errors are counted
apart. A metric missing from a row (``None``) is left out of that metric's mean, and the
number of episodes that reported it is kept beside the mean.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import numpy as np

SCORE_KEYS: tuple[str, ...] = (
    "acc", "S", "V", "V_tool", "V_true", "OT", "m3", "multi_modal", "multi_hop",
    "multi_threaded", "recall", "precision", "arg_similarity", "arg_similarity_strong",
    "step_coherence", "order_consistency", "merge_purity", "safety", "safety_violations",
    "calls", "failed_calls", "rounds",
)
"""Numeric per-episode metrics averaged in a summary."""

FAILURE_MODES: tuple[str, ...] = (
    "missing_search", "bad_search_query", "unfaithful_visual_tool_use",
    "missing_visual_tool_use", "overthinking_collapse", "tool_misexecution",
    "post_visual_perception_deficit", "context_overflow",
)
"""The seven Agentic-MME failure-mode labels, then the harness's ``context_overflow`` (the model's
prompt outgrew its context: :data:`m3gym.scoring.taxonomy.HARNESS_FAILURE_LABELS`)."""

TABLE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("Acc", "acc"), ("S", "S"), ("V", "V"), ("V_true", "V_true"), ("OT", "OT"), ("M3", "m3"),
    ("Calls", "calls"), ("Failed", "failed_calls"), ("Reward", "reward"),
)
M3BENCH_COLUMNS: tuple[tuple[str, str], ...] = (
    ("MM", "multi_modal"), ("MH", "multi_hop"), ("MT", "multi_threaded"), ("Recall", "recall"),
    ("Prec", "precision"), ("ArgSim", "arg_similarity"), ("StepCoh", "step_coherence"),
    ("Order", "order_consistency"), ("Merge", "merge_purity"), ("Safety", "safety"),
)
"""(header, metric key) of the main summary table; M3-Bench metrics go in a second one."""


def _number(value: Any) -> float | None:
    if isinstance(value, bool):
        return float(value)
    if isinstance(value, (int, float)) and value == value:
        return float(value)
    return None


def metric_value(row: Mapping[str, Any], key: str) -> float | None:
    """Return a numeric metric of an episode row (``acc`` falls back to ``answer_correct``)."""
    value = _number((row.get("metrics") or {}).get(key))
    if value is None and key == "acc" and row.get("answer_correct") is not None:
        value = float(bool(row["answer_correct"]))
    if value is None and key == "calls":
        value = _number(row.get("calls"))
    return value


def judge_stats(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Return the judge-checkpoint totals of scored episodes (``None``: none has any).

    ``rate`` = passed / judged over all judge checkpoints (``None`` when none was judged);
    ``not_judged`` counts those left unscored (no ``--judge-endpoint``). Never part of S or V.
    """
    blocks = [r["judge"] for r in rows
              if r.get("status") == "ok" and isinstance(r.get("judge"), Mapping)]
    if not blocks:
        return None
    totals = {k: sum(int(b.get(k) or 0) for b in blocks)
              for k in ("checkpoints", "judged", "passed", "errors", "not_judged")}
    rate = round(totals["passed"] / totals["judged"], 6) if totals["judged"] else None
    return {"episodes": len(blocks), **totals, "rate": rate}


def group_stats(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return counts, metric means (``None`` when no episode reported one) and failure modes.

    Runs with judge checkpoints add ``judge`` (:func:`judge_stats`), apart from the metrics.
    """
    scored = [r for r in rows if r.get("status") == "ok"]
    means: dict[str, float | None] = {}
    counts: dict[str, int] = {}
    for key in SCORE_KEYS:
        values = [v for v in (metric_value(r, key) for r in scored) if v is not None]
        means[key] = round(sum(values) / len(values), 6) if values else None
        counts[key] = len(values)
    rewards = [float(r["reward"]) for r in scored if _number(r.get("reward")) is not None]
    modes = Counter(str(r["failure_mode"]) for r in scored if r.get("failure_mode"))
    status = Counter(str(r.get("status")) for r in rows)
    judge = judge_stats(rows)
    return {
        "episodes": len(rows), "scored": len(scored),
        "infra_errors": status.get("infra_error", 0),
        "agent_errors": status.get("agent_error", 0), "env_errors": status.get("env_error", 0),
        "correct": sum(1 for r in scored if metric_value(r, "acc") == 1.0),
        "metrics": means, "metric_counts": counts,
        "mean_reward": round(sum(rewards) / len(rewards), 6) if rewards else None,
        "failure_modes": {m: modes.get(m, 0) for m in sorted(modes)},
        **({"judge": judge} if judge is not None else {}),
    }


def _grouped(rows: Iterable[Mapping[str, Any]], key: str) -> dict[str, list[Mapping[str, Any]]]:
    out: dict[str, list[Mapping[str, Any]]] = {}
    for r in rows:
        out.setdefault(str(r.get(key)), []).append(r)
    return dict(sorted(out.items()))


def summarize(rows: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """Return the run summary: overall, per env, per level and per family statistics."""
    level_key = [{**r, "level": f"L{r.get('level')}"} for r in rows]
    return {
        "overall": group_stats(rows),
        "by_env": {k: group_stats(v) for k, v in _grouped(rows, "env").items()},
        "by_level": {k: group_stats(v) for k, v in _grouped(level_key, "level").items()},
        "by_family": {k: {"level": f"L{v[0].get('level')}", **group_stats(v)}
                      for k, v in _grouped(rows, "family").items()},
    }


def fmt(value: float | None, key: str = "") -> str:
    """Return a metric formatted for a table (``-`` for missing)."""
    if value is None:
        return "-"
    if key in ("calls", "failed_calls", "rounds", "safety_violations"):
        return f"{value:.1f}"
    return f"{value:.3f}"


def summary_rows(summary: Mapping[str, Any]) -> list[tuple[str, Mapping[str, Any]]]:
    """Return ``(label, stats)`` rows: each level followed by its families, then overall."""
    rows: list[tuple[str, Mapping[str, Any]]] = []
    families = summary.get("by_family", {})
    for level, stats in summary.get("by_level", {}).items():
        rows.append((level, stats))
        rows += [("  " + f, st) for f, st in families.items() if st.get("level") == level]
    rows.append(("all", summary["overall"]))
    return rows


def stat_value(stats: Mapping[str, Any], key: str) -> float | None:
    """Return one statistic of a group: a metric mean or ``reward`` (the mean episode reward)."""
    if key == "reward":
        return stats.get("mean_reward")
    return (stats.get("metrics") or {}).get(key)


def _metric_table(summary: Mapping[str, Any], columns: Sequence[tuple[str, str]],
                  title: str) -> Any:
    from rich.table import Table

    table = Table(title=title)
    table.add_column("level / family", style="bold", no_wrap=True)
    table.add_column("N", justify="right")
    for header, _ in columns:
        table.add_column(header, justify="right", no_wrap=True)
    for label, stats in summary_rows(summary):
        n = f"{stats['scored']}"
        if stats["scored"] != stats["episodes"]:
            n += f"/{stats['episodes']}"
        table.add_row(label, n, *(fmt(stat_value(stats, k), k) for _, k in columns),
                      style="bold" if not label.startswith(" ") else None)
    return table


def print_summary(summary: Mapping[str, Any], console: Any = None,
                  title: str = "m3gym eval") -> None:
    """Print the summary (metrics per level and family, failure modes) as rich tables."""
    from rich.console import Console
    from rich.table import Table

    if console is None:
        console = Console()
        if not console.is_terminal:
            console = Console(width=140)
    console.print(_metric_table(summary, TABLE_COLUMNS, title))
    console.print(_metric_table(summary, M3BENCH_COLUMNS, "M3-Bench metrics"))
    overall = summary["overall"]
    modes = overall.get("failure_modes") or {}
    if modes:
        mt = Table(title="failure modes (scored episodes)")
        mt.add_column("failure mode")
        mt.add_column("count", justify="right")
        for mode, count in sorted(modes.items(), key=lambda kv: (-kv[1], kv[0])):
            mt.add_row(mode, str(count))
        console.print(mt)
    line = judge_line(overall.get("judge"))
    if line:
        console.print(line, markup=False, highlight=False)
    errors = {k: overall[k] for k in ("infra_errors", "agent_errors", "env_errors") if overall[k]}
    if errors:
        console.print("[yellow]not scored: " + ", ".join(f"{v} {k}" for k, v in errors.items())
                      + " (rerun with --resume)[/yellow]")


def judge_line(judge: Mapping[str, Any] | None) -> str:
    """Return the summary's judge row (``""`` without judge checkpoints): rate and counts."""
    if not judge:
        return ""
    parts = [f"judge (VLM-judged checkpoints, not in S/V): {fmt(judge.get('rate'))} = "
             f"{judge['passed']}/{judge['judged']} passed"]
    if judge.get("errors"):
        parts.append(f"{judge['errors']} judge request(s) failed")
    if judge.get("not_judged"):
        parts.append(f"{judge['not_judged']} not judged"
                     + ("" if judge.get("judged") else " (no --judge-endpoint)"))
    return "; ".join(parts) + f" [{judge['episodes']} episode(s)]"


def stat_samples(rows: Sequence[Mapping[str, Any]], key: str) -> tuple[list[float], list[str]]:
    """Return the per-episode values behind :func:`stat_value` ``key`` and each one's task.

    Only scored episodes (``status == "ok"``) that reported the metric count, as in
    :func:`group_stats`; ``reward`` is the episode reward. The task label (env and task id)
    lets a bootstrap resample a task's rollouts together.
    """
    values: list[float] = []
    tasks: list[str] = []
    for r in rows:
        if r.get("status") != "ok":
            continue
        value = _number(r.get("reward")) if key == "reward" else metric_value(r, key)
        if value is not None:
            values.append(value)
            tasks.append(f"{r.get('env')}:{r.get('task_id', r.get('episode_id'))}")
    return values, tasks


def stat_interval(rows: Sequence[Mapping[str, Any]], key: str, rng: np.random.Generator,
                  level: float = 0.95) -> tuple[float, float] | None:
    """Return the bootstrap ``level`` interval of statistic ``key`` (``None``: no values).

    Tasks are resampled with ``rng`` (a ``np.random.Generator``), each with all its rollouts
    (:func:`m3gym.stats.bootstrap_mean_interval`); the bounds are rounded like the means.
    """
    from m3gym.stats import bootstrap_mean_interval

    values, tasks = stat_samples(rows, key)
    if not values:
        return None
    lo, hi = bootstrap_mean_interval(values, rng, level=level, groups=tasks)
    return round(lo, 6), round(hi, 6)


def fmt_interval(value: float | None, interval: tuple[float, float] | None, key: str = "") -> str:
    """Return ``value`` with its interval as ``0.620 [0.550, 0.690]`` (``-`` when missing)."""
    if value is None or interval is None:
        return fmt(value, key)
    return f"{fmt(value, key)} [{fmt(interval[0], key)}, {fmt(interval[1], key)}]"
