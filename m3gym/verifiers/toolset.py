"""The per-rollout m3gym MCP toolset, the task data it starts from and the rollout state.

Verifiers runs this module as the tool server (``python -m m3gym.verifiers.toolset``), one process
per rollout: :meth:`M3GymToolset.setup_task` starts an
:class:`~m3gym.integrations.session.EpisodeSession` on the task's row and every MCP call is one env
step, recorded in :class:`M3GymState` so the task's scoring can replay it.
"""

from __future__ import annotations

import asyncio
import base64
import io
from collections.abc import Mapping
from typing import Any, cast

import numpy as np
import verifiers.v1 as vf
from mcp.types import CallToolResult, Tool
from pydantic import Field

from m3gym.integrations.session import EpisodeSession


def encode_image(image: np.ndarray, max_side: int | None = None) -> str:
    """Return ``image`` (H x W [x C] uint8) as base64 PNG, shrunk to ``max_side`` pixels if given.

    m3gym's tools take boxes on a 0-1000 scale of the image, so a shrunk prompt image keeps every
    coordinate the model reads off it valid.
    """
    from PIL import Image

    picture = Image.fromarray(np.asarray(image))
    if max_side is not None and max(picture.size) > max_side:
        picture.thumbnail((max_side, max_side), Image.Resampling.LANCZOS)
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG", optimize=True)
    return base64.b64encode(buffer.getvalue()).decode("ascii")


class M3GymData(vf.TaskData):
    """One m3gym task: the row that names it (seed rule), the env's reward and keyword arguments."""

    env_id: str
    """The env (``M3Bench-L1``, a family env, ...)."""
    seed: int | None = None
    """Reset seed: the task is exactly ``gym.make(env_id).reset(seed=seed)``."""
    task_seed: int | None = None
    """Task seed (a frozen-split entry, with ``family``); excludes ``seed``."""
    family: str | None = None
    """Family of a ``task_seed`` row."""
    level: int | None = None
    """The task's level (1, 2, 3), for grouping results."""
    reward: str = "m3"
    """m3gym reward preset (as for ``gym.make(..., reward=)``)."""
    env_kwargs: dict[str, Any] = Field(default_factory=dict)
    """Further ``gym.make`` keyword arguments (``max_tool_calls``, ``tools``, ...)."""

    @property
    def row(self) -> dict[str, Any]:
        """The dataset row :class:`~m3gym.integrations.session.EpisodeSession` starts from."""
        row: dict[str, Any] = {"env_id": self.env_id}
        for key in ("seed", "task_seed", "family"):
            value = getattr(self, key)
            if value is not None:
                row[key] = value
        return row


class M3GymState(vf.State):
    """Rollout state shared by the toolset process and the task's scoring: the model's calls."""

    calls: list[dict[str, Any]] = Field(default_factory=list)
    """Every tool call the model made, in order, as ``{"name": ..., "arguments": {...}}``."""
    episode_return: float | None = None
    """Return so far, as the toolset saw it (the reward recomputes it by replay)."""
    done: bool = False
    """Whether the episode ended inside the toolset (answer or budget)."""


def replay(data: M3GymData, calls: list[Mapping[str, Any]], finish: bool = True) -> EpisodeSession:
    """Start a session on ``data``'s task, run ``calls`` one per step and (by default) finish it.

    Calls after the episode ended are answered with an error text and change nothing, exactly as
    in the toolset, so the replay's return is the rollout's.
    """
    session = EpisodeSession(data.env_id, reward=data.reward, **data.env_kwargs)
    session.start(data.row)
    for call in calls:
        session.act({"name": call.get("name"), "arguments": dict(call.get("arguments") or {})})
    if finish:
        session.finish()
    return session


def _result(text: str, images: list[np.ndarray], ok: bool) -> CallToolResult:
    content: list[dict[str, Any]] = [{"type": "text", "text": text}]
    content += [{"type": "image", "data": encode_image(image), "mimeType": "image/png"}
                for image in images]
    return CallToolResult.model_validate({"content": content, "isError": not ok})


class M3GymToolset(vf.Toolset[vf.ToolsetConfig, M3GymState]):
    """One MCP tool per m3gym tool of the task's env, on one episode per rollout."""

    TOOL_PREFIX = None  # the model sees m3gym's own tool names (crop, answer, ...)

    def __init__(self, config: vf.ToolsetConfig) -> None:
        super().__init__(config)
        self.session: EpisodeSession | None = None
        self.data: M3GymData | None = None
        self.calls: list[dict[str, Any]] = []

    async def setup_task(self, task: Any) -> None:
        """Start the rollout's episode on the task's row (the tools act on it)."""
        data = task.data if isinstance(task, vf.Task) else task
        data = data if isinstance(data, M3GymData) else M3GymData.model_validate(data)
        self.data = data
        self.session = EpisodeSession(data.env_id, reward=data.reward, **data.env_kwargs)
        await asyncio.to_thread(self.session.start, data.row)

    def register(self, mcp: Any) -> None:
        """Serve the env's catalogue (``tool_schemas("mcp")``) through list/call handlers."""
        server = cast(Any, mcp)
        server.list_tools = self._with_state(self.list_tools)
        call = self._with_state(self.call_tool)
        lock = asyncio.Lock()

        async def serial_call(name: str, arguments: dict[str, Any] | None = None,
                              context: Any = None) -> CallToolResult:
            # one env step at a time, and each call's state push lands before the next pull
            # (pushes replace the whole state): parallel tool calls run in arrival order
            async with lock:
                return await call(name, arguments, context)

        server.call_tool = serial_call

    async def list_tools(self) -> list[Tool]:
        """Return the env's tools, generated from m3gym's tool catalogue."""
        if self.session is None or self.session.env is None:
            return []
        return [Tool.model_validate(schema) for schema in self.session.env.tool_schemas("mcp")]

    async def call_tool(self, name: str, arguments: dict[str, Any] | None = None,
                        context: Any = None) -> CallToolResult:
        """Run one m3gym tool call as one env step; errors come back as text, never raised."""
        if self.session is None:
            return _result("Error: the episode has not started", [], ok=False)
        call = {"name": name, "arguments": dict(arguments or {})}
        self.calls.append(call)  # this process's list is the record; the state carries a copy
        self.state.calls = list(self.calls)
        step = await asyncio.to_thread(self.session.act, call)
        self.state.episode_return = self.session.episode_return
        self.state.done = self.session.done
        return _result(step.text, step.images, step.ok)


__all__ = ["M3GymData", "M3GymState", "M3GymToolset", "encode_image", "replay"]

if __name__ == "__main__":  # verifiers' launcher: python -m m3gym.verifiers.toolset
    from m3gym.verifiers.toolset import M3GymToolset as _Toolset

    _Toolset.run()
