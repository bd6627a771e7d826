"""Judge checkpoints: the checkpoints m3gym cannot verify exactly, scored by an optional VLM judge.

A record's ``judge_checkpoints`` (imported from Agentic-MME's ``visual_check`` questions and
``google_search`` strategy checkpoints) are never part of S or V. They are scored only when an
OpenAI-compatible endpoint is given (off by default) and reported as their own metric, ``judge``:
the fraction of judge checkpoints passed.

A V checkpoint passes when, for *any* of the episode's images, the judge's reply to the checkpoint
question matches the expected answer under m3gym's strict answer rule
(:func:`m3gym.scoring.answer.answer_is_correct`: normalized exact match, hedges such as "yes or
no" never pass; Agentic-MME accepts any reply that *contains* the expected answer). An S checkpoint
shows the judge the agent's search queries as text and asks whether they meet the requirement.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from m3gym.scoring.answer import answer_is_correct
from m3gym.spec import AnswerSpec

SYSTEM_PROMPT = ("You answer questions about images. Give the short answer only, without "
                 "explanation.")
"""System prompt of every judge request."""

S_TEMPLATE = ("An agent ran these search queries:\n{context}\n\nRequirement: {question}\n"
              "Do the queries meet the requirement? Answer yes or no.")
"""The user text of an S judge request (``context``: one query per line)."""

Ask = Callable[[str, np.ndarray | None], str]
"""A judge: ``(text, image or None) -> reply``."""


@dataclass(frozen=True)
class JudgeVerdict:
    """The outcome of one judge checkpoint: ``passed`` and the judge's ``replies``."""

    id: str
    axis: str
    passed: bool
    replies: tuple[str, ...] = ()
    error: str | None = None


