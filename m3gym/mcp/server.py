"""``m3gym mcp``: m3gym episodes served over the Model Context Protocol (official ``mcp`` SDK 2.x).

Tools:

* ``start_episode(env_id, seed | split + index, reward?)`` → ``episode_id``, the prompt (with
  the choices and budgets) and the input images as image content.
* every m3gym tool (``crop``, ``rotate``, ..., ``web_search``, ...) with an extra ``episode_id``
  argument; its input schema is the tool's own MCP schema (same names, parameters, constraints and
  descriptions as ``env.tool_schemas("mcp")``) plus ``episode_id``. It returns the result text and
  the new image.
* ``parallel_calls(episode_id, calls)``: several tool calls in one step (they run in parallel,
  which the M3 score's multi-threaded term rewards).
* ``answer(episode_id, text)`` → the verdict and every metric; ``episode_report(episode_id)`` →
  the trace.

State lives in the :class:`~m3gym.mcp.episode_table.EpisodeTable`, keyed by ``episode_id``, never in
the MCP session. Bad calls come back as MCP tool errors (``isError``) with a precise message.

Who may act on an episode (:func:`caller_owner`): an episode belongs to the MCP session that
started it where the transport gives one (stdio and in-memory clients on the handshake protocol,
streamable HTTP with an ``Mcp-Session-Id``); another session's ``episode_id`` is refused exactly
like an unknown one. Protocol 2026-07-28 requests (the official client's default) and stateless
HTTP carry no session: there the 128-bit random ``episode_id`` is the capability, and a caller
with a session never reaches an episode started without one (nor the reverse).

Every tool has a title, annotations (:data:`ANNOTATIONS`) and an output schema; everything in a
reply's structured content that an agent needs is in its text too. Every reply, as sent, stays
under ``limits.max_response_bytes`` (768 KiB by default, under the official client's 1 MiB per
server-sent event): images are re-encoded, downscaled (the scale stated in the text) or, last,
left out with a note; an oversized report is paged (``first_step``).
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver import Context
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, ImageContent, TextContent, ToolAnnotations
from pydantic import ConfigDict

from m3gym.mcp.episode_table import EpisodeError, EpisodeTable, quote
from m3gym.mcp.images import EncodedImage
from m3gym.mcp.replies import StepReply

OWNER_KEY = "m3gym.mcp.owner"
"""Key of the caller's owner token in the MCP connection's per-connection ``state``."""


def caller_owner(ctx: Any) -> str | None:
    """Return the owner key of the session making a request, or ``None`` when it has none.

    A handshake-era connection that persists across requests (stdio, in memory, stateful
    streamable HTTP: one per ``Mcp-Session-Id``) gets a random token kept in its ``state``;
    the episodes it starts answer only it. A 2026-07-28 request, or a stateless HTTP one, comes
    on a connection made for that request alone: no session identity exists, and ``None``
    makes the unguessable ``episode_id`` the capability (docs/mcp.md, Trust rules).
    """
    from mcp_types.version import HANDSHAKE_PROTOCOL_VERSIONS

    try:
        connection = ctx.request_context.session._connection  # the SDK has no public path
    except (AttributeError, ValueError):
        return None
    if connection.protocol_version not in HANDSHAKE_PROTOCOL_VERSIONS or \
            not connection.has_standalone_channel:  # a connection made for one request
        return None
    owner = connection.state.get(OWNER_KEY)
    if owner is None:
        import secrets

        owner = connection.state.setdefault(OWNER_KEY, "session-" + secrets.token_hex(16))
    return str(owner)


ENVELOPE_BYTES = 256
"""Bytes of the JSON-RPC envelope around a result (``{"jsonrpc": "2.0", "id": ..., ...}``)."""

ANNOTATIONS: dict[str, ToolAnnotations] = {
    # every tool acts on the server's own offline episode table: never the open world
    "start_episode": ToolAnnotations(read_only_hint=False, destructive_hint=False,
                                     idempotent_hint=False, open_world_hint=False),
    "tool": ToolAnnotations(read_only_hint=False, destructive_hint=False,
                            idempotent_hint=False, open_world_hint=False),
    "answer": ToolAnnotations(read_only_hint=False, destructive_hint=True,
                              idempotent_hint=False, open_world_hint=False),
    "episode_report": ToolAnnotations(read_only_hint=True, destructive_hint=False,
                                      idempotent_hint=True, open_world_hint=False),
}
"""Tool annotations. An m3gym tool call adds an image (append-only) and spends budget: not
read-only, not idempotent, not destructive; ``answer`` ends the episode (destructive);
``web_search`` and the other retrieval tools search m3gym's offline corpus (closed world)."""

