"""The m3gym taskset, task and harness on verifiers' v1 API (the toolset: :mod:`.toolset`).

A task's data names its m3gym task by a dataset row (the seed rule,
:func:`m3gym.integrations.session.task_ref`): ``env_id`` + ``seed`` is exactly
``gym.make(env_id).reset(seed=seed)``; ``env_id`` + ``task_seed`` (+ ``family``) is a frozen-split
entry. The prompt is the reset observation's text with its images as image parts.

Each rollout gets its own :class:`M3GymToolset` process (verifiers' per-rollout MCP server): it
starts an :class:`~m3gym.integrations.session.EpisodeSession` on the task's row and exposes one
MCP tool per m3gym tool of the env (text and image content back). The model never names a task
or an episode. Every call the model makes is recorded in the rollout's :class:`M3GymState`; the
task's reward replays those calls on a fresh session (m3gym is deterministic), ends an unanswered
episode as a truncation and reads the episode return and final metrics.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any, cast

import verifiers.v1 as vf
from pydantic import Field
from verifiers.v1.harnesses.null.harness import NullHarness

from m3gym.integrations.session import METRIC_TERMS, EpisodeSession
from m3gym.verifiers.toolset import M3GymData, M3GymState, M3GymToolset, encode_image, replay

MAX_REPLAY_STEPS = 200
"""Bound on the oracle's steps in :meth:`M3GymTask.validate` (it answers long before)."""


class M3GymTaskConfig(vf.TaskConfig):
    """Run-time settings of an m3gym task: where its toolset runs."""

    tools: vf.ToolsetConfig = vf.ToolsetConfig()
    """The per-rollout toolset's placement (a subprocess next to the harness by default)."""


class M3GymTask(vf.Task[M3GymData, M3GymState, M3GymTaskConfig]):
    """An m3gym episode: scored by replaying the model's calls; validated by the oracle."""

    @property
    def key(self) -> str:
        """The durable task id (``env_id/family/task_seed`` or ``env_id#seed``)."""
        return self.data.id or self.hash

    @classmethod
    def toolsets(cls, config: M3GymTaskConfig) -> list[vf.Toolset]:
        """Return the per-rollout m3gym toolset."""
        return [M3GymToolset(config.tools)]

    def _replayed(self, trace: vf.Trace) -> EpisodeSession:
        state = trace.state
        calls = list(getattr(state, "calls", None) or [])
        cache = self.__dict__.setdefault("_replays", {})
        key = (id(trace), len(calls))
        if key not in cache:
            cache.clear()
            cache[key] = replay(self.data, calls)
        return cache[key]

    @vf.reward
    async def episode_return(self, trace: vf.Trace) -> float:
        """Return the episode return (step rewards and terminal terms) of the model's calls."""
        session = await asyncio.to_thread(self._replayed, trace)
        value = session.episode_return
        if value is None:  # an env bug, not model output: the rollout must not be scored
            raise RuntimeError(f"m3gym internal error: {session.infra_error}")
        return value

    @vf.metric
    async def m3gym_metrics(self, trace: vf.Trace) -> dict[str, float]:
        """Return the final metrics (acc, S, V, m3, OT, safety) and the number of tool calls."""
        session = await asyncio.to_thread(self._replayed, trace)
        out = {name: value for name in METRIC_TERMS
               if (value := session.metric(name)) is not None}
        out["tool_calls"] = float(len(getattr(trace.state, "calls", None) or []))
        return out

    async def validate(self, runtime: Any = None) -> bool:
        """Replay the task's reference trajectory (the oracle's calls, one per step) and answer.

        Valid when the replay is correct (``acc == 1``): the same scoring path a rollout takes.
        """
        calls = oracle_calls(self.data)
        session = await asyncio.to_thread(replay, self.data, calls)
        return session.metric("acc") == 1.0


def oracle_calls(data: M3GymData) -> list[dict[str, Any]]:
    """Return the oracle's calls for ``data``'s task, flattened (reference steps, then answer)."""
    from m3gym.agents.base import OracleAgent

    session = EpisodeSession(data.env_id, reward=data.reward, **data.env_kwargs)
    obs = session.start(data.row)
    agent = OracleAgent(session.task, code=False)
    agent.reset(obs, session.info)
    calls: list[dict[str, Any]] = []
    for _ in range(MAX_REPLAY_STEPS):
        action = agent.act(obs, session.info)
        step = action if isinstance(action, list) else [action]
        calls += [{"name": c["name"], "arguments": dict(c["arguments"])} for c in step]
        if any(c["name"] == "answer" for c in step):
            break
    return calls


