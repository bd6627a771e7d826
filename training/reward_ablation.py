"""Reward-shaping ablation: train under several reward presets x seeds, plot accuracy vs steps.

Usage::

    python training/reward_ablation.py --config configs/train/reward_ablation.yaml [--jobs 2]
        [--set base.total_timesteps=50000] [--set presets=[sparse,process,m3]] [--plot-only]
        [--max-steps N]

For every ``(preset, seed)`` it trains ``base`` (a :mod:`train_sb3` config) with
``env.kwargs.reward = preset``, reads the held-out evaluations (``eval_history.jsonl``) and writes
``ablation.csv`` (preset, seed, timesteps, accuracy, mean_reward, mean_length) and
``ablation.png`` (mean accuracy per preset with a min-max band over seeds) and
``ablation_table.md`` (steps to 50 % and 70 % held-out accuracy, or the config's ``thresholds``,
and the final accuracy, mean and 95 % t interval over seeds) to ``out_dir``. Cells resume from
their newest checkpoint and finished cells are skipped, so an interrupted ablation continues where
it stopped.

Two optional sections widen it:

* ``warm_start:`` (train_sb3 keys, e.g. a ``bc`` section) trains one warm start per seed
  (``out_dir/warm_start_seed<s>``, 0 PPO steps) and starts every cell of that seed from it
  (``init_model``), so the presets are compared from the same policy;
* ``variants:`` adds named cells, each a preset plus config overrides (``{name: curriculum,
  preset: process, set: {curriculum: {...}}}``), plotted and tabled beside the presets.
"""

from __future__ import annotations

import argparse
import csv
import json
import sys
from collections.abc import Sequence
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path
from typing import Any

import numpy as np
import yaml

sys.path.insert(0, str(Path(__file__).resolve().parent))
from train_sb3 import DEFAULT_CONFIG, apply_overrides, deep_merge, train  # noqa: E402

CSV_FIELDS = ("preset", "seed", "timesteps", "accuracy", "mean_reward", "mean_length", "S", "V")


def run_config(base: dict[str, Any], preset: str, seed: int, out_dir: Path,
               name: str | None = None, overrides: dict[str, Any] | None = None,
               init_model: str | None = None) -> dict[str, Any]:
    """Return the training config of one ablation cell.

    ``name`` labels the cell (default: the preset) and ``overrides`` are merged into ``base``
    (a variant such as a curriculum); ``init_model`` starts it from a saved warm start.
    """
    cfg = deep_merge(DEFAULT_CONFIG, deep_merge(base, overrides or {}))
    cfg["env"].setdefault("kwargs", {})["reward"] = preset
    cfg["seed"] = int(seed)
    cfg["out_dir"] = str(out_dir / f"{name or preset}_seed{seed}")
    cfg["cell"] = name or preset
    if init_model is not None:
        cfg["init_model"] = init_model
    return cfg


def warm_start_config(base: dict[str, Any], warm: dict[str, Any], seed: int,
                      out_dir: Path) -> dict[str, Any]:
    """Return the config of one seed's shared warm start: ``warm`` (e.g. a ``bc`` section) merged
    into ``base``, trained for 0 PPO steps, saved in ``out_dir/warm_start_seed<seed>``."""
    cfg = deep_merge(DEFAULT_CONFIG, deep_merge(base, warm))
    cfg["seed"] = int(seed)
    cfg["total_timesteps"] = 0
    cfg["out_dir"] = str(out_dir / f"warm_start_seed{seed}")
    return cfg


def warm_start_model(cfg: dict[str, Any]) -> str:
    """Train one warm start unless its model exists; return the saved model's path."""
    path = Path(cfg["out_dir"]) / "final_model.zip"
    if not path.exists():
        train(cfg)
    return str(path)


def cell_configs(spec: dict[str, Any], out_dir: Path, jobs: int = 1,
                 train_warm_starts: bool = True) -> list[dict[str, Any]]:
    """Return every cell's config: seeds outer; the presets, then the ``variants``, inner.

    With a ``warm_start`` section each seed's warm start is trained first (once, shared by all
    of that seed's cells, so they start from the same policy); ``train_warm_starts=False`` only
    points the cells at where it is saved.
    """
    seeds = [int(s) for s in spec["seeds"]]
    warm = spec.get("warm_start")
    inits: dict[int, str | None] = {s: None for s in seeds}
    if warm:
        wcfgs = [warm_start_config(spec["base"], warm, s, out_dir) for s in seeds]
        if not train_warm_starts:
            paths = [str(Path(c["out_dir"]) / "final_model.zip") for c in wcfgs]
        elif jobs > 1:
            with ProcessPoolExecutor(jobs) as pool:
                paths = list(pool.map(warm_start_model, wcfgs))
        else:
            paths = [warm_start_model(c) for c in wcfgs]
        inits = dict(zip(seeds, paths))
    cfgs = []
    for s in seeds:
        cfgs += [run_config(spec["base"], str(p), s, out_dir, init_model=inits[s])
                 for p in spec["presets"]]
        cfgs += [run_config(spec["base"], str(v.get("preset", "process")), s, out_dir,
                            name=str(v["name"]), overrides=v.get("set"), init_model=inits[s])
                 for v in spec.get("variants") or []]
    return cfgs


