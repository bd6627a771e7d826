"""The heuristic agent: a real, non-oracle tool-using pipeline (OpenCV + OCR + retrieval).

It sees exactly what an LLM agent sees — the prompt text, the images at view resolution, the
result texts of its calls, the tool schemas, the choices and the budgets — never the task, its
id, family or seed. Per kind of question (told from its wording by the plan table,
:mod:`m3gym.agents.heuristic.table`) it runs a small *plan*: a Python generator that yields tool
calls (dict form; several calls in one step run in parallel) and receives each step's outcome,
then returns the answer. Plans locate evidence with OpenCV (colour masks for colours the question
names, 3x3 position phrases, bright paper regions, text-line orientation), crop it with zoom,
read it with OCR (:mod:`m3gym.agents.ocr`), match it against ``info["choices"]``, and for
look-up questions search the offline web and pick the choice a fetched page states.

``use_tools=False`` answers from the initial view only (OCR of the images as shown): the
no-tools ablation. It answers only what it actually read, else a fixed ``"unknown"`` (never a
guess among the choices), so its accuracy measures reading without tools.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from m3gym.agents.heuristic.table import planner_for
from m3gym.agents.heuristic.text import choice_scores, question_of
from m3gym.agents.heuristic.view import BudgetExhausted, EpisodeView, Plan, StepOutcome
from m3gym.agents.ocr import read_words_batch, words_text

UNKNOWN_ANSWER = "unknown"
"""What the no-tools ablation answers when it read nothing (it never guesses among choices)."""

NO_TOOLS_MIN_SCORE = 90.0
"""Similarity (0-100) a reading of the initial view needs before the no-tools mode answers it."""


def _full_sizes(prompt: str) -> dict[int, tuple[int, int]]:
    """Return ``{index: (width, height)}`` of the images the reset prompt lists."""
    return {int(m.group(1)): (int(m.group(2)), int(m.group(3)))
            for m in re.finditer(r"- Image (\d+): (\d+)x(\d+) pixels", prompt)}


class HeuristicAgent:
    """OpenCV + OCR + search pipeline agent; see the module docstring.

    Args:
        seed: seeds the fallback guess among the choices when nothing could be read.
        use_tools: when False, answer at once from the initial view (no-tools ablation).
        reserve: tool calls kept unspent (the plan stops early to stay within the budget).
    """

    name = "heuristic"

    def __init__(self, seed: int = 0, use_tools: bool = True, reserve: int = 0) -> None:
        self.rng = np.random.default_rng(seed)
        self.use_tools = use_tools
        self.reserve = reserve
        self.view: EpisodeView | None = None
        self._plan: Plan | None = None
        self._pending: list[dict[str, Any]] | None = None

    # ------------------------------------------------------------------ Agent protocol
    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Start an episode: parse the prompt and remember choices, images and budget."""
        prompt = str(observation.get("text", ""))
        self.view = EpisodeView(
            question=question_of(prompt),
            choices=tuple(info.get("choices") or ()),
            images={int(i): im for i, im in zip(observation.get("image_indices", ()),
                                                observation.get("images", ()))},
            sizes=_full_sizes(prompt),
            budget=int(info.get("max_tool_calls") or 15),
        )
        self._plan = None
        self._pending = None

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Return the next step's tool calls, or the answer."""
        view = self.view
        if view is None:
            raise RuntimeError("HeuristicAgent.act() before reset()")
        if not self.use_tools:
            read = self._answer_without_tools()
            return {"name": "answer", "arguments": {"text": read or UNKNOWN_ANSWER}}
        try:
            if self._plan is None:
                self._plan = self._make_plan()
                calls = next(self._plan)
            else:
                calls = self._plan.send(self._outcome(observation, info))
        except StopIteration as stop:
            return self._answer(stop.value)
        except BudgetExhausted:
            return self._answer(None)
        if view.calls_used + len(calls) > view.budget - self.reserve:
            self._plan.close()
            return self._answer(None)
        view.calls_used += len(calls)
        self._pending = calls
        return calls

    # ------------------------------------------------------------------ internals
    def _make_plan(self) -> Plan:
        assert self.view is not None
        return planner_for(self.view)(self.view)

    def _outcome(self, observation: dict[str, Any], info: dict[str, Any]) -> StepOutcome:
        """Return the step outcome, storing new images by index."""
        assert self.view is not None
        by_index = {int(i): im for i, im in zip(observation.get("image_indices", ()),
                                               observation.get("images", ()))}
        self.view.images.update(by_index)
        records = list(info.get("calls") or [])
        images: list[np.ndarray | None] = []
        indices: list[int | None] = []
        for rec in records:
            idx = rec.get("output_index")
            indices.append(idx)
            images.append(by_index.get(int(idx)) if idx is not None else None)
        return StepOutcome(str(observation.get("text", "")), records, images, indices)

    def _answer(self, text: str | None) -> dict[str, Any]:
        """Return the answer action; falls back to the plan's guess, then a seeded choice."""
        assert self.view is not None
        if not text:
            text = self.view.guess
        if not text and self.view.choices:
            text = self.view.choices[int(self.rng.integers(len(self.view.choices)))]
        return {"name": "answer", "arguments": {"text": text or "unknown"}}

    def _answer_without_tools(self) -> str | None:
        """Return the choice OCR clearly reads in the initial images as shown, else None.

        No tools and no guessing: the images are read as the agent sees them (no contrast
        stretch), and a choice is answered only when it is read almost verbatim and no other
        choice is read as well (a near tie means nothing was really read).
        """
        assert self.view is not None
        images = list(self.view.images.values())
        if not self.view.choices or not images:
            return None
        texts = [words_text(ws) for ws in read_words_batch(images, enhance=False)]
        scores = choice_scores(texts, self.view.choices)
        ranked = sorted(range(len(scores)), key=lambda i: (-scores[i], i))
        top = ranked[0]
        runner_up = scores[ranked[1]] if len(ranked) > 1 else 0.0
        if scores[top] >= NO_TOOLS_MIN_SCORE and scores[top] - runner_up >= 5.0:
            return self.view.choices[top]
        return None
