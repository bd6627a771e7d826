"""Export a run's trajectories in M3-Bench's format (``m3gym export m3bench-trajectories``).

M3-Bench's ``evaluate_trajectories.py`` reads tasks ``{"id", "type", "steps": [{"step",
"calls": [{"name", "arguments"}]}]}`` (calls in one step are parallel). Each predicted call
carries its arguments *as the agent sent them*: the step's recorded action (``action`` for text,
``raw_action`` for dicts and OpenAI tool calls) is parsed again and its calls paired with the
step's call records. When that pairing fails (a trace written before raw actions were recorded,
code mode), the validated arguments are written with unset optional fields dropped, and the
call says ``"raw_arguments": false``. The reference trajectory of the same tasks is written in
the same format for ``--gt``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from m3gym.parsing import parse_action


def _validated(arguments: Mapping[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in arguments.items() if v is not None}


def step_calls(step: Mapping[str, Any]) -> list[dict[str, Any]]:
    """Return a trace step's calls as M3-Bench calls, with the raw arguments where recorded."""
    calls = [c for c in step.get("calls") or () if c.get("name") != "answer"]
    if not calls:
        return []
    action = step.get("raw_action", step.get("action"))
    raw: list[Any] = []
    if action is not None:
        code = any(c.get("name") == "run_python" for c in calls)
        parsed = [c for c in parse_action(action, code=code).calls if c.name != "answer"]
        names = [c.get("requested_name", c.get("name")) for c in calls]
        if [c.name for c in parsed] == names:
            raw = [dict(c.arguments) for c in parsed]
    out = []
    for i, call in enumerate(calls):
        found = i < len(raw)
        out.append({"name": call.get("name"),
                    "arguments": raw[i] if found else _validated(call.get("arguments") or {}),
                    "raw_arguments": found})
    return out


def m3bench_trajectory(trace: Mapping[str, Any]) -> dict[str, Any]:
    """Return the predicted trajectory of a stored trace (rounds without a tool call left out)."""
    steps = []
    for index, step in enumerate(trace.get("steps") or ()):
        calls = step_calls(step)
        if calls:
            steps.append({"step": index, "calls": calls})
    return {"id": str(trace.get("episode_id", "")), "type": str(trace.get("family", "")),
            "steps": steps}


def m3bench_reference(trace: Mapping[str, Any]) -> dict[str, Any]:
    """Return the reference trajectory of a stored trace's task in M3-Bench's format."""
    task = trace.get("task") or {}
    steps = [{"step": i, "calls": [{"name": c.get("name"), "arguments": c.get("arguments") or {}}
                                   for c in step]}
             for i, step in enumerate(task.get("reference") or ())]
    return {"id": str(trace.get("episode_id", "")), "type": str(trace.get("family", "")),
            "steps": steps}


def _write(path: Path, items: list[dict[str, Any]]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    if path.suffix == ".json":
        path.write_text(json.dumps(items, indent=1) + "\n")
    else:
        path.write_text("".join(json.dumps(x) + "\n" for x in items))


def scored_traces(run_dir: str | Path) -> Iterable[dict[str, Any]]:
    """Yield the stored traces of a run folder's scored episodes, in row order."""
    from m3gym.eval.episodes_jsonl import read_episode_rows

    run = Path(run_dir)
    if not (run / "episodes.jsonl").is_file():
        raise FileNotFoundError(f"{run} is not an m3gym run folder (no episodes.jsonl)")
    for row in read_episode_rows(run / "episodes.jsonl"):
        path = run / "traces" / f"{row['episode_id']}.json"
        if row.get("status") == "ok" and path.is_file():
            yield json.loads(path.read_text())


def write_m3bench_trajectories(run_dir: str | Path, out: str | Path,
                               reference_out: str | Path | None = None) -> tuple[int, int]:
    """Write the run's predicted trajectories to ``out`` (and references to ``reference_out``).

    A ``.json`` path gets a JSON list (what ``evaluate_trajectories.py --pred/--gt`` reads),
    any other one JSON lines. Returns ``(trajectories, calls with raw arguments missing)``.
    """
    traces = list(scored_traces(run_dir))
    preds = [m3bench_trajectory(t) for t in traces]
    _write(Path(out), preds)
    if reference_out is not None:
        _write(Path(reference_out), [m3bench_reference(t) for t in traces])
    missing = sum(1 for p in preds for s in p["steps"] for c in s["calls"]
                  if not c["raw_arguments"])
    return len(preds), missing
