"""Agentic-MME's overthink penalty: ``OT = max(0, C_agent − C_ref) / (C_ref + 1)``.

``C`` counts tool interactions that produce new artifacts or results:

* ``C_ref`` — every reference call (each produces an image or a retrieval result).
* ``C_agent`` — every tool call the agent issued, failed ones included (``answer`` is not a tool
  call and unparseable actions are not interactions). A failed call is wasted work the agent
  chose to do, so it counts: an agent that misfires ten times has overthought as much as one
  that crops ten times, and counting only successes would let retries of broken calls go free.

OT is 0 for an agent at or under the reference's budget and grows by ``1/(C_ref + 1)`` per extra
call; it is not bounded above (Agentic-MME reports the mean).
"""

from __future__ import annotations

from collections.abc import Sequence

from m3gym.spec import RefCall
from m3gym.trace import TraceCall


def reference_interactions(task_reference: Sequence[Sequence[RefCall]]) -> int:
    """Return ``C_ref``: the number of reference calls."""
    return sum(len(step) for step in task_reference)


def agent_interactions(trace_steps: Sequence[Sequence[TraceCall]]) -> int:
    """Return ``C_agent``: the number of tool calls issued, failed ones included."""
    return sum(1 for step in trace_steps for c in step if c.name != "answer")


def overthink(agent_calls: int, reference_calls: int) -> float:
    """Return ``max(0, agent_calls − reference_calls) / (reference_calls + 1)``."""
    return max(0, agent_calls - reference_calls) / (reference_calls + 1)


def overthink_score(
    task_reference: Sequence[Sequence[RefCall]], trace_steps: Sequence[Sequence[TraceCall]]
) -> float:
    """Return the overthink penalty of a trace against the task's reference."""
    return overthink(agent_interactions(trace_steps), reference_interactions(task_reference))
