"""One dominant failure label per wrong episode, from Agentic-MME's seven failure modes.

Agentic-MME sorts failed trajectories into: *missing search* (knowledge was needed but never
looked up), *bad search query* (a search was made but could not surface the needed source),
*unfaithful visual tool use* (visual tools were called but the produced artifacts do not capture
the evidence: wrong region, wrong angle, destroyed detail), *missing visual tool use* (the image
needed a transformation that was never attempted), *overthinking collapse* (redundant calls far
beyond the reference, or the budget ran out), *tool misexecution* (malformed or failing calls)
and *post-visual perception deficit* (the evidence was surfaced correctly, the answer is still
wrong). The paper labels with an LLM judge; m3gym decides from the trace and the exact
checkpoint report with the ordered rules below. The **first** rule that fires wins, which picks
the earliest, most consequential bottleneck (in m3gym's tasks the visual clue feeds the search,
so visual failures are checked before search failures, and overthinking only when the process
itself was sound).

====  ==================================  ====================================================
#     label                               fires when
====  ==================================  ====================================================
0     ``None``                            the answer is correct
1     ``tool_misexecution``               at least ``misexecution_share`` (½) of the attempts
                                          (calls + unparseable actions) failed, or a needed
                                          tool was attempted but never once succeeded (for a
                                          failed ``v_true``: visual tools were attempted and
                                          none succeeded)
2     ``missing_visual_tool_use``         a visual checkpoint failed and none of the tools it
                                          needs was ever applied successfully (``v_true``: no
                                          visual tool at all)
3     ``unfaithful_visual_tool_use``      a visual checkpoint (``crop_covers``,
                                          ``rotate_upright``, ``contrast_op``, ``global_op``,
                                          ``v_tool``, ``v_true``) failed although visual tools
                                          were called
4     ``missing_search``                  the task needs retrieval (``search_hit``/``fetch``
                                          checkpoint or a reference retrieval call) and no
                                          retrieval call succeeded
5     ``bad_search_query``                a ``search_hit`` or ``fetch`` checkpoint failed
                                          although retrieval calls succeeded
6     ``overthinking_collapse``           ``overthink ≥ overthink_threshold`` (1.0) with at
                                          least ``min_calls`` (6) calls, or no answer was given
                                          after at least ``min_calls`` calls (budget exhausted)
7     ``post_visual_perception_deficit``  otherwise: every checkpoint passed, the answer is
                                          wrong
====  ==================================  ====================================================

Two labels come from the evaluation harness rather than these rules: when the model endpoint
refuses the model's own output (``transformers serve`` cannot parse its tool-call JSON; a server
that names a call without ``arguments`` in its error body) the episode ends there, unanswered, as
``tool_misexecution``; when the conversation has grown past the model's context (the server says
so: vLLM "maximum context length") it ends as ``context_overflow``
(:data:`HARNESS_FAILURE_LABELS`). Both are scored failures of the model, never infrastructure
errors (:class:`m3gym.agents.errors.ModelOutputError`).

"Needed tools" of a checkpoint: ``crop_covers`` → ``crop``; ``rotate_upright`` → ``rotate``,
``flip``; ``contrast_op``/``global_op``/``v_tool`` → its ``tools``; ``search_hit`` → its
``tool``; ``fetch`` → ``fetch_webpage``; ``v_true`` → any visual tool.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from m3gym.scoring.checkpoint_tracker import CheckpointReport
from m3gym.spec import Checkpoint, Task
from m3gym.tools.catalogue import RETRIEVAL_TOOL_NAMES as _RETRIEVAL
from m3gym.tools.catalogue import TOOL_ALIASES, VISUAL_TOOL_NAMES, canonical_tool
from m3gym.trace import Trace

FAILURE_LABELS: tuple[str, ...] = (
    "missing_search", "bad_search_query", "unfaithful_visual_tool_use",
    "missing_visual_tool_use", "overthinking_collapse", "tool_misexecution",
    "post_visual_perception_deficit",
)
"""The seven Agentic-MME labels :func:`classify_failure` decides between."""
HARNESS_FAILURE_LABELS: tuple[str, ...] = ("context_overflow",)
"""Labels the eval harness sets without :func:`classify_failure`: ``context_overflow`` = the
prompt outgrew the model's context and the endpoint refused it (the episode ends unanswered)."""
RETRIEVAL_TOOL_NAMES: frozenset[str] = _RETRIEVAL | frozenset(TOOL_ALIASES)
"""Retrieval tools, the harness aliases included."""
VISUAL_KINDS: frozenset[str] = frozenset({
    "crop_covers", "rotate_upright", "contrast_op", "global_op", "v_tool", "v_true",
})
SEARCH_KINDS: frozenset[str] = frozenset({"search_hit", "fetch"})


