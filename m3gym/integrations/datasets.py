"""Prompt datasets for RL trainers: training draws and the frozen splits as rows.

A row holds everything :class:`~m3gym.integrations.trl.M3GymToolEnv` ``reset`` (and verl's agent
loop) need to put an env on its task: ``prompt`` (system + user messages, chat format),
``images`` (the input images at view resolution, PIL), ``env_id``, ``family``, ``task_seed``,
``task_id`` and ``level``. The task list is the one ``m3gym eval`` uses
(:func:`m3gym.eval.runner.env_tasks`): for ``split="train"`` ``n`` distinct training tasks drawn
deterministically from ``seed``; for ``test``/``val`` the frozen split (all of it with
``n=None``). Same arguments ⇒ the same rows, byte for byte.

:func:`prompt_rows` needs nothing beyond m3gym; :func:`prompt_dataset` returns a
``datasets.Dataset`` (``pip install datasets``, part of ``.[trl]`` and ``.[verl]``).

:func:`score_answer` scores a model's answer to a row (bare, ``<answer>``-tagged or an ``answer``
tool call) with the task's own rule, the reasoning-gym ``score_answer(answer, entry)`` contract
for users who train on the rows without the env (see ``docs/datasets.md``).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from functools import lru_cache
from typing import TYPE_CHECKING, Any

import numpy as np

from m3gym.integrations.session import EpisodeSession, task_ref

if TYPE_CHECKING:
    from m3gym.spec import AnswerSpec

TRL_ANSWER_RULE = ("In this environment the episode ends only with the `answer` tool: call it "
                   "with your final answer.")
"""Sentence added to the system prompt of tool-calling rows (TRL parses the calls itself)."""

TEXT_ANSWER_RULE = ("Call tools with <tool_call>{\"name\": ..., \"arguments\": {...}}</tool_call> "
                    "blocks (several blocks in one turn run in parallel); give the final answer "
                    "alone, as <answer>YOUR ANSWER</answer> or with the answer tool.")
"""Sentence for harnesses that parse the model text with m3gym's own parser (verl's loop)."""


def system_message(max_tool_calls: int = 15, max_rounds: int = 15,
                   rule: str = TRL_ANSWER_RULE) -> str:
    """Return the system prompt of native tool calling (schemas travel as the chat's ``tools``).

    ``rule`` is the harness's last sentence on how the episode ends (TRL: the ``answer`` tool).
    """
    from m3gym.agents.prompts import system_prompt

    text = system_prompt(max_tool_calls, max_rounds, "native")
    return f"{text}\n\n{rule}" if rule else text


def task_list(env_id: str, n: int | None, split: str = "train",
              seed: int = 0) -> list[tuple[str, int]]:
    """Return the ``(family, task_seed)`` pairs of the rows (``n=None``: the whole frozen split)."""
    from m3gym.eval.runner import env_tasks

    if n is None:
        if split == "train":
            raise ValueError("n=None (the whole split) needs a frozen split (test or val)")
        n = _split_size(env_id, split)
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    return env_tasks(env_id, split, n, seed)


def _split_size(env_id: str, split: str) -> int:
    """Return how many tasks the frozen ``split`` holds for ``env_id``."""
    from m3gym.eval.runner import env_scope
    from m3gym.eval.splits import FROZEN_SPLITS, TASKS_PER_LEVEL, split_entries
    from m3gym.tasks.registry import get_family

    if split not in FROZEN_SPLITS:
        raise ValueError(f"unknown split {split!r}; use train, {', '.join(FROZEN_SPLITS)}")
    level, families = env_scope(env_id)
    if any(get_family(f).suite != "m3bench" for f in families):
        return TASKS_PER_LEVEL  # the classic suite follows the seed rule, not the manifest
    levels = [level] if level else [1, 2, 3]
    return sum(1 for lv in levels for e in split_entries(split, lv) if e.family in families)


def iter_prompt_rows(env_id: str = "M3Bench-L1", n: int | None = 100, split: str = "train",
                     seed: int = 0, images: bool = True, max_tool_calls: int = 15,
                     max_rounds: int = 15, rule: str = TRL_ANSWER_RULE,
                     tasks: Sequence[tuple[str, int, float | None]] | None = None,
                     **env_kwargs: Any) -> Iterator[dict[str, Any]]:
    """Yield the rows of :func:`prompt_rows` one at a time (images as RGB ``uint8`` arrays).

    ``rule`` ends the system prompt (how the episode ends in the target harness). ``tasks``
    (``(family, task_seed, difficulty)``, e.g. drawn by a curriculum) replaces the env's own
    draws; a row built at a difficulty (from ``tasks`` or the env's ``difficulty``) carries it.
    """
    session = EpisodeSession(env_id, max_tool_calls=max_tool_calls, max_rounds=max_rounds,
                             **env_kwargs)
    system = system_message(max_tool_calls, max_rounds, rule)
    if tasks is None:
        tasks = [(f, s, None) for f, s in task_list(env_id, n, split, seed)]
    for family, task_seed, difficulty in tasks:
        session.start({"env_id": env_id, "family": family, "task_seed": task_seed,
                       **({"difficulty": difficulty} if difficulty is not None else {})})
        task = session.task
        row: dict[str, Any] = {
            "prompt": [{"role": "system", "content": system},
                       {"role": "user", "content": session.prompt}],
            "env_id": env_id, "family": family, "task_seed": int(task_seed),
            "task_id": task.task_id, "level": int(task.level), "split": split,
        }
        if session.info.get("difficulty") is not None:
            row["difficulty"] = float(session.info["difficulty"])
        if images:
            row["images"] = [np.asarray(a) for a in session.input_images]
        yield row


def prompt_rows(env_id: str = "M3Bench-L1", n: int | None = 100, split: str = "train",
                seed: int = 0, images: bool = True, **kwargs: Any) -> list[dict[str, Any]]:
    """Return the prompt rows as plain dicts (see the module docstring)."""
    return list(iter_prompt_rows(env_id, n, split, seed, images, **kwargs))


def prompt_dataset(env_id: str = "M3Bench-L1", n: int | None = 100, split: str = "train",
                   seed: int = 0, images: bool = True, **kwargs: Any) -> Any:
    """Return the prompt rows as a ``datasets.Dataset`` (images as a list of ``Image`` features).

    With ``images=False`` rows carry no pixels and ``M3GymToolEnv.reset`` returns the input
    images instead (smaller datasets for large ``n``). ``split="test"`` with ``n=None`` is the
    frozen test split of ``env_id`` as a dataset.
    """
    from datasets import Dataset, Features, Image, List, Value
    from PIL import Image as PILImage

    rows = []
    for row in iter_prompt_rows(env_id, n, split, seed, images, **kwargs):
        if images:
            row["images"] = [PILImage.fromarray(a) for a in row["images"]]
        rows.append(row)
    message = {"role": Value("string"), "content": Value("string")}
    features = {"prompt": List(message), "env_id": Value("string"), "family": Value("string"),
                "task_seed": Value("int64"), "task_id": Value("string"), "level": Value("int64"),
                "split": Value("string")}
    if images:
        features["images"] = List(Image())
    return Dataset.from_list(rows, features=Features(features))


def split_dataset(split: str = "test", env_id: str = "M3Bench-L1", images: bool = True,
                  **kwargs: Any) -> Any:
    """Return the whole frozen split ``split`` of ``env_id`` as a ``datasets.Dataset``."""
    return prompt_dataset(env_id, None, split=split, images=images, **kwargs)


# --------------------------------------------------------------------------- scoring
def extract_answer(text: str) -> str | None:
    """Return the answer in a model's final text, or ``None`` when it gives none.

    The last ``<answer>`` block or ``answer`` tool call m3gym's parser finds; text without either
    is a *bare* answer and returned whole (stripped). A text that calls other tools but never
    ``answer`` gives ``None``.
    """
    from m3gym.parsing import parse_action

    parsed = parse_action(str(text))
    if parsed.answer is not None:
        return parsed.answer
    if parsed.calls:
        return None
    bare = str(text).strip()
    return bare or None


@lru_cache(maxsize=4096)
def _task_answer(env_id: str, seed: int | None, family: str | None,
                 difficulty: float | None) -> AnswerSpec:
    if family is not None and seed is not None:
        from m3gym.tasks.registry import make_task

        return make_task(family, seed, difficulty=difficulty).answer
    session = EpisodeSession(env_id)  # the env draws the family from the task seed
    session.start({"env_id": env_id, "task_seed": seed,
                   **({"difficulty": difficulty} if difficulty is not None else {})})
    return session.task.answer


def answer_spec(entry: Mapping[str, Any]) -> AnswerSpec:
    """Return the answer spec (accepted spellings, match rule) of the task a row names.

    ``entry`` is a row of :func:`prompt_rows` / :func:`prompt_dataset` (or a verl row, whose
    fields sit in ``extra_info``): ``family`` + ``task_seed``, ``task_id``, ``env_id`` +
    ``task_seed``, or ``env_id`` + ``seed`` (the reset seed), with its ``difficulty`` if any. A
    row that names no task raises ``ValueError``.
    """
    if not isinstance(entry, Mapping):
        raise ValueError(f"entry must be a dataset row (a mapping), got {type(entry).__name__}")
    ref = task_ref(entry)
    seed = ref.options.get("task_seed")
    if seed is None and ref.seed is not None:  # env_id + seed: the reset seed
        return _reset_seed_answer(ref.env_id, int(ref.seed), ref.options.get("difficulty"))
    if seed is None:
        raise ValueError("entry names no task: it needs family + task_seed, task_id, "
                         "env_id + task_seed or env_id + seed (a row of "
                         "m3gym.integrations.datasets)")
    return _task_answer(ref.env_id, int(seed), ref.options.get("family"),
                        ref.options.get("difficulty"))


@lru_cache(maxsize=4096)
def _reset_seed_answer(env_id: str, seed: int, difficulty: float | None) -> AnswerSpec:
    session = EpisodeSession(env_id)  # exactly gym.make(env_id).reset(seed=seed)
    session.start({"env_id": env_id, "seed": seed,
                   **({"difficulty": difficulty} if difficulty is not None else {})})
    return session.task.answer


def score_answer(answer: str | None, entry: Mapping[str, Any]) -> float:
    """Return 1.0 when ``answer`` answers the task of dataset row ``entry``, else 0.0.

    ``answer`` may be bare (``"QX-4817"``, ``" 12.5 "``), wrapped in ``<answer>...</answer>`` or an
    ``answer`` tool call (:func:`extract_answer`). It is matched with the task's own rule
    (:func:`m3gym.scoring.answer.answer_is_correct`, the rule the env's reward uses): normalized
    exact match against the accepted spellings, and for quantity answers exactly one quantity
    equal within the task's tolerance. Hedges score 0: ``"A or B"``, several quantities, every
    choice listed, a longer text around a non-quantity answer. ``None`` or an empty answer
    scores 0; a row that names no task raises ``ValueError``.
    """
    from m3gym.scoring.answer import answer_is_correct

    spec = answer_spec(entry)
    if answer is None:
        return 0.0
    extracted = extract_answer(str(answer))
    return 1.0 if extracted is not None and answer_is_correct(extracted, spec) else 0.0
