"""Data exports for LLM/VLM trainers: verl's parquet and SFT trajectories (``m3gym export``).

- :func:`write_verl` writes the parquet verl's ``RLHFDataset`` reads: ``data_source``,
  ``agent_name`` (``m3gym_agent``), ``prompt`` (chat messages; ``<image>`` marks each input image),
  ``reward_model`` (``style: rule``, the ground truth) and ``extra_info`` (``env_id``,
  ``family``, ``task_seed``, ``task_id``, ``level``, ``split``, ``env_kwargs`` as JSON) from
  which :class:`~m3gym.integrations.verl.M3GymAgentLoop` resets the env. Rows refer to their
  images by task (``images="task"``, the default, a few kB per row): :func:`task_images`
  rebuilds them exactly from ``extra_info`` (what
  :class:`~m3gym.integrations.verl.M3GymRLDataset` does on load). ``images="embed"`` (CLI
  ``--images embed``) adds the ``images`` column with PNG bytes at view resolution instead,
  for loaders that cannot rebuild tasks (about 0.4 MB per row).
  :func:`compute_score` is a ``reward.custom_reward_function`` for runs that score the final text
  only (exact m3gym answer matching; no process terms). With ``curriculum=`` (a
  :class:`~m3gym.curriculum.Curriculum`, its arguments as a dict, or a saved state's path; CLI
  ``--curriculum``) each row's family and difficulty are drawn from the curriculum
  (:func:`curriculum_tasks`), e.g. a state saved by an earlier run, so the dataset concentrates
  on the tasks at the edge of the policy's ability; ``extra_info.difficulty`` records it.
- :func:`sft_records` plays episodes with an agent (``oracle``, ``heuristic``, any registered
  agent, or a run folder of ``m3gym eval`` whose traces are replayed) and turns each into a chat
  trajectory: system prompt (tool schemas inside, as text), user turn with the input images,
  assistant turns with tool calls in OpenAI format (the final answer is an ``answer`` call), tool
  turns with the result text and images. :func:`write_sft` writes them as JSONL + PNG files, or as
  a ``datasets`` parquet that TRL's ``SFTTrainer`` loads unchanged (``messages``, ``images``,
  ``tools`` as a JSON string). Filter by success (rejection sampling) and family/level.

Message content is always a list of ``{"type", "text"}`` blocks (``type: image`` blocks mark the
images in order), so every row has the same Arrow schema.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from m3gym.codec import png_bytes
from m3gym.integrations.session import DEFAULT_ENV_ID, EpisodeSession

AGENT_NAME = "m3gym_agent"
"""verl agent loop name the parquet rows select."""


# --------------------------------------------------------------------------- verl
def curriculum_tasks(curriculum: Any, env_id: str, n: int,
                     seed: int = 0) -> list[tuple[str, int, float]]:
    """Return ``n`` training ``(family, task_seed, difficulty)`` triples drawn from a curriculum.

    ``curriculum`` is a :class:`~m3gym.curriculum.Curriculum`, a dict of its arguments
    (``families`` default to ``env_id``'s) or the path of a saved state. The draws use a
    generator seeded by ``seed`` (the curriculum's own state is not advanced): same inputs, same
    triples.
    """
    from m3gym.curriculum import make_curriculum
    from m3gym.eval.runner import env_scope
    from m3gym.tasks.registry import TRAIN_SEED_LIMIT

    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    cur = make_curriculum(curriculum, env_scope(env_id)[1])
    rng = np.random.default_rng(seed)
    out = []
    for _ in range(n):
        family, difficulty = cur.sample(rng)
        out.append((family, int(rng.integers(0, TRAIN_SEED_LIMIT)), difficulty))
    return out


VERL_IMAGE_MODES: tuple[str, ...] = ("task", "embed")
"""How verl rows carry their input images: by task (rebuilt on load) or embedded PNG bytes."""


def _check_image_mode(images: str) -> None:
    if images not in VERL_IMAGE_MODES:
        raise ValueError(f"images must be one of {', '.join(VERL_IMAGE_MODES)}, got {images!r}")


def verl_rows(env_id: str, n: int | None, split: str = "train", seed: int = 0,
              curriculum: Any = None, images: str = "task",
              **env_kwargs: Any) -> Iterator[dict[str, Any]]:
    """Yield verl ``RLHFDataset`` rows for ``n`` tasks of ``env_id`` (see the module docstring).

    ``images="task"`` rows carry no pixels (:func:`task_images` rebuilds them);
    ``images="embed"`` rows add an ``images`` column of PNG bytes.
    """
    from m3gym.integrations.datasets import TEXT_ANSWER_RULE, iter_prompt_rows
    from m3gym.tasks.registry import make_task

    _check_image_mode(images)
    tasks = None
    if curriculum is not None:
        if split != "train" or not n:
            raise ValueError("a curriculum draws training tasks: use split='train' and n >= 1")
        tasks = curriculum_tasks(curriculum, env_id, n, seed)
    kwargs_json = json.dumps(env_kwargs, sort_keys=True)
    for index, row in enumerate(iter_prompt_rows(env_id, n, split, seed, images=True,
                                                 rule=TEXT_ANSWER_RULE, tasks=tasks,
                                                 **env_kwargs)):
        task = make_task(row["family"], row["task_seed"], family_config(env_kwargs),
                         difficulty=row.get("difficulty"))
        system, user = row["prompt"]
        marks = "".join("<image>" for _ in row["images"])
        out: dict[str, Any] = {
            "data_source": f"m3gym/{env_id}",
            "agent_name": AGENT_NAME,
            "prompt": [system, {"role": "user", "content": marks + user["content"]}],
        }
        if images == "embed":
            out["images"] = [{"bytes": png_bytes(a)} for a in row["images"]]
        out.update({
            "ability": "visual_tool_use",
            "reward_model": {"style": "rule", "ground_truth": task.answer.value},
            "extra_info": {"env_id": env_id, "family": row["family"],
                           "task_seed": row["task_seed"], "task_id": row["task_id"],
                           "level": row["level"], "split": split, "index": index,
                           "env_kwargs": kwargs_json,
                           **({"difficulty": row["difficulty"]} if "difficulty" in row else {})},
        })
        yield out


def family_config(env_kwargs: Mapping[str, Any]) -> dict[str, Any]:
    """Return the family config the env built with ``env_kwargs`` gives its tasks.

    ``family_config``, the records env's ``records``/``split`` and pixel budget (its family's
    config), the scene's ``scenes``/``backgrounds`` (photographic scenes, read by
    ``make_task``) and the ``allow_outside`` opt-in of either.
    """
    config = dict(env_kwargs.get("family_config") or {})
    for key in ("records", "split", "scenes", "backgrounds"):
        if env_kwargs.get(key) is not None:
            config[key] = env_kwargs[key]
    if env_kwargs.get("allow_outside"):  # the data-folder opt-in (records, backgrounds)
        config["allow_outside"] = True
    if env_kwargs.get("records") is not None:  # the records env's pixel budget
        for key in ("max_image_pixels", "max_record_pixels"):
            if env_kwargs.get(key) is not None:
                config[key] = env_kwargs[key]
    return config


def row_env_kwargs(extra_info: Mapping[str, Any]) -> dict[str, Any]:
    """Return the ``gym.make`` arguments a verl row was exported with (``extra_info.env_kwargs``).

    Missing means none; text that is not a JSON object raises
    :class:`~m3gym.config_errors.ConfigError` / ``ValueError`` naming the field.
    """
    from m3gym.config_errors import parse_json_text

    raw = extra_info.get("env_kwargs") or "{}"
    kwargs = parse_json_text(raw, "extra_info.env_kwargs") if isinstance(raw, str) else raw
    if not isinstance(kwargs, Mapping):
        raise ValueError(f"extra_info.env_kwargs must be a JSON object, got {raw!r}")
    return dict(kwargs)


def task_images(extra_info: Mapping[str, Any],
                session: EpisodeSession | None = None) -> list[np.ndarray]:
    """Rebuild the input images (RGB ``uint8``, view resolution) of the task a verl row names.

    ``extra_info`` is the row's (``env_id``, ``family``, ``task_seed``, optional ``difficulty``
    and ``env_kwargs`` JSON, as :func:`verl_rows` writes); the images are byte-identical to
    ``images="embed"``'s. ``session`` (one per ``env_id`` + ``env_kwargs``) saves building the
    env again. A row whose rebuilt task id differs from its ``task_id`` raises ``ValueError``
    (the row was written by another m3gym version or edited).
    """
    info = dict(extra_info)
    if session is None:
        session = EpisodeSession(str(info.get("env_id") or DEFAULT_ENV_ID), **row_env_kwargs(info))
    session.start(info)
    want = info.get("task_id")
    got = session.task.task_id
    if want is not None and str(want) != got:
        raise ValueError(f"the row names task {want!r} but its family/task_seed rebuild {got!r}; "
                         "re-export the data with this m3gym version")
    return [np.asarray(a) for a in session.input_images]


def write_verl(env_id: str, n: int | None, out: str | Path, split: str = "train", seed: int = 0,
               curriculum: Any = None, images: str = "task", **env_kwargs: Any) -> Path:
    """Write ``<out>/<env_id>-<split>.parquet`` for verl and return its path (needs pyarrow).

    ``images``: ``"task"`` (rows name their task; default) or ``"embed"`` (PNG bytes).
    """
    import pyarrow as pa
    import pyarrow.parquet as pq

    _check_image_mode(images)
    rows = list(verl_rows(env_id, n, split, seed, curriculum, images, **env_kwargs))
    path = Path(out) / f"{env_id}-{split}.parquet"
    path.parent.mkdir(parents=True, exist_ok=True)
    pq.write_table(pa.Table.from_pylist(rows), path)
    return path


def compute_score(data_source: str, solution_str: str, ground_truth: Any,
                  extra_info: Mapping[str, Any] | None = None, **kwargs: Any) -> float:
    """Score for verl's ``custom_reward_function``: 1.0 for a right final answer, else 0.0.

    The answer is the last ``<answer>`` block or ``answer`` call m3gym's parser finds in
    ``solution_str``, or the whole text when it has neither (a *bare* answer; a text that calls
    other tools but never ``answer`` scores 0). It is matched with the task's own rule (variants,
    tolerance; :func:`m3gym.integrations.datasets.score_answer`) when ``extra_info`` names the
    task, else by normalized exact match against ``ground_truth``.
    """
    from m3gym.integrations.datasets import answer_spec, extract_answer
    from m3gym.scoring.answer import answer_is_correct
    from m3gym.spec import AnswerSpec

    answer = extract_answer(str(solution_str))
    if answer is None:
        return 0.0
    info = dict(extra_info or {})
    names_task = any(info.get(k) is not None for k in ("task_seed", "task_id", "seed"))
    spec = answer_spec(info) if names_task else AnswerSpec(value=str(ground_truth))
    return 1.0 if answer_is_correct(answer, spec) else 0.0


# --------------------------------------------------------------------------- SFT
@dataclass
class SFTRecord:
    """One trajectory: chat messages, the images in order of their ``image`` blocks, metadata."""

    messages: list[dict[str, Any]]
    images: list[np.ndarray]
    tools: list[dict[str, Any]]
    meta: dict[str, Any] = field(default_factory=dict)


def _text(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


IMAGE_BLOCK: dict[str, Any] = {"type": "image"}
"""A content block marking the next image of the trajectory."""


class TraceAgent:
    """Replays the steps of one ``m3gym eval`` trace (calls per step, then the answer)."""

    name = "trace"

    def __init__(self, trace: Mapping[str, Any]) -> None:
        self.steps = [[{"id": c.get("call_id"), "name": c.get("requested_name") or c.get("name"),
                        "arguments": dict(c.get("arguments") or {})} for c in s.get("calls", [])]
                      for s in trace.get("steps", [])]
        self.steps = [s for s in self.steps if s and not any(c["name"] == "answer" for c in s)]
        self.answer = trace.get("answer")
        self._i = 0

    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Start from the first recorded step."""
        self._i = 0

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Return the next recorded step, then the recorded answer (or nothing: ``""``)."""
        if self._i < len(self.steps):
            self._i += 1
            return self.steps[self._i - 1]
        self._i += 1
        if self.answer is None:
            return ""
        return {"name": "answer", "arguments": {"text": str(self.answer)}}


def _tool_text(record: Mapping[str, Any]) -> str:
    from m3gym.agents.prompts import tool_message_text

    return tool_message_text(record)


def play_sft(session: EpisodeSession, agent: Any, row: Mapping[str, Any],
             max_steps: int = 64) -> SFTRecord:
    """Play one episode of ``agent`` on the task ``row`` names and return its trajectory."""
    from m3gym.agents.prompts import parse_error_text, system_prompt

    obs = session.start(row)
    env = session.env
    schemas = env.tool_schemas("openai")
    if hasattr(agent, "set_task"):
        agent.set_task(env.task)
    if hasattr(agent, "bind_space"):
        agent.bind_space(env.action_space)
    info = dict(session.info)
    agent.reset(obs, info)
    system = system_prompt(env.max_tool_calls, env.max_rounds, "text", schemas)
    images = list(session.input_images)
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": [_text(system)]},
        {"role": "user", "content": [IMAGE_BLOCK] * len(images) + [_text(session.prompt)]}]
    final: dict[str, Any] = {}
    total = 0.0
    for _ in range(max_steps):
        action = agent.act(obs, info)
        obs, reward, terminated, truncated, info = env.step(action)
        total += float(reward)
        calls = info.get("calls", [])
        answer = env.trace.answer if terminated else None
        tool_calls = [{"id": c["call_id"], "type": "function",
                       "function": {"name": c["requested_name"] or c["name"],
                                    "arguments": json.dumps({k: v for k, v in c["arguments"].items()
                                                             if v is not None}, sort_keys=True)}}
                      for c in calls]
        if answer is not None:
            tool_calls.append({"id": f"a{len(messages)}", "type": "function",
                               "function": {"name": "answer",
                                            "arguments": json.dumps({"text": answer})}})
        if tool_calls:
            messages.append({"role": "assistant", "content": [], "tool_calls": tool_calls})
        for c in calls:
            content = [_text(_tool_text(c))]
            if c.get("output_index") is not None:
                content.append(IMAGE_BLOCK)
                images.append(env.view(int(c["output_index"])))
            messages.append({"role": "tool", "tool_call_id": c["call_id"],
                             "name": c["requested_name"] or c["name"], "content": content})
        if info.get("parse_errors"):
            if not tool_calls and isinstance(action, str):
                messages.append({"role": "assistant", "content": [_text(action)]})
            messages.append({"role": "user",
                             "content": [_text(parse_error_text(info["parse_errors"]))]})
        if terminated or truncated:
            final = info
            break
    else:
        reward, final = env.finish()
        total += reward
    task = env.task
    meta = {"env_id": row.get("env_id"), "family": task.family, "task_seed": row.get("task_seed"),
            "task_id": task.task_id, "level": int(task.level),
            "success": bool(final.get("answer_correct")), "answer": final.get("answer"),
            "reward": total,
            "agent": getattr(agent, "name", type(agent).__name__),
            "metrics": {k: v for k, v in (final.get("metrics") or {}).items()
                        if isinstance(v, (int, float, str, bool)) or v is None}}
    return SFTRecord(messages=messages, images=images, tools=schemas, meta=meta)


def _episodes_from_runs(run: Path) -> Iterator[tuple[dict[str, Any], Any]]:
    traces = sorted((run / "traces").glob("*.json"))
    if not traces:
        raise ValueError(f"{run} has no traces/*.json: not an m3gym eval run folder")
    from m3gym.config_errors import read_json_file

    for path in traces:
        trace = read_json_file(path)  # a damaged trace is a ConfigError naming it
        if trace.get("status") != "ok":
            continue
        spec = trace["recreate"]
        row = {"env_id": spec["env"], "family": spec["options"]["family"],
               "task_seed": spec["options"]["task_seed"]}
        yield row, TraceAgent(trace)


def sft_records(env_id: str = "M3Bench-L1", episodes: int = 10, agent: str = "oracle",
                split: str = "train", seed: int = 0, success_only: bool = False,
                families: Iterable[str] | None = None, levels: Iterable[int] | None = None,
                **env_kwargs: Any) -> Iterator[SFTRecord]:
    """Yield SFT trajectories (see the module docstring), filtered as asked.

    ``agent`` is an agent name (``oracle``, ``heuristic``, ``random``, ``module:factory``) or the
    path of an ``m3gym eval`` run folder (its traces are replayed; ``env_id`` and ``episodes``
    then come from the folder). ``families``/``levels`` keep only those tasks; ``success_only``
    keeps only correctly answered episodes (rejection sampling).
    """
    from m3gym.eval.runner import build_agent, episode_seed
    from m3gym.integrations.datasets import task_list
    from m3gym.tasks.registry import get_family

    keep_families = set(families) if families else None
    keep_levels = {int(lv) for lv in levels} if levels else None

    def wanted(family: str) -> bool:
        if keep_families is not None and family not in keep_families:
            return False
        return keep_levels is None or get_family(family).level in keep_levels

    run = Path(agent)
    if run.is_dir():
        plan = ((row, a) for row, a in _episodes_from_runs(run) if wanted(row["family"]))
    else:
        def agents() -> Iterator[tuple[dict[str, Any], Any]]:
            for family, task_seed in task_list(env_id, episodes, split, seed):
                if wanted(family):
                    row = {"env_id": env_id, "family": family, "task_seed": task_seed}
                    yield row, build_agent(agent, episode_seed(seed, task_seed), {})
        plan = agents()
    sessions: dict[str, EpisodeSession] = {}
    for row, ag in plan:
        eid = str(row["env_id"])
        if eid not in sessions:
            sessions[eid] = EpisodeSession(eid, **env_kwargs)
        record = play_sft(sessions[eid], ag, row)
        if success_only and not record.meta["success"]:
            continue
        yield record


def write_sft(records: Iterable[SFTRecord], out: str | Path, fmt: str = "jsonl") -> Path:
    """Write trajectories to ``out``: ``jsonl`` (``sft.jsonl`` + ``images/``) or ``parquet``.

    Returns the written file. ``parquet`` needs ``datasets`` (images embedded as ``Image``).
    """
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    if fmt == "jsonl":
        path = out / "sft.jsonl"
        with path.open("w") as f:
            for i, rec in enumerate(records):
                names = []
                for j, img in enumerate(rec.images):
                    rel = Path("images") / f"{i:06d}" / f"{j}.png"
                    (out / rel).parent.mkdir(parents=True, exist_ok=True)
                    (out / rel).write_bytes(png_bytes(img))
                    names.append(str(rel))
                f.write(json.dumps({"messages": rec.messages, "images": names,
                                    "tools": json.dumps(rec.tools), **rec.meta,
                                    "metrics": json.dumps(rec.meta["metrics"])}) + "\n")
        return path
    if fmt == "parquet":
        return _write_sft_parquet(records, out / "sft.parquet")
    raise ValueError(f"unknown format {fmt!r}; use jsonl or parquet")


def _sft_features() -> Any:
    from datasets import Features, Image, Json, List, Value

    return Features({"messages": List(Json()), "images": List(Image()),
                     "tools": Value("string"), "env_id": Value("string"),
                     "family": Value("string"), "task_seed": Value("int64"),
                     "task_id": Value("string"), "level": Value("int64"),
                     "success": Value("bool"), "answer": Value("string"),
                     "reward": Value("float64"), "agent": Value("string"),
                     "metrics": Value("string")})


def _trl_messages(messages: list[dict[str, Any]],
                  images: list[np.ndarray]) -> tuple[list[dict[str, Any]], list[Any]]:
    """Return TRL-ready messages and the ``images`` column.

    TRL fills ``{"type": "image"}`` placeholders of user turns from the ``images`` column but
    leaves tool turns alone, so a tool turn's image travels inline as a base64 PNG block (which
    transformers' ``apply_chat_template`` decodes).
    """
    import base64

    from PIL import Image as PILImage

    it = iter(images)
    out, column = [], []
    for m in messages:
        content = []
        for block in m["content"]:
            if block["type"] != "image":
                content.append(block)
            elif m["role"] == "tool":
                content.append({"type": "image",
                                "base64": base64.b64encode(png_bytes(next(it))).decode("ascii")})
            else:
                content.append({"type": "image"})
                column.append(PILImage.fromarray(next(it)))
        out.append({**m, "content": content})
    return out, column


def _write_sft_parquet(records: Iterable[SFTRecord], path: Path) -> Path:
    """Write the ``datasets`` parquet TRL's ``SFTTrainer`` loads unchanged.

    ``messages`` is a list of JSON objects (each message exactly as built, no Arrow padding);
    user-turn images are in ``images``, tool-turn images inline (see :func:`_trl_messages`).
    """
    from datasets import Dataset

    rows = []
    for r in records:
        messages, column = _trl_messages(r.messages, r.images)
        rows.append({"messages": messages, "images": column, "tools": json.dumps(r.tools),
                     **r.meta, "answer": r.meta.get("answer"),
                     "metrics": json.dumps(r.meta["metrics"])})
    if not rows:
        raise ValueError("no trajectory passed the filters; nothing to write")
    Dataset.from_list(rows, features=_sft_features()).to_parquet(str(path))
    return path


def load_sft_jsonl(path: str | Path) -> list[dict[str, Any]]:
    """Read ``sft.jsonl`` back with the images as RGB arrays (for checks and custom loaders).

    A line that is not a JSON object raises :class:`~m3gym.config_errors.ConfigError` naming
    the file and the line (none is skipped).
    """
    from m3gym.config_errors import ConfigError, parse_json_text

    path = Path(path)
    rows = []
    for number, line in enumerate(path.read_text().split("\n"), start=1):
        if not line.strip():
            continue
        try:
            row = parse_json_text(line, path)
        except ConfigError as exc:
            raise ConfigError(path, exc.problem, line=number, column=exc.column) from None
        if not isinstance(row, dict) or not isinstance(row.get("images"), list):
            raise ConfigError(path, "not an SFT record (a JSON object with 'images')",
                              line=number)
        row["images"] = [cv2.cvtColor(cv2.imread(str(path.parent / p)), cv2.COLOR_BGR2RGB)
                         for p in row["images"]]
        rows.append(row)
    return rows