_INT_LIST: dict[str, Any] = {"type": "array", "items": {"type": "integer"}}
_IMAGE_SENT: dict[str, Any] = {
    "type": "object",
    "required": ["index", "mime_type", "width", "height"],
    "properties": {
        "index": {"type": "integer"}, "mime_type": {"type": "string"},
        "width": {"type": "integer", "description": "Pixel width as sent."},
        "height": {"type": "integer", "description": "Pixel height as sent."},
        "quality": {"type": ["integer", "null"], "description": "JPEG/WebP quality; null: PNG."},
        "full_width": {"type": "integer", "description": "Full-resolution width in the env."},
        "full_height": {"type": "integer"},
        "full_px_per_px": {"type": ["number", "null"],
                           "description": "Full-resolution pixels per pixel sent."},
    },
}
_IMAGES_PROPS: dict[str, Any] = {
    "images_sent": {"type": "array", "items": _IMAGE_SENT,
                    "description": "How each image in this reply was sent (size, format, scale)."},
    "images_left_out": {**_INT_LIST, "description": "Images too large for one reply."},
}
_VERDICT_PROPS: dict[str, Any] = {
    "status": {"type": "string"}, "answer": {}, "answer_correct": {"type": ["boolean", "null"]},
    "reward": {}, "metrics": {"type": "object"}, "failure_mode": {},
}
STEP_OUTPUT: dict[str, Any] = {
    "type": "object",
    "required": ["calls_used", "rounds", "new_images", "images_sent", "images_left_out"],
    "properties": {"calls_used": {"type": "integer"}, "rounds": {"type": "integer"},
                   "new_images": {**_INT_LIST, "description": "Indices of the new images."},
                   **_IMAGES_PROPS, **_VERDICT_PROPS},
}
"""Output schema of every m3gym tool and ``parallel_calls`` (the verdict when the step ends the
episode)."""
ANSWER_OUTPUT: dict[str, Any] = {
    **STEP_OUTPUT, "required": [*STEP_OUTPUT["required"], "status", "answer_correct", "metrics"]}
"""Output schema of ``answer``."""
START_OUTPUT: dict[str, Any] = {
    "type": "object",
    "required": ["episode_id", "prompt", "image_indices", "max_tool_calls", "max_rounds",
                 "images_sent", "images_left_out"],
    "properties": {"episode_id": {"type": "string"}, "prompt": {"type": "string"},
                   "image_indices": _INT_LIST, "choices": {"type": "array"},
                   "max_tool_calls": {"type": "integer"}, "max_rounds": {"type": "integer"},
                   **_IMAGES_PROPS},
}
"""Output schema of ``start_episode``."""
REPORT_OUTPUT: dict[str, Any] = {
    "type": "object", "required": ["steps", "ended", "first_step", "next_step"],
    "properties": {"steps": {"type": "array"}, "ended": {"type": ["string", "null"]},
                   "first_step": {"type": "integer"},
                   "next_step": {"type": ["integer", "null"],
                                 "description": "Call again with first_step=next_step for the "
                                                "rest; null: nothing left."}},
}
"""Output schema of ``episode_report``."""


def reply_bytes(result: CallToolResult) -> int:
    """Return the bytes ``result`` takes as a JSON-RPC response (one server-sent event)."""
    return len(result.model_dump_json(by_alias=True, exclude_none=True).encode()) + ENVELOPE_BYTES


