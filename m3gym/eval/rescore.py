"""Re-score a stored episode trace offline (other M3 weights, a newer scorer).

A trace JSON (``traces/<episode>.json`` of an eval run folder) holds every call record, the
parse errors of every step and the final answer: :func:`trace_from_dict` rebuilds the
:class:`~m3gym.trace.Trace` scoring reads from exactly those records, and the images the
checkpoints need are re-created by replaying the calls (:func:`~m3gym.eval.replay.replay_trace`).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from m3gym.trace import Trace, TraceCall

_RECORD_FIELDS = ("step", "call_id", "name", "requested_name", "arguments", "ok", "error",
                  "result_text", "output_index", "input_index", "payload")


def trace_from_dict(trace: Mapping[str, Any]) -> Trace:
    """Return the :class:`Trace` of a stored trace JSON (steps, parse errors and answer)."""
    steps = trace.get("steps")
    if not isinstance(steps, list):
        raise ValueError("trace has no 'steps' list: not an m3gym trace JSON")
    out = Trace()
    for index, step in enumerate(steps):
        calls = []
        for call in step.get("calls", []):
            missing = [f for f in ("step", "call_id", "name", "ok") if f not in call]
            if missing:
                raise ValueError(f"call record of step {index} lacks {missing}")
            kwargs = {f: call[f] for f in _RECORD_FIELDS if f in call}
            kwargs.setdefault("requested_name", call["name"])
            kwargs.setdefault("arguments", {})
            kwargs["arguments"] = dict(kwargs["arguments"] or {})
            kwargs["payload"] = dict(kwargs.get("payload") or {})
            kwargs["result_text"] = kwargs.get("result_text") or ""
            calls.append(TraceCall(**kwargs))
        out.steps.append(calls)
        out.parse_errors.extend((index, str(e)) for e in step.get("parse_errors", []))
    answer = trace.get("answer")
    if answer is not None and steps:
        out.answer = str(answer)
        out.answer_step = len(steps) - 1
    return out


def rescore_trace(
    trace: Mapping[str, Any], *, m3_weights: Mapping[str, float] | None = None,
    view_size: int | None = None,
) -> dict[str, Any]:
    """Return :func:`~m3gym.scoring.episode_score.score_episode`'s result for a stored trace.

    ``m3_weights`` replaces the M3 term weights; ``view_size`` defaults to the one the episode
    ran with (its ``recreate.env_args``, else the env default).
    """
    from m3gym.eval.replay import replay_trace
    from m3gym.scoring.episode_score import score_episode

    if trace.get("status", "ok") != "ok":
        raise ValueError(f"trace status is {trace.get('status')!r}: only finished episodes "
                         "can be re-scored")
    env = replay_trace(trace)
    stored = trace.get("task_hash")
    if stored is not None and env.task.content_hash() != stored:
        before = ((trace.get("task") or {}).get("metadata") or {}).get("records_sha256")
        after = env.task.metadata.get("records_sha256")
        why = (f" (records file sha256 {before} then, {after} now)"
               if before is not None and before != after else "")
        raise ValueError(f"task {trace.get('task_id')} changed since the run{why}: its "
                         "content hash differs from the trace's task_hash")
    size = view_size if view_size is not None else int(env.view_size)
    return score_episode(env.task, trace_from_dict(trace), env.state, view_size=size,
                         m3_weights=m3_weights)


def main(argv: Sequence[str] | None = None) -> int:
    """CLI: ``python -m m3gym.eval.rescore TRACE.json... [--m3-weights JSON] [--out FILE]``."""
    p = argparse.ArgumentParser(prog="python -m m3gym.eval.rescore", description=__doc__)
    p.add_argument("traces", nargs="+", type=Path, help="trace JSON files")
    p.add_argument("--m3-weights", default=None,
                   help='JSON object, e.g. \'{"multi_modal": 1, "multi_hop": 3}\'')
    p.add_argument("--out", type=Path, default=None, help="write {trace path: result} here")
    args = p.parse_args(argv)
    from m3gym.config_errors import ConfigError, ConfigSource, parse_json_text, read_json_file
    from m3gym.reward import M3_WEIGHT_KEYS

    try:
        weights = None
        if args.m3_weights:
            src = ConfigSource("--m3-weights")
            data = src.mapping(parse_json_text(args.m3_weights, src.name), what="a JSON object")
            src.known_keys(data, M3_WEIGHT_KEYS)
            weights = {k: src.number(v, k) for k, v in data.items()}
        results = {}
        for path in args.traces:
            trace = read_json_file(path)
            if not isinstance(trace, dict):
                raise ValueError(f"{path}: not a trace (a JSON object)")
            try:
                results[str(path)] = rescore_trace(trace, m3_weights=weights)
            except ConfigError:
                raise
            except ValueError as exc:
                raise ValueError(f"{path}: {exc}") from None
            except KeyError as exc:
                raise ValueError(f"{path}: not an m3gym trace JSON (no {exc.args[0]!r})") from None
    except (ValueError, FileNotFoundError) as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    text = json.dumps(results, indent=1, default=str)
    if args.out:
        args.out.write_text(text)
    else:
        sys.stdout.write(text + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
