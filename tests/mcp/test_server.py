"""``m3gym mcp`` through the official MCP SDK client: in memory and over stdio."""

from __future__ import annotations

import base64
import json
import sys
from pathlib import Path
from typing import Any

import anyio
import gymnasium as gym
import pytest

mcp = pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.stdio import StdioServerParameters  # noqa: E402
from mcp.types import CallToolResult, ImageContent, TextContent  # noqa: E402

import m3gym  # noqa: E402,F401
from m3gym.agents.base import OracleAgent  # noqa: E402
from m3gym.eval.episode_loop import record_episode  # noqa: E402
from m3gym.eval.runner import env_tasks, episode_seed  # noqa: E402
from m3gym.mcp.episode_table import EpisodeTable, McpLimits  # noqa: E402
from m3gym.mcp.server import build_server, fit_result, reply_bytes  # noqa: E402
from m3gym.tasks.registry import make_task  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]


async def play_oracle(client: Client, env_id: str, index: int) -> dict[str, Any]:
    """Play the reference of the split task through MCP tools; return the answer's data."""
    started = await client.call_tool("start_episode",
                                     {"env_id": env_id, "split": "test", "index": index})
    assert not started.is_error, started.content[0].text
    eid = started.structured_content["episode_id"]
    family, task_seed = env_tasks(env_id, "test", index + 1, 0)[index]
    task = make_task(family, task_seed)  # the test is the oracle: it builds the task itself
    for step in task.reference:
        if len(step) == 1:
            c = step[0]
            res = await client.call_tool(c.name, {"episode_id": eid, **dict(c.arguments)})
        else:
            res = await client.call_tool("parallel_calls", {"episode_id": eid, "calls": [
                {"name": c.name, "arguments": dict(c.arguments)} for c in step]})
        assert not res.is_error, res.content[0].text
    done = await client.call_tool("answer", {"episode_id": eid, "text": task.answer.value})
    assert not done.is_error
    return {"episode_id": eid, **done.structured_content}


def oracle_metrics(env_id: str, index: int) -> dict[str, Any]:
    family, task_seed = env_tasks(env_id, "test", index + 1, 0)[index]
    rec = record_episode(gym.make(env_id), OracleAgent(), seed=episode_seed(0, task_seed),
                      options={"family": family, "task_seed": task_seed})
    return rec.final["metrics"]


def test_tool_schemas_are_the_env_schemas_plus_episode_id() -> None:
    async def main() -> None:
        async with Client(build_server()) as client:
            listed = {t.name: t for t in (await client.list_tools()).tools}
            env = gym.make("M3Bench-L1").unwrapped
            for schema in env.tool_schemas("mcp"):
                if schema["name"] == "answer":
                    continue
                tool = listed[schema["name"]]
                assert tool.description == schema["description"]
                got = dict(tool.input_schema)
                props = dict(got["properties"])
                assert props.pop("episode_id")["type"] == "string"
                assert props == schema["inputSchema"]["properties"]
                assert got["required"] == ["episode_id", *schema["inputSchema"]["required"]]
            assert {"start_episode", "parallel_calls", "answer", "episode_report"} <= set(listed)

    anyio.run(main)


@pytest.mark.parametrize(("env_id", "index"), [("M3Bench-L1", 0), ("M3Bench-L2", 1),
                                               ("M3Bench-L3", 2)])
def test_oracle_through_mcp_scores_like_gym_make(env_id: str, index: int) -> None:
    async def main() -> dict[str, Any]:
        async with Client(build_server()) as client:
            return await play_oracle(client, env_id, index)

    got = anyio.run(main)
    want = oracle_metrics(env_id, index)
    assert got["answer_correct"] is True
    for key, value in want.items():
        if isinstance(value, float):
            assert got["metrics"][key] == pytest.approx(value), key
        elif isinstance(value, (int, str, bool)) or value is None:
            assert got["metrics"][key] == value, key


def test_start_returns_prompt_and_images() -> None:
    async def main() -> None:
        async with Client(build_server()) as client:
            res = await client.call_tool("start_episode", {"env_id": "M3Bench-L1", "seed": 7})
            assert not res.is_error
            kinds = [c.type for c in res.content]
            assert kinds[0] == "text" and kinds[1:] == ["image"]
            png = base64.b64decode(res.content[1].data)
            assert png[:4] == b"\x89PNG" and res.content[1].mime_type == "image/png"
            assert res.structured_content["choices"]
            assert "task_id" not in res.structured_content
            eid = res.structured_content["episode_id"]
            crop = await client.call_tool("crop", {"episode_id": eid, "image_index": 0,
                                                   "bbox_2d": [0, 0, 500, 500], "zoom_scale": 2})
            assert not crop.is_error and [c.type for c in crop.content] == ["text", "image"]
            assert crop.structured_content["new_images"] == [1]
            rep = await client.call_tool("episode_report", {"episode_id": eid})
            assert rep.structured_content["status"] == "in progress"

    anyio.run(main)