def fit_result(result: CallToolResult, limit: int) -> CallToolResult:
    """Return ``result`` within ``limit`` bytes as sent: drop images (last first), then cut text.

    The table already sizes images to fit; this is the last guard, so no reply can exceed the
    client's limit and end its session. What is dropped is said in the text.
    """
    if reply_bytes(result) <= limit:
        return result
    content = list(result.content)
    data = dict(result.structured_content) if result.structured_content is not None else None
    dropped: list[int] = []
    while any(isinstance(c, ImageContent) for c in content):
        pos = max(i for i, c in enumerate(content) if isinstance(c, ImageContent))
        content.pop(pos)
        if data is not None and data.get("images_sent"):
            sent = list(data["images_sent"])
            dropped.append(int(sent.pop(-1)["index"]))
            data["images_sent"] = sent
            data["images_left_out"] = sorted([*data.get("images_left_out", []), dropped[-1]])
        out = result.model_copy(update={"content": content, "structured_content": data})
        if reply_bytes(out) + 200 <= limit:
            break
    note = (f"\n(images {sorted(dropped)} left out: the reply would exceed {limit} bytes)"
            if dropped else "")
    out = result.model_copy(update={"content": content, "structured_content": data})
    for i, c in enumerate(content):
        if isinstance(c, TextContent):
            content[i] = TextContent(type="text", text=c.text + note)
            break
    out = result.model_copy(update={"content": content, "structured_content": data})
    for _ in range(8):  # text alone too long: cut the longest text block, say so
        over = reply_bytes(out) - limit
        pos = max((i for i, c in enumerate(content) if isinstance(c, TextContent)),
                  key=lambda i: len(content[i].text), default=None)
        if over <= 0 or pos is None:
            break
        text = content[pos].text
        keep = max(0, len(text) - 2 * over - 300)
        content[pos] = TextContent(type="text", text=text[:keep] + (
            f"\n... ({len(text) - keep} characters cut: the reply would exceed {limit} bytes)"))
        out = result.model_copy(update={"content": content, "structured_content": data})
    return out


EPISODE_ID_SCHEMA: dict[str, Any] = {
    "type": "string",
    "description": "The episode to act in (returned by start_episode).",
}


class _Arguments(ArgModelBase):
    """Hands a call's arguments to the tool function as they came (the table validates them)."""

    model_config = ConfigDict(extra="allow", arbitrary_types_allowed=True)

    def model_dump_one_level(self) -> dict[str, Any]:
        """Return ``{"arguments": {...every argument...}}``."""
        return {"arguments": dict(self.model_extra or {})}


def _content(reply: StepReply) -> list[Any]:
    return [TextContent(type="text", text=reply.text), *(_image(i) for i in reply.images)]


def _image(image: EncodedImage) -> ImageContent:
    return ImageContent(type="image", data=base64.b64encode(image.data).decode("ascii"),
                        mime_type=image.mime_type)


def _error(message: str) -> CallToolResult:
    return CallToolResult(content=[TextContent(type="text", text=message)], is_error=True)


ToolFn = Callable[[dict[str, Any], str | None], CallToolResult]
"""A tool body: the call's arguments and the caller's owner key (:func:`caller_owner`)."""


def _guarded(fn: ToolFn, limit: int) -> Callable[..., CallToolResult]:
    """Turn :class:`EpisodeError` (bad input) into a tool error result; fit every reply."""

    def run(arguments: dict[str, Any], ctx: Context | None = None) -> CallToolResult:
        try:
            return fit_result(fn(arguments, caller_owner(ctx)), limit)
        except EpisodeError as exc:
            return fit_result(_error(str(exc)), limit)

    return run


def _title(name: str) -> str:
    return name.replace("_", " ").capitalize()


def _tool(table: EpisodeTable, name: str, description: str, schema: dict[str, Any],
          output: dict[str, Any], fn: ToolFn) -> Tool:
    """Return an MCP tool (hand-made input and output schemas).

    Its function gets the raw arguments and the caller's owner key.
    """
    kind = name if name in ANNOTATIONS else "tool"
    return Tool(fn=_guarded(fn, table.limits.max_response_bytes), name=name, title=_title(name),
                description=description, parameters=schema,
                fn_metadata=FuncMetadata(arg_model=_Arguments, output_schema=output),
                annotations=ANNOTATIONS[kind], is_async=False, context_kwarg="ctx")


def _reply_result(reply: StepReply) -> CallToolResult:
    return CallToolResult(content=_content(reply), structured_content=reply.data,
                          is_error=reply.is_error)


