"""Shared sweeps of the document families' tests (receipt_total, chart_value, ui_status).

``check_family`` (tests/test_check_family.py) covers every guarantee on two seeds; these sweeps
run more seeds of the same properties for the new families: the oracle replaying the reference
through the real tools scores S = V = 1 and leaves the evidence legible, the evidence is
illegible in the input at view size, and the answer is exactly one of distinct choices.
"""

from __future__ import annotations

from m3gym.scoring.answer import answer_is_correct
from m3gym.scoring.checkpoints import evaluate_checkpoints, measure_evidence
from m3gym.state import ImageState
from m3gym.tasks.registry import make_task
from m3gym.tasks.spec import Task
from m3gym.tools.base import ToolContext
from m3gym.tools.registry import ToolRegistry
from m3gym.tools.visual import VISUAL_TOOLS
from m3gym.trace import Trace

REGISTRY = ToolRegistry(VISUAL_TOOLS)


def replay(task: Task) -> tuple[ImageState, Trace]:
    """Run the reference trajectory through the real visual tools, step by step."""
    state = ImageState()
    for img in task.images:
        state.add_root(img)
    ctx = ToolContext(state=state, visible_images=len(state))
    trace = Trace()
    for s, step in enumerate(task.reference):
        ctx.visible_images = len(state)
        trace.steps.append([REGISTRY.execute(ctx, c.name, c.arguments, s, c.id) for c in step])
    return state, trace


def check_seeds(family: str, seeds: range, difficulty: float | None = None) -> list[Task]:
    """Assert the oracle, legibility and choice properties on ``seeds``; return the tasks."""
    tasks = []
    for seed in seeds:
        task = make_task(family, seed, difficulty=difficulty)
        roots = ImageState()
        for img in task.images:
            roots.add_root(img)
        for ev in task.evidence:
            assert not measure_evidence(roots[ev.image], ev).passed, (seed, ev.id)
        state, trace = replay(task)
        assert all(c.ok for c in trace.calls), (seed, [c.error for c in trace.calls])
        report = evaluate_checkpoints(task, trace, state)
        assert report.S == 1.0 and report.V == 1.0, (
            seed, [(r.checkpoint_id, r.reason) for r in report.results if not r.passed])
        assert task.choices is not None and len(set(task.choices)) == len(task.choices) == 6
        assert [answer_is_correct(c, task.answer) for c in task.choices].count(True) == 1, seed
        assert task.answer.value in task.choices
        tasks.append(task)
    return tasks
