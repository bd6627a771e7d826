"""The episode trace: every call, in steps, with its arguments, result and error.

The trace is the single source scoring reads. It holds only JSON-serializable values, so it can be
exported, stored and re-scored offline.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from m3gym.deprecation import renamed_names

__getattr__ = renamed_names(__name__, {
    "CallRecord": ("m3gym.trace.TraceCall", lambda: TraceCall)})


def json_copy(value: Any) -> Any:
    """Return a copy of a JSON-like value: dicts, lists and tuples rebuilt, leaves shared.

    The same result as :func:`dataclasses.asdict` gives for the trace's plain values, several
    times faster.
    """
    if isinstance(value, dict):
        return {k: json_copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [json_copy(v) for v in value]
    if isinstance(value, tuple):
        return tuple(json_copy(v) for v in value)
    return value


@dataclass
class TraceCall:
    """One executed (or refused) tool call, as the trace holds it.

    (It was ``CallRecord``: that name still imports from here, with a deprecation warning;
    "records" names the user's data, :mod:`m3gym.records`.) Beside it, a
    :class:`~m3gym.parsing.ToolCall` is a call the agent asked for and a
    :class:`~m3gym.spec.RefCall` a call of a task's reference.

    Attributes:
        step: index of the env step (round) the call was issued in, from 0.
        call_id: unique id within the episode (the agent's id if it gave one, else ``c{n}``).
        name: canonical tool name (aliases are resolved), or the raw name if unknown.
        requested_name: the name the agent used.
        arguments: validated arguments (defaults filled in) or, when invalid, the raw arguments.
        ok: whether the call ran.
        error: the precise error message when ``ok`` is false.
        result_text: what the agent was shown.
        output_index: index of the image the call added, if any.
        input_index: ``image_index`` the call read, if any.
        payload: structured results (search hits, fetched url, ...).
    """

    step: int
    call_id: str
    name: str
    requested_name: str
    arguments: dict[str, Any]
    ok: bool
    error: str | None = None
    result_text: str = ""
    output_index: int | None = None
    input_index: int | None = None
    payload: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict (containers copied: never shared)."""
        return {
            "step": self.step, "call_id": self.call_id, "name": self.name,
            "requested_name": self.requested_name, "arguments": json_copy(self.arguments),
            "ok": self.ok, "error": self.error, "result_text": self.result_text,
            "output_index": self.output_index, "input_index": self.input_index,
            "payload": json_copy(self.payload),
        }


@dataclass
class Trace:
    """All calls of an episode, grouped by step, plus the final answer."""

    steps: list[list[TraceCall]] = field(default_factory=list)
    answer: str | None = None
    answer_step: int | None = None
    parse_errors: list[tuple[int, str]] = field(default_factory=list)

    @property
    def calls(self) -> list[TraceCall]:
        """All calls in issue order."""
        return [c for step in self.steps for c in step]

    @property
    def num_calls(self) -> int:
        """Number of tool calls issued (failed ones included, ``answer`` excluded)."""
        return sum(len(s) for s in self.steps)

    @property
    def num_failed(self) -> int:
        """Number of failed calls plus unparseable actions."""
        return sum(1 for c in self.calls if not c.ok) + len(self.parse_errors)

    def to_dict(self) -> dict[str, Any]:
        """Return a JSON-serializable dict."""
        return {
            "steps": [[c.to_dict() for c in s] for s in self.steps],
            "answer": self.answer,
            "answer_step": self.answer_step,
            "parse_errors": [list(e) for e in self.parse_errors],
        }


def step_text(calls: Sequence[TraceCall], errors: Sequence[str], answer: str | None) -> str:
    """Return the text observation of a step: one line per call result and per parse error."""
    lines = [f"[{r.call_id}] {r.name}: {r.result_text}" for r in calls]
    lines += [f"Parse error: {e}" for e in errors]
    if answer is not None:
        lines.append(f"Answer received: {answer}")
    return "\n".join(lines)


CODE_CELL_CALL_IDS_KEY: str = "call_ids"
"""The key of an ``info["code_cells"]`` entry that lists the ids of the calls the cell made.

The entry also carries the same list under ``"records"``, its name until v3, for one more release
(``"records"`` names the user's data, :mod:`m3gym.records`, and nothing else from then on)."""


def code_cell_call_ids(cell: Mapping[str, Any]) -> list[str]:
    """Return the ids of the calls a code cell made (an entry of ``info["code_cells"]``).

    Reads ``"call_ids"``, or ``"records"`` in traces written before that key existed.
    """
    ids = cell.get(CODE_CELL_CALL_IDS_KEY)
    if ids is None:
        ids = cell.get("records")
    return [str(i) for i in ids or ()]