def _only(arguments: dict[str, Any], allowed: set[str], tool: str) -> None:
    extra = sorted(set(arguments) - allowed)
    if extra:
        raise EpisodeError(f"{tool}: unknown argument(s) {quote(extra, 200)}; allowed: "
                           f"{sorted(allowed)}")


def episode_tools(table: EpisodeTable) -> list[Tool]:
    """Return the MCP tools of an episode table (see the module docstring)."""
    import gymnasium as gym

    from m3gym.registration import level_env_id

    schemas = gym.make(level_env_id(1), disable_env_checker=True).unwrapped.tool_schemas("mcp")
    tools = [_start_tool(table), _parallel_tool(table, schemas), _answer_tool(table),
             _report_tool(table)]
    for schema in schemas:
        if schema["name"] == "answer":
            continue
        tools.append(_env_tool(table, schema))
    return tools


def _env_tool(table: EpisodeTable, schema: dict[str, Any]) -> Tool:
    name = schema["name"]
    inner = dict(schema["inputSchema"])
    props = {"episode_id": EPISODE_ID_SCHEMA, **inner.get("properties", {})}
    input_schema = {**inner, "properties": props,
                    "required": ["episode_id", *inner.get("required", [])]}

    def run(arguments: dict[str, Any], owner: str | None) -> CallToolResult:
        args = dict(arguments)
        episode_id = args.pop("episode_id", None)
        if episode_id is None:
            raise EpisodeError(f"{name}: episode_id is required")
        return _reply_result(table.call(episode_id, [{"name": name, "arguments": args}], owner))

    return _tool(table, name, schema["description"], input_schema, STEP_OUTPUT, run)


def _start_tool(table: EpisodeTable) -> Tool:
    schema = {
        "type": "object", "additionalProperties": False, "required": ["env_id"],
        "properties": {
            "env_id": {"type": "string", "enum": table.env_names(),
                       "description": "An env id this server offers, e.g. M3Bench-L2."},
            "seed": {"type": "integer", "minimum": 0,
                     "description": "Reset seed: the task gym.make(env_id).reset(seed=seed) "
                                    "gives (the env draws the family and task). Or give "
                                    "task_seed, or split+index."},
            "task_seed": {"type": "integer", "minimum": 0,
                          "description": "Task seed: the task a dataset row {env_id, task_seed, "
                                         "family} names (m3gym's TRL/verl/prompt datasets)."},
            "family": {"type": "string",
                       "description": "With task_seed: one of the env's task families."},
            "split": {"type": "string", "enum": ["test", "val"],
                      "description": "A frozen split; with index: the task m3gym eval runs."},
            "index": {"type": "integer", "minimum": 0, "description": "Task index in split."},
            "reward": {"type": "string", "enum": sorted(table.rewards),
                       "description": "A reward this server offers, by name (default "
                                      f"{table.default_reward})."},
        },
    }

    def run(arguments: dict[str, Any], owner: str | None) -> CallToolResult:
        _only(arguments, set(schema["properties"]), "start_episode")
        episode_id, data, images = table.start(
            arguments.get("env_id"), seed=arguments.get("seed"), split=arguments.get("split"),
            index=arguments.get("index"), reward=arguments.get("reward"), owner=owner,
            task_seed=arguments.get("task_seed"), family=arguments.get("family"))
        text = data.pop("text")
        content = [TextContent(type="text", text=text), *(_image(i) for i in images)]
        return CallToolResult(content=content, structured_content=data)

    return _tool(table, "start_episode", "Start an m3gym episode: returns its episode_id, the "
                 "question (with the choices), the budgets and the input images.", schema,
                 START_OUTPUT, run)


