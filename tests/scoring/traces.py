"""Hand-built tasks and call records shared by the scoring tests."""

from __future__ import annotations

import numpy as np

from m3gym.spec import AnswerSpec, Task
from m3gym.trace import CallRecord

IMG = np.zeros((8, 8, 3), np.uint8)


def task(checkpoints=(), safety=(), reference=()) -> Task:
    """Return a one-image level-3 task with these checkpoints, safety rules and reference."""
    return Task(task_id="t", family="f", level=3, domain="Science", images=(IMG,), question="?",
                answer=AnswerSpec("42"), reference=reference, checkpoints=tuple(checkpoints),
                safety=tuple(safety))


def call(call_id: str, name: str, ok: bool = True, **arguments) -> CallRecord:
    """Return a step-0 call record (a failed one carries the error ``"bad"``)."""
    return CallRecord(step=0, call_id=call_id, name=name, requested_name=name,
                      arguments=arguments, ok=ok, error=None if ok else "bad")