@dataclass(frozen=True)
class JudgeReport:
    """Judge checkpoints of one episode: ``judge`` = passed / total (``None`` when not judged)."""

    judge: float | None
    verdicts: tuple[JudgeVerdict, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        """Return the report as JSON-ready data."""
        return {"judge": self.judge,
                "checkpoints": {v.id: {"axis": v.axis, "passed": v.passed,
                                       "replies": list(v.replies), "error": v.error}
                                for v in self.verdicts}}


def openai_judge(base_url: str, model: str | None = None, api_key: str = "EMPTY",
                 timeout: float = 60.0, max_retries: int = 2, client: Any = None) -> Ask:
    """Return a judge that asks the OpenAI-compatible endpoint ``base_url`` (temperature 0).

    ``model`` ``None`` uses the first model the endpoint lists. Needs the ``eval`` extra (openai).
    """
    from m3gym.agents.openai_agent import OpenAIAgent, OpenAIAgentConfig, image_data_url

    agent = OpenAIAgent(OpenAIAgentConfig(base_url=base_url, model=model, api_key=api_key,
                                          timeout=timeout, max_retries=max_retries,
                                          max_tokens=100), client=client)

    def ask(text: str, image: np.ndarray | None) -> str:
        parts: list[dict[str, Any]] = []
        if image is not None:
            parts.append({"type": "image_url", "image_url": {"url": image_data_url(image)}})
        parts.append({"type": "text", "text": text})
        agent.messages = [{"role": "system", "content": SYSTEM_PROMPT},
                          {"role": "user", "content": parts}]
        agent.usage = {"requests": 0, "retries": 0, "prompt_tokens": 0, "completion_tokens": 0}
        message = agent._complete()  # the agent's request, retries and error handling
        return str(getattr(message, "content", "") or "").strip()

    return ask


def judge_checkpoint(ask: Ask, question: str, expected: str,
                     images: Sequence[np.ndarray] = (), axis: str = "V",
                     context: Sequence[str] = (), checkpoint_id: str = "") -> JudgeVerdict:
    """Score one judge checkpoint with judge ``ask`` over an episode's ``images``.

    V: the question is asked of each image in turn until a reply matches ``expected`` (any-pass,
    as Agentic-MME does; no image: not passed). S: one text request with the agent's search
    queries ``context``. A failing endpoint gives a verdict with ``error`` set, never an exception
    (:class:`~m3gym.agents.errors.InfrastructureError` is caught).
    """
    from m3gym.agents.errors import InfrastructureError

    spec = AnswerSpec(value=str(expected))
    replies: list[str] = []
    try:
        if axis == "S":
            text = S_TEMPLATE.format(context="\n".join(context) or "(none)", question=question)
            replies.append(ask(text, None))
        else:
            for image in images:
                replies.append(ask(question, np.asarray(image)))
                if answer_is_correct(replies[-1], spec):
                    break
    except InfrastructureError as exc:
        return JudgeVerdict(checkpoint_id, axis, False, tuple(replies), str(exc))
    passed = bool(replies) and answer_is_correct(replies[-1], spec)
    return JudgeVerdict(checkpoint_id, axis, passed, tuple(replies))


def score_judge_checkpoints(checkpoints: Sequence[Mapping[str, Any]],
                            expected: Mapping[str, str], images: Sequence[np.ndarray],
                            ask: Ask | None = None, queries: Sequence[str] = ()
                            ) -> JudgeReport:
    """Score a record's ``judge_checkpoints`` on an episode (its ``images``, search ``queries``).

    ``expected`` maps checkpoint id to the expected reply (``metadata["amme"]["judge_expected"]``
    of an imported record; default ``"yes"``). A checkpoint with an ``image`` index is judged on
    that image only. Without ``ask`` (no endpoint: the default) nothing is judged and ``judge``
    is ``None``; with no judge checkpoints it is ``None`` too. Never touches S or V.
    """
    if ask is None or not checkpoints:
        return JudgeReport(None)
    verdicts = []
    for cp in checkpoints:
        idx = cp.get("image")
        imgs = images if idx is None else [images[idx]] if 0 <= int(idx) < len(images) else []
        verdicts.append(judge_checkpoint(ask, str(cp["question"]),
                                         str(expected.get(str(cp["id"]), "yes")), imgs,
                                         str(cp.get("axis", "V")), queries, str(cp["id"])))
    return JudgeReport(sum(v.passed for v in verdicts) / len(verdicts), tuple(verdicts))


def score_task_judges(task: Any, images: Sequence[np.ndarray], ask: Ask | None = None,
                      queries: Sequence[str] = ()) -> JudgeReport:
    """Score the judge checkpoints a records task carries (``task.metadata``) on an episode.

    The checkpoints are ``metadata["judge_checkpoints"]``; expected replies come from the
    record's ``metadata["amme"]["judge_expected"]`` (``yes`` when absent). See
    :func:`score_judge_checkpoints`.
    """
    meta = getattr(task, "metadata", None) or {}
    record_meta = meta.get("record_metadata") or {}
    expected = (record_meta.get("amme") or {}).get("judge_expected") or {}
    return score_judge_checkpoints(list(meta.get("judge_checkpoints") or ()), expected, images,
                                   ask, queries)


def score_env_judges(env: Any, ask: Ask | None = None) -> JudgeReport:
    """Score the judge checkpoints of the episode an m3gym env has just played.

    The judged images are every image of the episode's state except the inputs (the agent's
    artifacts; the inputs when it made none, as Agentic-MME falls back to the original), the
    queries those of its successful ``web_search`` calls. Reads ``env.unwrapped``'s ``task``,
    ``state`` and ``trace``.
    """
    base = getattr(env, "unwrapped", env)
    task = base.task
    n_inputs = len(task.images)
    arrays = [entry.array for entry in base.state]
    images = arrays[n_inputs:] or arrays[:n_inputs]
    queries = [str(c.arguments.get("query", "")) for c in base.trace.calls
               if c.name == "web_search" and c.ok]
    return score_task_judges(task, images, ask, queries)
