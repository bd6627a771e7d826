"""The ``answer`` tool: exported with the other schemas; the env handles it, not the registry."""

from __future__ import annotations

from typing import Any

from pydantic import Field

from m3gym.tools.base import Discretization, ToolArgs, ToolContext, ToolError, ToolOutput, ToolSpec


class AnswerArgs(ToolArgs):
    """Arguments of ``answer``."""

    text: str = Field(max_length=2000, description="Your final answer. Ends the episode.")


def _answer(ctx: ToolContext, args: Any) -> ToolOutput:
    raise ToolError("answer is handled by the environment")


ANSWER_TOOL = ToolSpec(
    name="answer",
    description="Give the final answer to the question. Ends the episode; use it on its own step.",
    args_model=AnswerArgs,
    fn=_answer,
    kind="answer",
    discrete=Discretization(default_slot=0),
)