class M3GymConfig(vf.TasksetConfig):
    """Which m3gym tasks to load: frozen-split entries per level, or reset seeds per level."""

    split: str = "test"
    """Frozen split (``m3gym.eval.splits``) whose ``(family, task_seed)`` entries become tasks."""
    levels: list[int] = Field(default_factory=lambda: [1, 2, 3])
    """Levels to load (each level's env is ``M3Bench-L<level>``)."""
    per_level: int | None = None
    """Tasks per level (the first ones of the split, or of ``seeds``); all when unset."""
    seeds: list[int] = Field(default_factory=list)
    """Reset seeds: when given, tasks are ``gym.make(env).reset(seed=s)`` instead of the split."""
    env_id: str | None = None
    """With ``seeds``: one env for all of them instead of one per level."""
    reward: str = "m3"
    """m3gym reward preset."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Further ``gym.make`` keyword arguments (``max_tool_calls``, ``tools``, ...)."""
    image_max_side: int | None = None
    """Shrink prompt images to this many pixels on their long side (smaller traces)."""
    task: M3GymTaskConfig = M3GymTaskConfig()


def task_rows(config: M3GymConfig) -> Iterator[tuple[int | None, dict[str, Any]]]:
    """Yield ``(level, row)`` for each task ``config`` names (the seed rule's two forms)."""
    from m3gym.eval.splits import generate_split_entries, split_config
    from m3gym.registration import level_env_id

    if config.seeds:
        levels: list[int | None] = [None] if config.env_id else list(config.levels)
        for level in levels:
            env_id = config.env_id or level_env_id(cast(int, level))
            for seed in config.seeds[:config.per_level]:
                yield level, {"env_id": env_id, "seed": int(seed)}
        return
    if split_config(config.split):
        raise ValueError(f"split {config.split!r} builds its tasks with a config "
                         f"({split_config(config.split)}); only flat splits load here")
    for level in config.levels:
        for entry in generate_split_entries(config.split, level, config.per_level):
            yield level, {"env_id": level_env_id(level), "family": entry.family,
                          "task_seed": entry.task_seed}


class M3GymTaskset(vf.Taskset[M3GymTask, M3GymConfig]):
    """m3gym tasks with the reset observation (text and images) as the prompt."""

    def load(self) -> Iterator[M3GymTask]:
        """Build one task per row: reset an env on it to read the prompt text and images."""
        from m3gym.agents.prompts import system_prompt

        config = self.config
        session = EpisodeSession(reward=config.reward, **config.env_kwargs)
        for level, row in task_rows(config):
            session.start(row)
            env = session.env
            parts: list[Any] = [vf.TextContentPart(text=session.prompt)]
            parts += [vf.ImageUrlContentPart(image_url=vf.ImageUrlSource(
                url="data:image/png;base64," + encode_image(image, config.image_max_side)))
                for image in session.input_images]
            if "seed" in row:
                ident = f"{row['env_id']}#{row['seed']}"
            else:
                ident = f"{row['env_id']}/{row['family']}/{row['task_seed']}"
            data = M3GymData(
                id=ident, name=ident, level=level,
                prompt=[vf.UserMessage(content=parts)],
                system_prompt=system_prompt(env.max_tool_calls, env.max_rounds, "native",
                                            env.tool_schemas("openai")),
                reward=config.reward, env_kwargs=dict(config.env_kwargs),
                env_id=row["env_id"], seed=row.get("seed"), task_seed=row.get("task_seed"),
                family=row.get("family"))
            yield M3GymTask(data, config.task)


class M3GymHarness(NullHarness):
    """Verifiers' plain chat loop with the task's MCP tools (no bash): m3gym's default harness."""


__all__ = ["M3GymConfig", "M3GymData", "M3GymHarness", "M3GymState", "M3GymTask",
           "M3GymTaskConfig", "M3GymTaskset", "M3GymToolset", "encode_image", "oracle_calls",
           "replay", "task_rows"]
