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

State lives in the :class:`~m3gym.mcp.episodes.EpisodeTable`, keyed by ``episode_id``, never in
the MCP session. Bad calls come back as MCP tool errors (``isError``) with a precise message.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.tools.base import Tool
from mcp.server.mcpserver.utilities.func_metadata import ArgModelBase, FuncMetadata
from mcp.types import CallToolResult, ImageContent, TextContent
from pydantic import ConfigDict

from m3gym.mcp.episodes import EncodedImage, EpisodeError, EpisodeTable, StepReply

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


def _guarded(fn: Callable[[dict[str, Any]], CallToolResult]
             ) -> Callable[[dict[str, Any]], CallToolResult]:
    """Turn :class:`EpisodeError` (bad input) into a tool error result."""

    def run(arguments: dict[str, Any]) -> CallToolResult:
        try:
            return fn(arguments)
        except EpisodeError as exc:
            return _error(str(exc))

    return run


def _tool(name: str, description: str, schema: dict[str, Any],
          fn: Callable[[dict[str, Any]], CallToolResult]) -> Tool:
    """Return an MCP tool with a hand-made input schema whose function gets the raw arguments."""
    return Tool(fn=_guarded(fn), name=name, description=description, parameters=schema,
                fn_metadata=FuncMetadata(arg_model=_Arguments), is_async=False)


def _reply_result(reply: StepReply) -> CallToolResult:
    return CallToolResult(content=_content(reply), structured_content=reply.data or None,
                          is_error=reply.is_error)


def _only(arguments: dict[str, Any], allowed: set[str], tool: str) -> None:
    extra = sorted(set(arguments) - allowed)
    if extra:
        raise EpisodeError(f"{tool}: unknown argument(s) {extra}; allowed: {sorted(allowed)}")


def episode_tools(table: EpisodeTable) -> list[Tool]:
    """Return the MCP tools of an episode table (see the module docstring)."""
    import gymnasium as gym

    from m3gym import level_env_id

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

    def run(arguments: dict[str, Any]) -> CallToolResult:
        args = dict(arguments)
        episode_id = args.pop("episode_id", None)
        if episode_id is None:
            raise EpisodeError(f"{name}: episode_id is required")
        return _reply_result(table.call(episode_id, [{"name": name, "arguments": args}]))

    return _tool(name, schema["description"], input_schema, run)


def _start_tool(table: EpisodeTable) -> Tool:
    schema = {
        "type": "object", "additionalProperties": False, "required": ["env_id"],
        "properties": {
            "env_id": {"type": "string", "description": "An m3gym env id, e.g. M3Bench-L2."},
            "seed": {"type": "integer", "minimum": 0,
                     "description": "Reset seed (the env draws the task); or give split+index."},
            "split": {"type": "string", "enum": ["test", "val"],
                      "description": "A frozen split; with index: the task m3gym eval runs."},
            "index": {"type": "integer", "minimum": 0, "description": "Task index in split."},
            "reward": {"type": "string", "description": "Reward preset (default m3)."},
        },
    }

    def run(arguments: dict[str, Any]) -> CallToolResult:
        _only(arguments, set(schema["properties"]), "start_episode")
        episode_id, data, images = table.start(
            arguments.get("env_id"), seed=arguments.get("seed"), split=arguments.get("split"),
            index=arguments.get("index"), reward=arguments.get("reward"))
        data = {k: v for k, v in data.items() if k != "tool_schemas"}
        text = (f"episode_id: {episode_id}\n\n{data['prompt']}\n\nBudget: "
                f"{data.get('max_tool_calls')} tool calls, {data.get('max_rounds')} rounds. Call "
                "the tools with this episode_id; finish with answer.")
        content = [TextContent(type="text", text=text), *(_image(i) for i in images)]
        return CallToolResult(content=content, structured_content=data)

    return _tool("start_episode", "Start an m3gym episode: returns its episode_id, the question "
                 "(with the choices) and the input images.", schema, run)


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

    def run(arguments: dict[str, Any]) -> CallToolResult:
        _only(arguments, {"episode_id", "calls"}, "parallel_calls")
        return _reply_result(table.call(arguments.get("episode_id"), arguments.get("calls")))

    return _tool("parallel_calls", "Run several m3gym tool calls in one step, in parallel.",
                 schema, run)


def _answer_tool(table: EpisodeTable) -> Tool:
    schema = {
        "type": "object", "additionalProperties": False, "required": ["episode_id", "text"],
        "properties": {"episode_id": EPISODE_ID_SCHEMA,
                       "text": {"type": "string", "description": "The final answer."}},
    }

    def run(arguments: dict[str, Any]) -> CallToolResult:
        _only(arguments, {"episode_id", "text"}, "answer")
        reply = table.answer(arguments.get("episode_id"), arguments.get("text"))
        return CallToolResult(content=[TextContent(type="text", text=reply.text + "\n" +
                                                   json.dumps(reply.data, default=str))],
                              structured_content=reply.data, is_error=reply.is_error)

    return _tool("answer", "Give the final answer; ends the episode and returns the verdict and "
                 "every metric.", schema, run)


def _report_tool(table: EpisodeTable) -> Tool:
    schema = {"type": "object", "additionalProperties": False, "required": ["episode_id"],
              "properties": {"episode_id": EPISODE_ID_SCHEMA}}

    def run(arguments: dict[str, Any]) -> CallToolResult:
        _only(arguments, {"episode_id"}, "episode_report")
        report = table.report(arguments.get("episode_id"))
        return CallToolResult(content=[TextContent(type="text",
                                                   text=json.dumps(report, default=str))],
                              structured_content=json.loads(json.dumps(report, default=str)))

    return _tool("episode_report", "Return an episode's trace: steps, calls, results, metrics.",
                 schema, run)


def build_server(table: EpisodeTable | None = None) -> MCPServer:
    """Return the m3gym MCP server over ``table`` (a fresh one with default limits if None)."""
    table = table or EpisodeTable()
    server = MCPServer(name="m3gym", instructions=(
        "m3gym episodes: call start_episode, then the image and retrieval tools with its "
        "episode_id, then answer. Images are indexed; Image 0 is the original."),
        tools=episode_tools(table))
    server.m3gym_table = table  # type: ignore[attr-defined]
    return server
