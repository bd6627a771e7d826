"""Prompt text for chat-model agents: the system prompt and the wording of step feedback.

The system prompt follows the Agentic-MME conventions (indexed images, 0-1000 boxes, one action
or one answer per turn) in m3gym's own words. Two tool modes exist:

- ``native``: tools go to the endpoint as OpenAI function schemas and the model answers with
  ``tool_calls``;
- ``text``: the schemas are written into the system prompt and the model writes
  ``<tool_call>{"name": ..., "arguments": {...}}</tool_call>`` blocks (for servers started
  without a tool-call parser).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, Literal

ToolMode = Literal["native", "text"]

_CORE = """\
You are a visual agent that answers questions about images by using tools.

Images are indexed. The images of the task are Image 0, Image 1, ... in the order given \
(Image 0 is the original). Every successful visual tool call creates a NEW image with the next \
free index and never changes an existing one; the tool result tells you the new index, and the \
new image is shown to you after the call. Pass `image_index` to choose which image a tool works \
on: tools always work on the full-resolution image even though you see a downscaled view, so \
cropping and zooming can reveal details you cannot read in the view.

Boxes (`bbox_2d`) are [x1, y1, x2, y2] on a 0-1000 scale of the image they refer to: (0, 0) is \
the top-left corner and (1000, 1000) the bottom-right corner, whatever its size in pixels. \
Rotation angles are in degrees, positive = counter-clockwise.

Each turn do exactly one of:
1. call tools: one call, or several independent calls in the same turn, which run in \
parallel (a parallel call may only use images that already exist before that turn);
2. give the final answer, alone, {answer_how}.
Do not call tools and answer in the same turn. Read the results of your calls before deciding \
the next step. Answer with just the value asked for (a code, a word, a number or an option), \
exactly as it appears, without explanation inside the answer.

Budget: at most {max_tool_calls} tool calls and {max_rounds} turns in total; when the budget \
runs out the episode ends without an answer, so answer before that. Failed calls (unknown tool, \
invalid arguments) count against the budget and their error message tells you what to fix."""

_NATIVE_ANSWER = "with the `answer` tool or as <answer>YOUR ANSWER</answer> in your message"
_TEXT_ANSWER = "as <answer>YOUR ANSWER</answer>"

_TEXT_TOOLS = """\

# Tools

Call a tool by writing, for each call, a block
<tool_call>{{"name": "<tool name>", "arguments": {{<arguments as JSON>}}}}</tool_call>
Several blocks in one message run in parallel. The available tools, as JSON schemas:
{schemas}"""


_CODE = """\

# Code mode

Act by writing Python: call the `run_python` tool with your code{code_how}. The code runs in a \
sandbox (no network, no files outside a private working directory, {limits}). Inside it:
- `images[i]` is Image i as a read-only numpy uint8 array (RGB (H, W, 3) or gray (H, W)) at full \
resolution; `np`, `cv2`, `Image`, `ImageOps`, `ImageFilter`, `ImageEnhance` and `math` are \
ready to use;
- the tools are Python functions that return the new image as an array and add it to the \
episode's images: {tool_functions};
- `save(array_or_pil_image, label=None)` adds an image you computed yourself and returns its \
index; only images made by the tools or saved are shown to you after the call;
- `print()` what you want to read (the output is truncated). Variables persist between your \
code calls of one task.
Operations you write with numpy/OpenCV/Pillow (slicing, cv2.resize, Image.crop, \
ImageOps.autocontrast, ...) count like the matching tools. Each tool call or saved image counts \
against the tool-call budget."""


def code_tool_functions() -> str:
    """Return the code-mode prompt's list of tool functions, from the tool catalogue.

    The image tools' signatures (:func:`m3gym.tools.catalogue.code_signature`), then the
    retrieval tools', which "return their results" (registered tools included).
    """
    from m3gym.tools.catalogue import code_callable_specs, code_signature

    specs = code_callable_specs()
    visual = [code_signature(s) for s in specs if s.kind == "visual"]
    retrieval = [code_signature(s) for s in specs if s.kind == "retrieval"]
    text = ", ".join(visual)
    if retrieval:
        listed = retrieval[0] if len(retrieval) == 1 else \
            f"{', '.join(retrieval[:-1])} and {retrieval[-1]}"
        verb = "returns its" if len(retrieval) == 1 else "return their"
        text += f"; {listed} {verb} results"
    return text


def system_prompt(max_tool_calls: int, max_rounds: int, tool_mode: ToolMode = "native",
                  tool_schemas: Sequence[Mapping[str, Any]] = ()) -> str:
    """Return the system prompt for an episode with these budgets.

    In ``text`` mode the tool schemas (OpenAI format) are listed in the prompt, one JSON object
    per line; in ``native`` mode they travel as the request's ``tools``.
    """
    answer_how = _NATIVE_ANSWER if tool_mode == "native" else _TEXT_ANSWER
    text = _CORE.format(answer_how=answer_how, max_tool_calls=max_tool_calls,
                        max_rounds=max_rounds)
    names = {str(s.get("function", s).get("name")) for s in tool_schemas}
    if "run_python" in names:
        code_how = "" if tool_mode == "native" else " or write it as <code>...</code>"
        text += _CODE.format(code_how=code_how, tool_functions=code_tool_functions(),
                             limits="limited time and memory per call")
    if tool_mode == "text":
        lines = [json.dumps(s.get("function", s), sort_keys=True) for s in tool_schemas]
        text += _TEXT_TOOLS.format(schemas="\n".join(lines))
    return text


def tool_message_text(record: Mapping[str, Any]) -> str:
    """Return what a ``role: tool`` message says about one executed call (a TraceCall dict)."""
    text = str(record.get("result_text") or "")
    if not record.get("ok", False) and not text.startswith("Error"):
        text = f"Error: {record.get('error') or text or 'the call failed'}"
    if record.get("output_index") is not None and "image" not in text.lower():
        text += f" (new image: Image {record['output_index']})"
    return text or "done"


def not_run_text(parse_errors: Sequence[str]) -> str:
    """Return the tool message for a call the env could not parse, so it never ran."""
    why = "; ".join(parse_errors) if parse_errors else "it could not be parsed"
    return f"Error: this call was not run: {why}"


def parse_error_text(parse_errors: Sequence[str]) -> str:
    """Return the user-turn text listing the parse errors of the last action."""
    lines = ["Your last message could not be fully understood:"]
    lines += [f"- {e}" for e in parse_errors]
    lines.append("Call tools with valid JSON arguments, or give the final answer.")
    return "\n".join(lines)


def image_caption(index: int, record: Mapping[str, Any] | None = None) -> str:
    """Return the caption put before a new image: its index and the call that made it."""
    if record is None:
        return f"Image {index}:"
    return f"Image {index} (result of {record.get('name')} call {record.get('call_id')}):"