def _parallel_tool(table: EpisodeTable, schemas: list[dict[str, Any]]) -> Tool:
    names = [s["name"] for s in schemas if s["name"] != "answer"]
    schema = {
        "type": "object", "additionalProperties": False, "required": ["episode_id", "calls"],
        "properties": {
            "episode_id": EPISODE_ID_SCHEMA,
            "calls": {"type": "array", "minItems": 1, "items": {
                "type": "object", "required": ["name", "arguments"],
                "properties": {"name": {"type": "string", "enum": names},
                               "arguments": {"type": "object"}}},
                "description": "Tool calls run together in one step (in parallel); they may only "
                               "use images that exist before the step."},
        },
    }

    def run(arguments: dict[str, Any], owner: str | None) -> CallToolResult:
        _only(arguments, {"episode_id", "calls"}, "parallel_calls")
        return _reply_result(table.call(arguments.get("episode_id"), arguments.get("calls"),
                                        owner))

    return _tool(table, "parallel_calls", "Run several m3gym tool calls in one step, in "
                 "parallel.", schema, STEP_OUTPUT, run)


def _answer_tool(table: EpisodeTable) -> Tool:
    schema = {
        "type": "object", "additionalProperties": False, "required": ["episode_id", "text"],
        "properties": {"episode_id": EPISODE_ID_SCHEMA,
                       "text": {"type": "string", "description": "The final answer."}},
    }

    def run(arguments: dict[str, Any], owner: str | None) -> CallToolResult:
        _only(arguments, {"episode_id", "text"}, "answer")
        reply = table.answer(arguments.get("episode_id"), arguments.get("text"), owner)
        return CallToolResult(content=[TextContent(type="text", text=reply.text + "\n" +
                                                   json.dumps(reply.data, default=str))],
                              structured_content=reply.data, is_error=reply.is_error)

    return _tool(table, "answer", "Give the final answer; ends the episode and returns the "
                 "verdict and every metric.", schema, ANSWER_OUTPUT, run)


def _report_tool(table: EpisodeTable) -> Tool:
    schema = {"type": "object", "additionalProperties": False, "required": ["episode_id"],
              "properties": {"episode_id": EPISODE_ID_SCHEMA,
                             "first_step": {"type": "integer", "minimum": 0, "default": 0,
                                            "description": "First step to return (a long "
                                                           "report comes in pages)."}}}
    limit = table.limits.max_response_bytes

    def page(report: dict[str, Any], first: int, count: int) -> CallToolResult:
        steps = report.get("steps") or []
        nxt = first + count if first + count < len(steps) else None
        data = {**report, "steps": steps[first:first + count], "first_step": first,
                "next_step": nxt}
        text = json.dumps(data)
        if nxt is not None:
            text = (f"Steps {first}-{first + count - 1} of {len(steps)}; call episode_report "
                    f"with first_step={nxt} for the rest.\n") + text
        return CallToolResult(content=[TextContent(type="text", text=text)],
                              structured_content=data)

    def run(arguments: dict[str, Any], owner: str | None) -> CallToolResult:
        _only(arguments, {"episode_id", "first_step"}, "episode_report")
        first = arguments.get("first_step", 0)
        if isinstance(first, bool) or not isinstance(first, int) or first < 0:
            raise EpisodeError(f"first_step must be an integer >= 0, got {quote(first)}")
        report = json.loads(json.dumps(table.report(arguments.get("episode_id"), owner),
                                       default=str))
        report.setdefault("ended", None)
        total = len(report.get("steps") or [])
        if first > total:
            raise EpisodeError(f"first_step {first} is past the last step ({total} steps)")
        count = total - first
        result = page(report, first, count)
        while count > 1 and reply_bytes(result) > limit:  # page: as many steps as fit
            count = max(1, min(count - 1, count * limit // reply_bytes(result)))
            result = page(report, first, count)
        return result

    return _tool(table, "episode_report", "Return an episode's trace: steps, calls, results, "
                 "metrics (in pages when long: first_step).", schema, REPORT_OUTPUT, run)


def build_server(table: EpisodeTable | None = None) -> MCPServer:
    """Return the m3gym MCP server over ``table`` (a fresh one with default limits if None)."""
    table = table or EpisodeTable()
    from m3gym.versions import __version__

    server = MCPServer(name="m3gym", version=__version__, instructions=(
        "m3gym episodes: call start_episode, then the image and retrieval tools with its "
        "episode_id, then answer. Images are indexed; Image 0 is the original. Images in "
        "replies may be re-encoded or downscaled to fit the reply limit (the text says so and "
        "gives the scale); tools always work on the full-resolution image."),
        tools=episode_tools(table))
    server.m3gym_table = table  # type: ignore[attr-defined]
    return server
