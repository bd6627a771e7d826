"""OpenEnv types of m3gym: the action, the observation and the state (pydantic models).

An action is either ``tool_calls`` (a list of ``{name, arguments}``, run as one parallel step) or
``text`` (raw model text, parsed by m3gym as ``env.step`` parses it), never both. A schema-invalid
action fails validation in OpenEnv (the server answers with its validation error); a call the
env cannot run (an unknown tool, bad arguments) is an ordinary step, scored by the env.
"""

from __future__ import annotations

from typing import Any

from openenv.core.env_server.types import Action, Observation, State
from pydantic import BaseModel, ConfigDict, Field, model_validator
from pydantic_core import PydanticCustomError


class ToolCall(BaseModel):
    """One tool call: the tool's ``name``, its ``arguments`` and an optional call ``id``."""

    model_config = ConfigDict(extra="forbid")

    name: str = Field(..., min_length=1, description="tool name (answer ends the episode)")
    arguments: dict[str, Any] = Field(default_factory=dict, description="the tool's arguments")
    id: str | None = Field(default=None, description="optional call id, echoed in results")


class M3GymAction(Action):
    """One step: ``tool_calls`` (run in parallel) or ``text`` (raw model text), exactly one."""

    tool_calls: list[ToolCall] | None = Field(
        default=None, description="tool calls of this step, run in parallel")
    text: str | None = Field(
        default=None, description="raw model text with tool calls (m3gym parses it)")

    @model_validator(mode="after")
    def _one_form(self) -> M3GymAction:
        # a PydanticCustomError (not a ValueError) keeps the error JSON-serialisable: OpenEnv
        # sends validation errors to the client as they are
        if (self.tool_calls is None) == (self.text is None):
            raise PydanticCustomError("m3gym_action", "give exactly one of tool_calls or text")
        if self.tool_calls is not None and not self.tool_calls:
            raise PydanticCustomError("m3gym_action", "tool_calls must hold at least one call")
        return self

    def env_action(self) -> Any:
        """Return the action as m3gym's ``env.step`` takes it (a list of call dicts, or text)."""
        if self.text is not None:
            return self.text
        calls = []
        for call in self.tool_calls or ():
            item: dict[str, Any] = {"name": call.name, "arguments": dict(call.arguments)}
            if call.id is not None:
                item["id"] = call.id
            calls.append(item)
        return calls


class M3GymObservation(Observation):
    """What the agent sees: result or prompt ``text`` and new ``images`` (PNG data URLs).

    ``images`` are the env's views (its view resolution) of ``image_indices``. ``metadata``
    carries ``terminated`` / ``truncated`` (OpenEnv's ``done`` is their union), the step's
    ``reward_components`` and, at the end, ``episode_return`` and ``metrics``.
    """

    text: str = Field(default="", description="prompt (reset) or tool results (step)")
    images: list[str] = Field(default_factory=list,
                              description="new images as PNG data URLs, view resolution")
    image_indices: list[int] = Field(default_factory=list,
                                     description="episode image index of each image")


class M3GymState(State):
    """The server's episode state: env id, task, reward choice and how the episode stands."""

    env_id: str | None = Field(default=None, description="registered env id of the episode")
    task_id: str | None = Field(default=None, description="family/task_seed of the task")
    reward: str | None = Field(default=None, description="reward choice (a name)")
    done: bool = Field(default=False, description="whether the episode has ended")
    terminated: bool = Field(default=False, description="ended by an answer")
    truncated: bool = Field(default=False, description="ended by a budget")
    episode_return: float | None = Field(default=None, description="sum of the step rewards")
