"""What the MCP episode table answers: a step's reply, ``start_episode``'s text, the verdict."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from m3gym.eval.config import EpisodeOutcome
from m3gym.mcp.images import EncodedImage


@dataclass
class StepReply:
    """What a tool call returns: text, new images, whether it failed, and (when done) metrics."""

    text: str
    images: list[EncodedImage] = field(default_factory=list)
    is_error: bool = False
    done: bool = False
    data: dict[str, Any] = field(default_factory=dict)


def start_text(data: Mapping[str, Any]) -> str:
    """Return ``start_episode``'s text: the episode id, the prompt, the choices and the budgets.

    Everything in the structured content an agent needs is here too, for clients that only
    read text.
    """
    choices = data.get("choices") or []
    lines = [f"episode_id: {data['episode_id']}", "", str(data["prompt"]), ""]
    if choices:
        lines.append("Choices: " + "; ".join(str(c) for c in choices))
    lines.append(f"Budget: {data.get('max_tool_calls')} tool calls, {data.get('max_rounds')} "
                 "rounds. Call the tools with this episode_id; finish with answer.")
    return "\n".join(lines)


def verdict(outcome: EpisodeOutcome | None) -> dict[str, Any]:
    """Return the verdict part of a finished episode's reply: answer, correctness, metrics."""
    if outcome is None:
        return {}
    row = outcome.row
    return {"status": row["status"], "answer": row["answer"],
            "answer_correct": row["answer_correct"], "reward": row["reward"],
            "metrics": row["metrics"], "failure_mode": row["failure_mode"]}