@pytest.mark.parametrize(("tool", "args", "message"), [
    ("crop", {"image_index": 0, "bbox_2d": [0, 0, 9, 9]}, "episode_id is required"),
    ("crop", {"episode_id": "nope", "image_index": 0, "bbox_2d": [0, 0, 9, 9]},
     "unknown episode 'nope'"),
    ("crop", {"episode_id": "EID", "image_index": "zero", "bbox_2d": [0, 0, 9, 9]},
     "image_index"),
    ("crop", {"episode_id": "EID", "image_index": 0, "bbox_2d": "all"}, "bbox_2d"),
    ("rotate", {"episode_id": "EID", "image_index": 0, "angle": float("nan")}, "angle"),
    ("parallel_calls", {"episode_id": "EID", "calls": "crop"}, "non-empty list"),
    ("parallel_calls", {"episode_id": "EID", "calls": [{"name": 3}]}, "each call must be"),
    ("answer", {"episode_id": "EID", "text": 5}, "text must be a string"),
    ("answer", {"episode_id": "EID"}, "text must be a string"),
    ("start_episode", {"env_id": "M3Bench-L1", "seed": 1, "colour": "red"}, "unknown argument"),
    ("episode_report", {"episode_id": 12}, "episode_id must be a string"),
])
def test_malformed_calls_are_tool_errors(tool: str, args: dict[str, Any], message: str) -> None:
    async def main() -> None:
        async with Client(build_server()) as client:
            res = await client.call_tool("start_episode", {"env_id": "M3Bench-L1", "seed": 1})
            eid = res.structured_content["episode_id"]
            call = {k: (eid if v == "EID" else v) for k, v in args.items()}
            bad = await client.call_tool(tool, call)
            assert bad.is_error
            assert message in bad.content[0].text
            ok = await client.call_tool("grayscale", {"episode_id": eid, "image_index": 0})
            assert not ok.is_error  # the server and the episode survive

    anyio.run(main)


def test_eight_concurrent_clients_do_not_interfere() -> None:
    server = build_server(EpisodeTable(McpLimits(max_episodes=8)))
    results: dict[int, dict[str, Any]] = {}

    async def one(i: int) -> None:
        async with Client(server) as client:
            results[i] = await play_oracle(client, "M3Bench-L1", i)

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(8):
                tg.start_soon(one, i)

    anyio.run(main)
    assert len({r["episode_id"] for r in results.values()}) == 8
    for i, got in results.items():
        want = oracle_metrics("M3Bench-L1", i)
        assert got["answer_correct"] is True
        assert got["metrics"]["S"] == want["S"] and got["metrics"]["m3"] == want["m3"]
    assert server.m3gym_table.live_count() == 0


def test_stdio_subprocess_serves_and_records(tmp_path: Path) -> None:
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "m3gym.cli", "mcp", "--record", str(tmp_path / "r")],
        cwd=str(ROOT), env={"PYTHONPATH": str(ROOT)})

    async def main() -> dict[str, Any]:
        async with Client(params) as client:
            got = await play_oracle(client, "M3Bench-L1", 0)
            bad = await client.call_tool("crop", {"episode_id": got["episode_id"],
                                                  "image_index": 0, "bbox_2d": [0, 0, 9, 9]})
            assert bad.is_error and "has ended" in bad.content[0].text
            return got

    got = anyio.run(main)
    assert got["metrics"]["acc"] == 1.0
    lines = (tmp_path / "r" / "episodes.jsonl").read_text().splitlines()
    assert len(lines) == 1 and '"agent": "mcp"' in lines[0]


