"""Turn any accepted action form into tool calls (or an answer), with precise errors.

Accepted forms, alone or in a list (a list = parallel calls of one step):

- a :class:`ToolCall`;
- a dict ``{"name": ..., "arguments": {...}}`` (``arguments`` may be a JSON string);
- an OpenAI ``tool_calls`` entry ``{"id", "type": "function", "function": {"name", "arguments"}}``;
- an OpenAI assistant message ``{"role": "assistant", "content": ..., "tool_calls": [...]}``;
- raw model text with ``<tool_call>{json}</tool_call>`` blocks and/or ``<answer>...</answer>``;
  with ``code=True`` (code mode) also ``<code>...</code>`` blocks, each a ``run_python`` call.

``answer`` is either the ``answer`` tool (``{"name": "answer", "arguments": {"text": ...}}``) or
an ``<answer>`` block. Acting and answering in the same step is refused.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

_TOOL_CALL_BLOCK = re.compile(r"<tool_call>(.*?)(?:</tool_call>|$)", re.DOTALL)
_CODE_BLOCK = re.compile(r"<code>(.*?)</code>", re.DOTALL | re.IGNORECASE)
_ANSWER_BLOCK = re.compile(r"<answer>(.*?)</answer>", re.DOTALL | re.IGNORECASE)
MAX_CALLS_PER_STEP = 16


@dataclass(frozen=True)
class ToolCall:
    """One tool call: a tool name, its arguments and an optional id given by the agent."""

    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    id: str | None = None


@dataclass
class ParsedAction:
    """The result of parsing one action: calls to run, an answer, and parse errors."""

    calls: list[ToolCall] = field(default_factory=list)
    answer: str | None = None
    errors: list[str] = field(default_factory=list)


def parse_action(action: Any, code: bool = False) -> ParsedAction:
    """Parse any accepted action form; never raises for malformed input.

    ``code``: also read ``<code>...</code>`` blocks of text as ``run_python`` calls.
    """
    out = ParsedAction()
    items = list(action) if isinstance(action, (list, tuple)) else [action]
    if not items:
        out.errors.append("empty action: send at least one tool call or an answer")
        return out
    answers: list[str] = []
    for position, item in enumerate(items):
        if code and isinstance(item, str):
            for block in _CODE_BLOCK.findall(item):
                out.calls.append(ToolCall(name="run_python", arguments={"code": block.strip("\n")}))
            if _CODE_BLOCK.search(item) and not _TOOL_CALL_BLOCK.search(item) \
                    and not _ANSWER_BLOCK.search(item):
                continue
        _parse_item(item, position, out.calls, answers, out.errors)
    if answers and out.calls:
        out.errors.append(
            "acting and answering in the same step is not allowed: send the tool calls first, "
            "read their results, then answer in a separate step"
        )
        out.calls = []
        return out
    if len(answers) > 1:
        out.errors.append("more than one answer in a step; send exactly one answer")
        return out
    if answers:
        out.answer = answers[0]
    if len(out.calls) > MAX_CALLS_PER_STEP:
        out.errors.append(
            f"{len(out.calls)} parallel calls in one step; at most {MAX_CALLS_PER_STEP} are allowed"
        )
        out.calls = []
    if not out.calls and out.answer is None and not out.errors:
        out.errors.append("no tool call or answer found in the action")
    return out


def _parse_item(item: Any, position: int, calls: list[ToolCall], answers: list[str],
                errors: list[str]) -> None:
    where = f"action item {position}"
    if isinstance(item, ToolCall):
        _add_call(item.name, item.arguments, item.id, where, calls, answers, errors)
    elif isinstance(item, str):
        _parse_text(item, calls, answers, errors)
    elif isinstance(item, Mapping):
        _parse_mapping(item, where, calls, answers, errors)
    else:
        errors.append(f"{where}: unsupported action type {type(item).__name__}; send a dict "
                      "{'name', 'arguments'}, an OpenAI tool call, or text with <tool_call> blocks")


def _parse_mapping(item: Mapping[str, Any], where: str, calls: list[ToolCall],
                   answers: list[str], errors: list[str]) -> None:
    if "tool_calls" in item or item.get("role") == "assistant":
        tool_calls = item.get("tool_calls") or []
        content = item.get("content")
        if isinstance(content, str) and content.strip() and not tool_calls:
            _parse_text(content, calls, answers, errors)
        if not isinstance(tool_calls, (list, tuple)):
            errors.append(f"{where}: 'tool_calls' must be a list")
            return
        for j, tc in enumerate(tool_calls):
            if isinstance(tc, Mapping):
                _parse_mapping(tc, f"{where}.tool_calls[{j}]", calls, answers, errors)
            else:
                errors.append(f"{where}.tool_calls[{j}]: expected an object")
        return
    call_id = item.get("id")
    call_id = str(call_id) if isinstance(call_id, (str, int)) else None
    if isinstance(item.get("function"), Mapping):
        fn = item["function"]
        name, arguments = fn.get("name"), fn.get("arguments", {})
    else:
        name = item.get("name")
        arguments = item.get("arguments", item.get("parameters", {}))
    if not isinstance(name, str) or not name:
        errors.append(f"{where}: missing tool 'name'")
        return
    _add_call(name, arguments, call_id, where, calls, answers, errors)


def _add_call(name: str, arguments: Any, call_id: str | None, where: str,
              calls: list[ToolCall], answers: list[str], errors: list[str]) -> None:
    if isinstance(arguments, str):
        text = arguments.strip() or "{}"
        try:
            arguments = json.loads(text)
        except json.JSONDecodeError as exc:
            errors.append(f"{where} ({name}): arguments are not valid JSON: {exc.msg} at "
                          f"position {exc.pos}")
            return
    if arguments is None:
        arguments = {}
    if not isinstance(arguments, Mapping):
        errors.append(f"{where} ({name}): arguments must be a JSON object, got "
                      f"{type(arguments).__name__}")
        return
    if name == "answer":
        text = arguments.get("text", arguments.get("answer"))
        if not isinstance(text, (str, int, float)) or isinstance(text, bool):
            errors.append(f"{where}: answer needs a 'text' argument (string)")
            return
        answers.append(str(text))
        return
    calls.append(ToolCall(name=name, arguments=dict(arguments), id=call_id))


def _parse_text(text: str, calls: list[ToolCall], answers: list[str], errors: list[str]) -> None:
    blocks = _TOOL_CALL_BLOCK.findall(text)
    for j, block in enumerate(blocks):
        where = f"<tool_call> block {j}"
        try:
            obj = json.loads(block.strip())
        except json.JSONDecodeError as exc:
            errors.append(f"{where}: invalid JSON: {exc.msg} at position {exc.pos}")
            continue
        if not isinstance(obj, Mapping):
            errors.append(f"{where}: expected a JSON object with 'name' and 'arguments'")
            continue
        _parse_mapping(obj, where, calls, answers, errors)
    for match in _ANSWER_BLOCK.findall(text):
        answers.append(match.strip())
    if not blocks and not _ANSWER_BLOCK.search(text):
        errors.append("text action has no <tool_call>{...}</tool_call> block and no "
                      "<answer>...</answer> block")
