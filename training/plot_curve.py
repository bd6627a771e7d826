"""Plot a training run's held-out learning curve (overall and per family) against its floors.

Usage::

    python training/plot_curve.py --run runs/maskable_ppo_classic \\
        --floor "random policy=runs/classic_floor_random/summary.json" \\
        --floor "no-tool PPO=runs/no_tool_classic" --chance 0.125 \\
        --out docs/results/maskable_ppo_classic

Reads ``eval_history.jsonl`` of the run (written by :mod:`train_sb3`'s held-out evaluation) and
writes ``OUT.png`` (accuracy vs environment steps, one line per family, dashed floors) and
``OUT.csv`` (timesteps, accuracy, per-family accuracy, mean length, mean S and V). A floor is
``LABEL=PATH`` with PATH a ``summary.json`` (:mod:`evaluate_policy`), a run folder (its best
held-out accuracy) or a number.
"""

from __future__ import annotations

import argparse
import csv
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any


def read_history(run: Path) -> list[dict[str, Any]]:
    """Return the run's held-out evaluations, in order of timesteps."""
    lines = (run / "eval_history.jsonl").read_text().splitlines()
    return sorted((json.loads(x) for x in lines if x.strip()), key=lambda h: h["timesteps"])


def floor_value(spec: str) -> tuple[str, float]:
    """Return ``(label, accuracy)`` of a ``LABEL=PATH|NUMBER`` floor."""
    label, _, src = spec.partition("=")
    path = Path(src)
    if path.is_dir():
        return label, max(h["accuracy"] for h in read_history(path))
    if path.suffix == ".json":
        return label, float(json.loads(path.read_text())["accuracy"])
    return label, float(src)


def curve_rows(history: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Return one flat CSV row per evaluation."""
    families = sorted({f for h in history for f in h.get("accuracy_by_family", {})})
    rows = []
    for h in history:
        row = {"timesteps": h["timesteps"], "accuracy": h["accuracy"],
               "mean_length": h.get("mean_length"),
               "S": h.get("metrics", {}).get("S"), "V": h.get("metrics", {}).get("V")}
        for f in families:
            row[f"accuracy_{f}"] = h.get("accuracy_by_family", {}).get(f)
        rows.append(row)
    return rows


def plot(rows: Sequence[dict[str, Any]], floors: Sequence[tuple[str, float]],
         chance: float | None, title: str, path: Path) -> None:
    """Draw the curve: overall accuracy (bold), per family (thin), floors (dashed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    steps = [r["timesteps"] for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.2))
    ax.plot(steps, [r["accuracy"] for r in rows], marker="o", lw=2.2, color="black",
            label="held-out accuracy")
    for key in sorted(k for k in rows[0] if k.startswith("accuracy_")):
        ax.plot(steps, [r[key] for r in rows], lw=1, alpha=0.8, label=key[len("accuracy_"):])
    styles = iter(["--", "-.", ":", (0, (5, 1))])
    for label, value in floors:
        ax.axhline(value, color="gray", linestyle=next(styles, "--"), label=f"{label} {value:.2f}")
    if chance is not None:
        ax.axhline(chance, color="lightgray", linestyle=":", label=f"chance {chance:.3f}")
    ax.set_xlabel("environment steps")
    ax.set_ylabel("accuracy")
    ax.set_ylim(0, 1)
    ax.set_title(title, fontsize=10)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, loc="upper left")
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)


def main(argv: Sequence[str] | None = None) -> int:
    """Command-line entry point."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--run", required=True, help="training output folder")
    parser.add_argument("--floor", action="append", default=[], metavar="LABEL=PATH|NUMBER")
    parser.add_argument("--chance", type=float, default=None)
    parser.add_argument("--title", default=None)
    parser.add_argument("--out", required=True, help="output path without extension")
    args = parser.parse_args(argv)
    run = Path(args.run)
    rows = curve_rows(read_history(run))
    if not rows:
        raise SystemExit(f"no evaluations in {run / 'eval_history.jsonl'}")
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    with open(out.with_suffix(".csv"), "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=list(rows[0]))
        writer.writeheader()
        writer.writerows(rows)
    plot(rows, [floor_value(f) for f in args.floor], args.chance, args.title or run.name,
         out.with_suffix(".png"))
    best = max(rows, key=lambda r: r["accuracy"])
    print(f"final accuracy {rows[-1]['accuracy']:.3f} at {rows[-1]['timesteps']} steps; best "
          f"{best['accuracy']:.3f} at {best['timesteps']}; wrote {out.with_suffix('.png')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