def test_streamable_http_on_loopback() -> None:
    import socket
    import subprocess
    import time

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    proc = subprocess.Popen([sys.executable, "-m", "m3gym.cli", "mcp", "--http", str(port)],
                            cwd=str(ROOT), env={**__import__("os").environ,
                                                "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline
                time.sleep(0.3)

        async def main() -> None:
            async with Client(f"http://127.0.0.1:{port}/mcp") as client:
                res = await client.call_tool("start_episode", {"env_id": "M3Bench-L1", "seed": 3})
                eid = res.structured_content["episode_id"]
                step = await client.call_tool("grayscale", {"episode_id": eid, "image_index": 0})
                assert not step.is_error and [c.type for c in step.content] == ["text", "image"]
                done = await client.call_tool("answer", {"episode_id": eid, "text": "x"})
                assert done.structured_content["status"] == "ok"

        anyio.run(main)
    finally:
        proc.terminate()
        proc.wait(timeout=30)


def test_tools_carry_titles_annotations_and_output_schemas() -> None:
    async def main() -> None:
        async with Client(build_server()) as client:
            assert client.server_info.name == "m3gym"
            assert client.server_info.version == m3gym.__version__
            tools = {t.name: t for t in (await client.list_tools()).tools}
            for tool in tools.values():
                assert tool.title and tool.annotations is not None, tool.name
                assert tool.annotations.open_world_hint is False, tool.name
                assert tool.output_schema["type"] == "object", tool.name
            assert tools["crop"].title == "Crop"
            assert tools["episode_report"].annotations.read_only_hint is True
            assert tools["episode_report"].annotations.idempotent_hint is True
            assert tools["answer"].annotations.destructive_hint is True
            for name in ("start_episode", "crop", "web_search", "parallel_calls"):
                ann = tools[name].annotations
                assert ann.read_only_hint is False and ann.idempotent_hint is False, name
            assert "images_sent" in tools["crop"].output_schema["required"]

    anyio.run(main)


def test_long_reports_come_in_pages_within_the_limit() -> None:
    limit = 64 * 1024
    table = EpisodeTable(McpLimits(max_response_bytes=limit))

    async def main() -> None:
        async with Client(build_server(table)) as client:
            res = await client.call_tool("start_episode", {"env_id": "M3Bench-L3", "seed": 1})
            eid = res.structured_content["episode_id"]
            for n in range(10):  # refused over-long queries are traced in full: a long trace
                await client.call_tool("web_search", {"episode_id": eid,
                                                      "query": f"item {n} " * 1000})
            whole = json.dumps(table.report(eid), default=str)
            assert len(whole) > limit
            steps, first = [], 0
            while first is not None:
                rep = await client.call_tool("episode_report",
                                             {"episode_id": eid, "first_step": first})
                assert not rep.is_error and reply_bytes(rep) <= limit
                steps += rep.structured_content["steps"]
                first = rep.structured_content["next_step"]
            assert len(steps) == 10 and first is None
            bad = await client.call_tool("episode_report", {"episode_id": eid, "first_step": 11})
            assert bad.is_error and "past the last step" in bad.content[0].text

    anyio.run(main)


def test_the_last_guard_cuts_what_the_table_did_not_size() -> None:
    big = CallToolResult(content=[TextContent(type="text", text="é" * 300_000),
                                  ImageContent(type="image", data="A" * 200_000,
                                               mime_type="image/png")],
                         structured_content={"images_sent": [{"index": 0}],
                                             "images_left_out": []})
    out = fit_result(big, 128 * 1024)
    assert reply_bytes(out) <= 128 * 1024
    assert [c.type for c in out.content] == ["text"]
    assert out.structured_content == {"images_sent": [], "images_left_out": [0]}
    assert "characters cut" in out.content[0].text
    small = CallToolResult(content=[TextContent(type="text", text="ok")])
    assert fit_result(small, 128 * 1024) is small


def test_another_sessions_episode_is_refused_as_unknown(tmp_path: Path) -> None:
    """Handshake-era sessions own their episodes; a 2026 request (no session) owns none of them."""
    secret = tmp_path / "shadow"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\nalice:$6$hash:19000:0:99999:7:::\n")
    server = build_server()

    async def main() -> None:
        async with Client(server, mode="legacy") as alice, \
                Client(server, mode="legacy") as mallory, Client(server) as anonymous:
            res = await alice.call_tool("start_episode", {"env_id": "M3Bench-L1", "seed": 2})
            eid = res.structured_content["episode_id"]
            fake = "ep-" + "B" * (len(eid) - 3)
            for tool, args in (
                    ("answer", {"text": "x"}), ("episode_report", {}),
                    ("grayscale", {"image_index": 0}),
                    ("parallel_calls", {"calls": [{"name": "grayscale",
                                                   "arguments": {"image_index": 0}}]})):
                for client in (mallory, anonymous):
                    theirs = await client.call_tool(tool, {"episode_id": eid, **args})
                    unknown = await client.call_tool(tool, {"episode_id": fake, **args})
                    assert theirs.is_error and unknown.is_error
                    assert theirs.content[0].text.replace(eid, "ID") == \
                        unknown.content[0].text.replace(fake, "ID")
            done = await alice.call_tool("answer", {"episode_id": eid, "text": "x"})
            assert not done.is_error and done.structured_content["status"] == "ok"
            # the reward probe: a path is never read, and the reply does not say if it exists
            there = await mallory.call_tool("start_episode", {"env_id": "M3Bench-L1", "seed": 1,
                                                              "reward": str(secret)})
            gone = await mallory.call_tool("start_episode", {
                "env_id": "M3Bench-L1", "seed": 1, "reward": str(tmp_path / "missing")})
            assert there.is_error and there.content[0].text == gone.content[0].text
            assert "root" not in there.content[0].text and "$6$" not in there.content[0].text
            listed = {t.name: t for t in (await mallory.list_tools()).tools}
            props = listed["start_episode"].input_schema["properties"]
            assert "M3Bench-L2" in props["env_id"]["enum"] and "m3" in props["reward"]["enum"]

    anyio.run(main)