def cell_names(spec: dict[str, Any]) -> list[str]:
    """Return the cell labels in plotting order: the presets, then the variants' names."""
    return [str(p) for p in spec["presets"]] + [str(v["name"]) for v in spec.get("variants") or []]


def cell_done(cfg: dict[str, Any]) -> bool:
    """Return whether a cell has already trained to its ``total_timesteps`` (its final model)."""
    info = Path(cfg["out_dir"]) / "train_info.json"
    return info.exists() and json.loads(info.read_text())["timesteps"] >= cfg["total_timesteps"]


def train_cell(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Train one cell (resuming from its newest checkpoint; skipped when done); return its rows."""
    if not cell_done(cfg):
        train(cfg, resume=True)
    return cell_rows(cfg)


def cell_rows(cfg: dict[str, Any]) -> list[dict[str, Any]]:
    """Return the evaluation rows of a trained cell (read from its ``eval_history.jsonl``)."""
    preset = cfg.get("cell", cfg["env"]["kwargs"]["reward"])
    rows = []
    for line in (Path(cfg["out_dir"]) / "eval_history.jsonl").read_text().splitlines():
        h = json.loads(line)
        metrics = h.get("metrics", {})
        rows.append({"preset": preset, "seed": cfg["seed"], "timesteps": h["timesteps"],
                     "accuracy": h["accuracy"], "mean_reward": h["mean_reward"],
                     "mean_length": h["mean_length"], "S": metrics.get("S"),
                     "V": metrics.get("V")})
    return rows


def write_csv(rows: Sequence[dict[str, Any]], path: Path) -> None:
    """Write the ablation rows as CSV."""
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_FIELDS)
        writer.writeheader()
        writer.writerows(rows)


def seed_curves(rows: Sequence[dict[str, Any]], preset: str, key: str = "accuracy"
                ) -> dict[int, dict[int, float]]:
    """Return ``{seed: {timesteps: value of key}}`` of one preset (empty values skipped)."""
    out: dict[int, dict[int, float]] = {}
    for r in rows:
        if r["preset"] == preset and r.get(key) not in (None, ""):
            out.setdefault(int(r["seed"]), {})[int(r["timesteps"])] = float(r[key])
    return out


def on_shared_steps(curves: Sequence[dict[int, float]]) -> tuple[np.ndarray, np.ndarray]:
    """Return (steps, values) of ``curves`` on every step any of them evaluated within the
    range all of them cover, interpolated linearly (one row of values per curve)."""
    lo = max(min(c) for c in curves)
    hi = min(max(c) for c in curves)
    steps = np.array(sorted({t for c in curves for t in c if lo <= t <= hi}))
    return steps, np.array([np.interp(steps, sorted(c), [c[t] for t in sorted(c)])
                            for c in curves])


def curve_stats(rows: Sequence[dict[str, Any]], preset: str, key: str = "accuracy"
                ) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """Return (steps, mean, min, max) of ``key`` for a preset over seeds.

    The steps are every step any seed evaluated within the range all seeds cover; a seed without
    an evaluation at a step is interpolated linearly between its neighbours (a resumed cell may
    evaluate off the others' grid).
    """
    by_seed = seed_curves(rows, preset, key)
    if not by_seed:
        empty = np.zeros(0)
        return empty, empty, empty, empty
    steps, acc = on_shared_steps(list(by_seed.values()))
    return steps, acc.mean(0), acc.min(0), acc.max(0)


def steps_to_reach(rows: Sequence[dict[str, Any]], threshold: float) -> int | None:
    """Return the first evaluated step count whose accuracy is ``>= threshold`` (None: never)."""
    for r in sorted(rows, key=lambda r: int(r["timesteps"])):
        if float(r["accuracy"]) >= threshold:
            return int(r["timesteps"])
    return None


def mean_ci(values: Sequence[float], level: float = 0.95) -> tuple[float, float]:
    """Return the mean and the half-width of its two-sided t confidence interval (nan if n < 2)."""
    from scipy import stats

    arr = np.asarray(values, dtype=float)
    if arr.size == 0:
        return float("nan"), float("nan")
    if arr.size < 2:
        return float(arr.mean()), float("nan")
    half = stats.t.ppf(0.5 + level / 2, arr.size - 1) * arr.std(ddof=1) / np.sqrt(arr.size)
    return float(arr.mean()), float(half)


def threshold_table(rows: Sequence[dict[str, Any]], presets: Sequence[str],
                    thresholds: Sequence[float] = (0.5, 0.7)) -> list[dict[str, Any]]:
    """Return one row per preset: steps to each threshold and the final accuracy, over seeds.

    ``reached_<t>`` counts the seeds that got there; ``steps_<t>`` is the mean (and ``ci_<t>``
    the 95 % t half-width) over those seeds only, so read it with the count: a preset that
    reached 70 % on one seed of three did not "reach it in N steps". ``final`` is the mean of
    each seed's last evaluation, with its CI; ``final_steps`` the fewest steps among those.
    """
    table = []
    for preset in presets:
        by_seed: dict[int, list[dict[str, Any]]] = {}
        for r in rows:
            if r["preset"] == preset:
                by_seed.setdefault(int(r["seed"]), []).append(r)
        if not by_seed:
            continue
        row: dict[str, Any] = {"preset": preset, "seeds": len(by_seed)}
        for t in thresholds:
            reached = [s for s in (steps_to_reach(rs, t) for rs in by_seed.values())
                       if s is not None]
            row[f"reached_{t}"] = len(reached)
            row[f"steps_{t}"], row[f"ci_{t}"] = mean_ci(reached)
        lasts = [max(rs, key=lambda r: int(r["timesteps"])) for rs in by_seed.values()]
        finals = [float(r["accuracy"]) for r in lasts]  # each seed's last evaluation
        row["final_steps"] = min(int(r["timesteps"]) for r in lasts)
        row["final"], row["final_ci"] = mean_ci(finals)
        table.append(row)
    return table


def markdown_table(table: Sequence[dict[str, Any]], thresholds: Sequence[float] = (0.5, 0.7)
                   ) -> str:
    """Return the threshold table as markdown (``k/n`` seeds reached; mean ± 95 % CI)."""
    def cell(mean: float, half: float, scale: float = 1.0, digits: int = 0) -> str:
        if np.isnan(mean):
            return "—"
        text = f"{mean / scale:,.{digits}f}"
        return text if np.isnan(half) else f"{text} ± {half / scale:,.{digits}f}"

    head = ["preset", *(f"steps to {t:.0%} (k, seeds reached)" for t in thresholds),
            "final accuracy"]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for row in table:
        cells = [f"`{row['preset']}`"]
        for t in thresholds:
            cells.append(f"{cell(row[f'steps_{t}'], row[f'ci_{t}'], 1000.0, 1)} "
                         f"({row[f'reached_{t}']}/{row['seeds']})")
        cells.append(f"{cell(row['final'], row['final_ci'], digits=3)} "
                     f"at {row['final_steps']:,}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def paired_table(rows: Sequence[dict[str, Any]], presets: Sequence[str], baseline: str
                 ) -> list[dict[str, Any]]:
    """Return, per preset, its accuracy minus ``baseline``'s on the same seeds (paired).

    Every cell of a seed starts from the same warm start, so the seed is a block: ``final`` is
    the difference of the two cells' last evaluations, ``mean`` the difference of their mean
    accuracy over the steps both cover (linear interpolation onto the union of their evaluation
    steps; an area under the curve, less noisy than one evaluation). Each with its 95 % t
    half-width over seeds.
    """
    base = seed_curves(rows, baseline)
    table = []
    for preset in presets:
        if preset == baseline:
            continue
        cur = seed_curves(rows, preset)
        finals, means = [], []
        for seed in sorted(set(base) & set(cur)):
            a, b = cur[seed], base[seed]
            finals.append(a[max(a)] - b[max(b)])
            _, (ia, ib) = on_shared_steps([a, b])
            means.append(float((ia - ib).mean()))
        if finals:
            row: dict[str, Any] = {"preset": preset, "baseline": baseline, "seeds": len(finals)}
            row["final"], row["final_ci"] = mean_ci(finals)
            row["mean"], row["mean_ci"] = mean_ci(means)
            table.append(row)
    return table


def paired_markdown(table: Sequence[dict[str, Any]]) -> str:
    """Return the paired differences as markdown (points of accuracy, mean ± 95 % CI)."""
    lines = ["| preset − baseline | seeds | final accuracy | mean accuracy over the run |",
             "|---|---|---|---|"]
    for row in table:
        cells = []
        for key in ("final", "mean"):
            m, h = 100 * row[key], 100 * row[f"{key}_ci"]
            cells.append(f"{m:+.1f}" + ("" if np.isnan(h) else f" ± {h:.1f}"))
        lines.append(f"| `{row['preset']}` − `{row['baseline']}` | {row['seeds']} | "
                     + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def plot(rows: Sequence[dict[str, Any]], presets: Sequence[str], path: Path,
         chance: float | None = None) -> None:
    """Plot mean held-out accuracy vs env steps per preset with a min-max band over seeds."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    has_s = any(r.get("S") not in (None, "") for r in rows)
    fig, axes = plt.subplots(1, 2 if has_s else 1, figsize=(11 if has_s else 6, 4),
                             squeeze=False)
    for ax, key, label in zip(axes[0], ("accuracy", "S"),
                              ("held-out accuracy", "held-out S (strategy checkpoints)")):
        for preset in presets:
            steps, mean, lo, hi = curve_stats(rows, preset, key)
            if steps.size:
                n = len({r["seed"] for r in rows if r["preset"] == preset})
                ax.plot(steps, mean, marker="o", label=f"{preset} (n={n})")
                ax.fill_between(steps, lo, hi, alpha=0.2)
        if chance is not None and key == "accuracy":
            ax.axhline(chance, color="gray", linestyle="--", label="chance")
        ax.set_xlabel("environment steps")
        ax.set_ylabel(label)
        ax.set_ylim(0, 1)
        ax.legend()
        ax.grid(alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--config", required=True, help="configs/train/reward_ablation.yaml")
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE")
    parser.add_argument("--jobs", type=int, default=1, help="cells trained in parallel")
    parser.add_argument("--chance", type=float, default=None,
                        help="chance line on the plot (default: the config's `chance`, or 1/6)")
    parser.add_argument("--plot-only", action="store_true",
                        help="rebuild the CSV and plot from the cells' eval histories, no training")
    parser.add_argument("--max-steps", type=int, default=None,
                        help="tables and plot from the evaluations up to this many steps only "
                             "(every cell compared at the same budget)")
    args = parser.parse_args(argv)
    spec = apply_overrides(yaml.safe_load(Path(args.config).read_text()), args.set)
    out_dir = Path(spec.get("out_dir", "runs/reward_ablation"))
    out_dir.mkdir(parents=True, exist_ok=True)
    presets = cell_names(spec)
    seeds = [int(s) for s in spec["seeds"]]
    chance = args.chance if args.chance is not None else float(spec.get("chance", 1 / 6))
    if len(seeds) < 3:
        print("warning: fewer than 3 seeds; the spread is not meaningful", file=sys.stderr)
    # seeds outer, presets inner: a partial run still compares every preset
    cfgs = cell_configs(spec, out_dir, args.jobs, train_warm_starts=not args.plot_only)
    rows: list[dict[str, Any]] = []
    if args.plot_only:
        rows = [r for cfg in cfgs if (Path(cfg["out_dir"]) / "eval_history.jsonl").exists()
                for r in cell_rows(cfg)]
    elif args.jobs > 1:
        with ProcessPoolExecutor(args.jobs) as pool:
            for cell in pool.map(train_cell, cfgs):
                rows += cell
    else:
        for cfg in cfgs:
            rows += train_cell(cfg)
    if args.max_steps is not None:
        rows = [r for r in rows if int(r["timesteps"]) <= args.max_steps]
    write_csv(rows, out_dir / "ablation.csv")
    plot(rows, presets, out_dir / "ablation.png", chance)
    thresholds = [float(t) for t in spec.get("thresholds", (0.5, 0.7))]
    table = markdown_table(threshold_table(rows, presets, thresholds), thresholds)
    baseline = str(spec.get("baseline", presets[0]))
    paired = paired_table(rows, presets, baseline)
    for v in spec.get("variants") or []:  # a variant also against its own preset
        if str(v.get("preset", "process")) != baseline:
            paired += paired_table(rows, [str(v["name"])], str(v.get("preset", "process")))
    table += "\nPaired by seed (points of held-out accuracy):\n\n" + paired_markdown(paired)
    (out_dir / "ablation_table.md").write_text(table)
    print(table)
    for preset in presets:
        steps, mean, lo, hi = curve_stats(rows, preset)
        if steps.size:
            print(f"{preset:>8}: final accuracy {mean[-1]:.3f} (min {lo[-1]:.3f}, max {hi[-1]:.3f})"
                  f" at {int(steps[-1])} steps")
    print(f"wrote {out_dir / 'ablation.csv'}, {out_dir / 'ablation.png'} and "
          f"{out_dir / 'ablation_table.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
