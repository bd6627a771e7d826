"""Hand-built tasks, reference calls and call records shared by the scoring tests."""

from __future__ import annotations

from typing import Any

import numpy as np

from m3gym.spec import AnswerSpec, RefCall, Task
from m3gym.trace import TraceCall

IMG = np.zeros((8, 8, 3), np.uint8)


def task(checkpoints=(), safety=(), reference=()) -> Task:
    """Return a one-image level-3 task with these checkpoints, safety rules and reference."""
    return Task(task_id="t", family="f", level=3, domain="Science", images=(IMG,), question="?",
                answer=AnswerSpec("42"), reference=reference, checkpoints=tuple(checkpoints),
                safety=tuple(safety))


def call(call_id: str, name: str, ok: bool = True, **arguments) -> TraceCall:
    """Return a step-0 call record (a failed one carries the error ``"bad"``)."""
    return TraceCall(step=0, call_id=call_id, name=name, requested_name=name,
                      arguments=arguments, ok=ok, error=None if ok else "bad")


def rc(id_: str, name: str, deps: tuple[str, ...] = (), **args: Any) -> RefCall:
    """Return a reference call ``name(**args)`` depending on ``deps``."""
    return RefCall(id=id_, name=name, arguments=args, depends_on=deps)


def cr(step: int, call_id: str, name: str, ok: bool = True, out: int | None = None,
       **args: Any) -> TraceCall:
    """Return a call record of ``step`` that made image ``out`` from ``args["image_index"]``."""
    return TraceCall(step=step, call_id=call_id, name=name, requested_name=name,
                      arguments=args, ok=ok, output_index=out,
                      input_index=args.get("image_index"))


A = [0, 0, 500, 500]
B = [500, 500, 1000, 1000]

REFERENCE = (
    (rc("r1", "crop", image_index=0, bbox_2d=A), rc("r2", "crop", image_index=0, bbox_2d=B)),
    (rc("r3", "web_search", ("r1",), query="acme corp founder"),),
    (rc("r4", "fetch_webpage", ("r3",), url="https://wiki.local/acme"),),
)
"""Four reference calls in three steps: two parallel crops, then a search, then a fetch."""