def needed_tools(checkpoint: Checkpoint) -> frozenset[str]:
    """Return the tool names a checkpoint can only be passed with."""
    kind, params = checkpoint.kind, checkpoint.params
    if kind == "crop_covers":
        return frozenset({"crop"})
    if kind == "rotate_upright":
        return frozenset({"rotate", "flip"})
    if kind in ("contrast_op", "global_op", "v_tool"):
        return frozenset(str(t) for t in params.get("tools", ()))
    if kind == "search_hit":
        return frozenset({str(params.get("tool", "web_search"))})
    if kind == "fetch":
        return frozenset({"fetch_webpage"})
    if kind == "v_true":
        return VISUAL_TOOL_NAMES
    return frozenset()


def _canonical(name: str) -> str:
    return canonical_tool(name)


def needs_retrieval(task: Task) -> bool:
    """Return whether the task needs retrieval (a search checkpoint or reference retrieval call)."""
    if any(cp.kind in SEARCH_KINDS for cp in task.checkpoints):
        return True
    return any(_canonical(c.name) in RETRIEVAL_TOOL_NAMES for c in task.reference_calls)


def _failed_checkpoints(task: Task, report: CheckpointReport) -> list[Checkpoint]:
    passed = set(report.passed_ids)
    return [cp for cp in task.checkpoints if cp.id not in passed]


def _misexecution(trace: Trace, needed: Iterable[str], any_visual: bool, share: float) -> bool:
    attempts = trace.num_calls + len(trace.parse_errors)
    if attempts and trace.num_failed / attempts >= share:
        return True
    attempted = {_canonical(c.name) for c in trace.calls}
    succeeded = {_canonical(c.name) for c in trace.calls if c.ok}
    if any(t in attempted and t not in succeeded for t in needed):
        return True
    return any_visual and bool(attempted & VISUAL_TOOL_NAMES) and not (
        succeeded & VISUAL_TOOL_NAMES)


def classify_failure(
    task: Task,
    trace: Trace,
    checkpoint_report: CheckpointReport,
    answer_correct: bool,
    overthink: float | None = None,
    *,
    misexecution_share: float = 0.5,
    overthink_threshold: float = 1.0,
    min_calls: int = 6,
) -> str | None:
    """Return the dominant failure label of an episode, or ``None`` when it is correct.

    The rules and their order are in the module docstring.
    """
    if answer_correct:
        return None
    failed = _failed_checkpoints(task, checkpoint_report)
    needed: set[str] = set()
    for cp in task.checkpoints:
        if cp.kind != "v_true":
            needed |= needed_tools(cp)
    v_true_failed = any(cp.kind == "v_true" for cp in failed)
    if _misexecution(trace, needed, v_true_failed, misexecution_share):
        return "tool_misexecution"
    called = {_canonical(c.name) for c in trace.calls if c.ok}
    visual_failed = [cp for cp in failed if cp.kind in VISUAL_KINDS]
    if any(not (needed_tools(cp) & called) for cp in visual_failed):
        return "missing_visual_tool_use"
    if visual_failed:
        return "unfaithful_visual_tool_use"
    retrieved = {_canonical(c.name) for c in trace.calls if c.ok} & RETRIEVAL_TOOL_NAMES
    if needs_retrieval(task) and not retrieved:
        return "missing_search"
    if any(cp.kind in SEARCH_KINDS for cp in failed):
        return "bad_search_query"
    many = trace.num_calls >= min_calls
    if many and ((overthink is not None and overthink >= overthink_threshold)
                 or trace.answer is None):
        return "overthinking_collapse"
    return "post_visual_perception_deficit"


def failure_summary(labels: Iterable[str | None]) -> dict[str, Any]:
    """Return counts per failure label (``None`` = correct) over many episodes."""
    counts: dict[str, int] = {label: 0 for label in FAILURE_LABELS}
    correct = 0
    for label in labels:
        if label is None:
            correct += 1
        else:
            counts[label] = counts.get(label, 0) + 1
    return {"correct": correct, "failures": counts}
