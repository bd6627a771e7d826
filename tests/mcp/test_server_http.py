"""``m3gym mcp --http`` with the official MCP Python SDK client at default settings.

The client takes at most 1 MiB per server-sent event (``mcp.client.streamable_http``); a reply
over it ends the client's session. These tests drive a real server subprocess over streamable
HTTP with ``Client(url)`` and nothing changed: the largest ``start_episode`` and four parallel
zoomed crops on every level, 16 concurrent sessions, a client that goes away mid-episode, and
``--record`` keeping the episodes in flight when the server is stopped by SIGTERM.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest

mcp = pytest.importorskip("mcp")

from mcp import Client  # noqa: E402
from mcp.client.streamable_http import DEFAULT_MAX_SSE_EVENT_SIZE  # noqa: E402

from m3gym.mcp import CLIENT_EVENT_LIMIT, DEFAULT_RESPONSE_BYTES  # noqa: E402
from m3gym.mcp.measure import CROPS  # noqa: E402
from m3gym.mcp.server import reply_bytes  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

LARGEST_START: list[tuple[str, int]] = [
    ("M3Bench-L1", 157), ("M3Bench-L2", 113), ("M3Bench-L3", 12), ("M3Bench-ChartValue", 32),
    ("M3Bench-ChartValue", 3)]
"""Per level, the seed whose start_episode reply is the largest as view-size PNG (what the server
sent before replies were sized: L3 seed 12 took 1.47 MB), found with ``python -m
m3gym.mcp.measure`` (docs/mcp.md), plus the issue's ChartValue seed 3."""


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def start_server(*args: str) -> tuple[subprocess.Popen, str]:
    """Start ``m3gym mcp --http PORT *args``; return the process and its URL once it listens.

    Its log goes to a temporary file (a pipe could fill up and stall the server).
    """
    port = free_port()
    log = tempfile.TemporaryFile()
    proc = subprocess.Popen([sys.executable, "-m", "m3gym.cli", "mcp", "--http", str(port),
                             *args], cwd=str(ROOT),
                            env={**os.environ, "PYTHONPATH": str(ROOT)},
                            stdout=subprocess.DEVNULL, stderr=log)
    proc.log = log  # type: ignore[attr-defined]
    while True:  # wait for the port (bounded by the process: a failed start ends the test)
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return proc, f"http://127.0.0.1:{port}/mcp"
        except OSError:
            if proc.poll() is not None:
                raise RuntimeError(f"server exited: {read_log(proc)}") from None
            time.sleep(0.3)


def read_log(proc: subprocess.Popen) -> str:
    log = proc.log  # type: ignore[attr-defined]
    log.seek(0)
    return log.read().decode(errors="replace")[-3000:]


def stop(proc: subprocess.Popen) -> str:
    """SIGTERM the server, wait for it; return the end of its log."""
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
    try:
        proc.wait(timeout=60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()
    return read_log(proc)


@pytest.fixture(scope="module")
def server_url() -> Iterator[str]:
    proc, url = start_server("--max-episodes", "40")
    try:
        yield url
    finally:
        stop(proc)


def test_the_client_default_is_what_the_server_sizes_for() -> None:
    assert DEFAULT_MAX_SSE_EVENT_SIZE == CLIENT_EVENT_LIMIT
    assert DEFAULT_RESPONSE_BYTES <= CLIENT_EVENT_LIMIT * 3 // 4


def test_the_largest_start_would_end_the_session_as_png() -> None:
    """L3 seed 12's images as view-size PNG are over the client's limit: the test above bites."""
    import base64

    import cv2
    import gymnasium as gym

    obs, _ = gym.make("M3Bench-L3").reset(seed=12)
    b64 = sum(len(base64.b64encode(cv2.imencode(".png", cv2.cvtColor(v, cv2.COLOR_RGB2BGR))[1]))
              for v in obs["images"])
    assert b64 > CLIENT_EVENT_LIMIT


@pytest.mark.parametrize(("env_id", "seed"), LARGEST_START)
def test_largest_start_and_four_parallel_crops_survive(server_url: str, env_id: str,
                                                       seed: int) -> None:
    async def main() -> None:
        async with Client(server_url) as client:  # default settings: 1 MiB per event
            res = await client.call_tool("start_episode", {"env_id": env_id, "seed": seed})
            assert not res.is_error, res.content[0].text
            assert reply_bytes(res) <= DEFAULT_RESPONSE_BYTES
            data = res.structured_content
            assert [c.type for c in res.content] == ["text"] + ["image"] * len(
                data["image_indices"])
            assert len(data["images_sent"]) == len(data["image_indices"])
            assert not data["images_left_out"]
            eid = data["episode_id"]
            res = await client.call_tool("parallel_calls", {"episode_id": eid, "calls": [
                {"name": "crop", "arguments": {"image_index": 0, "bbox_2d": box,
                                               "zoom_scale": 2}} for box in CROPS]})
            assert not res.is_error, res.content[0].text
            assert reply_bytes(res) <= DEFAULT_RESPONSE_BYTES
            assert [c.type for c in res.content] == ["text"] + ["image"] * 4
            sent = res.structured_content["images_sent"]
            first = len(data["image_indices"])
            assert [s["index"] for s in sent] == list(range(first, first + 4))
            for s in sent:  # the text states each image's scale to the full-resolution image
                if f"Image {s['index']} is sent as" in res.content[0].text:
                    assert f"{s['full_width']}x{s['full_height']} full-resolution" in \
                        res.content[0].text
            # the session is alive: a further call and the answer go through
            ok = await client.call_tool("grayscale", {"episode_id": eid, "image_index": first})
            assert not ok.is_error
            done = await client.call_tool("answer", {"episode_id": eid, "text": "x"})
            assert done.structured_content["status"] == "ok"

    anyio.run(main)


def test_sixteen_concurrent_sessions(server_url: str) -> None:
    results: dict[int, dict[str, Any]] = {}

    async def one(i: int) -> None:
        async with Client(server_url) as client:
            res = await client.call_tool("start_episode", {"env_id": "M3Bench-L1", "seed": i})
            eid = res.structured_content["episode_id"]
            crop = await client.call_tool("crop", {"episode_id": eid, "image_index": 0,
                                                   "bbox_2d": [0, 0, 500, 500]})
            assert not crop.is_error and crop.structured_content["new_images"] == [1]
            done = await client.call_tool("answer", {"episode_id": eid, "text": "x"})
            results[i] = {"eid": eid, **done.structured_content}

    async def main() -> None:
        async with anyio.create_task_group() as tg:
            for i in range(16):
                tg.start_soon(one, i)

    anyio.run(main)
    assert len({r["eid"] for r in results.values()}) == 16
    assert all(r["status"] == "ok" and r["metrics"]["calls"] == 1 for r in results.values())


def test_a_client_that_leaves_mid_episode(server_url: str) -> None:
    async def main() -> None:
        async with Client(server_url) as client:
            res = await client.call_tool("start_episode", {"env_id": "M3Bench-L2", "seed": 3})
            eid = res.structured_content["episode_id"]
            with anyio.CancelScope() as scope:  # the client gives up mid-call and leaves
                scope.cancel()
                await client.call_tool("parallel_calls", {"episode_id": eid, "calls": [
                    {"name": "crop", "arguments": {"image_index": 0, "bbox_2d": box}}
                    for box in CROPS]})
        # the official client speaks protocol 2026 here: no session, so the episode_id is the
        # capability and a new client holding it goes on (docs/mcp.md, Trust rules)
        async with Client(server_url) as client:
            rep = await client.call_tool("episode_report", {"episode_id": eid})
            assert not rep.is_error and rep.structured_content["ended"] is None
            step = await client.call_tool("grayscale", {"episode_id": eid, "image_index": 0})
            assert not step.is_error
            done = await client.call_tool("answer", {"episode_id": eid, "text": "x"})
            assert done.structured_content["status"] == "ok"

    anyio.run(main)


def test_sigterm_records_episodes_in_flight(tmp_path: Path) -> None:
    proc, url = start_server("--record", str(tmp_path / "run"))
    try:
        async def main() -> str:
            async with Client(url) as client:
                res = await client.call_tool("start_episode",
                                             {"env_id": "M3Bench-L1", "seed": 4})
                eid = res.structured_content["episode_id"]
                await client.call_tool("grayscale", {"episode_id": eid, "image_index": 0})
                return eid

        anyio.run(main)
    finally:
        err = stop(proc)
    assert proc.returncode == 0, err[-2000:]
    lines = (tmp_path / "run" / "episodes.jsonl").read_text().splitlines()
    rows = [json.loads(line) for line in lines]
    assert [r["status"] for r in rows] == ["interrupted"]
    trace = json.loads((tmp_path / "run" / "traces" / f"{rows[0]['episode_id']}.json")
                       .read_text())
    assert len(trace["steps"]) == 1  # the grayscale call made before the stop is kept


def test_inspector_cli_lists_tools_over_http(server_url: str, tmp_path: Path) -> None:
    """The MCP Inspector CLI (npm), from npm's cache only (CI warms it; never the network)."""
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx (node) is not installed")
    cmd = [npx, "--yes", "--offline", "@modelcontextprotocol/inspector", "--cli", server_url,
           "--transport", "http", "--method", "tools/list"]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=300, cwd=tmp_path)
    except subprocess.TimeoutExpired:
        pytest.skip("the MCP Inspector CLI did not start within 300 s")
    if out.returncode != 0 and "npm error" in out.stderr:
        pytest.skip("the MCP Inspector CLI is not in npm's cache (run `npx --yes "
                    f"@modelcontextprotocol/inspector --cli --help` once): {out.stderr[-300:]}")
    assert out.returncode == 0, out.stderr[-2000:]
    tools = {t["name"]: t for t in json.loads(out.stdout)["tools"]}
    assert tools["crop"]["annotations"]["readOnlyHint"] is False
    assert tools["episode_report"]["annotations"]["readOnlyHint"] is True
    assert tools["answer"]["annotations"]["destructiveHint"] is True
    assert tools["start_episode"]["title"] == "Start episode"
    assert "outputSchema" in tools["start_episode"]


def test_operator_flags_and_sessions_over_http(tmp_path: Path) -> None:
    """--env and --reward limit what a client may choose; an Mcp-Session-Id owns its episodes."""
    reward = tmp_path / "strict.yaml"
    reward.write_text("name: strict\nanswer: 2.0\n")
    proc, url = start_server("--env", "M3Bench-L1", "--reward", str(reward),
                             "--record", str(tmp_path / "run"))
    try:
        async def main() -> None:
            async with Client(url, mode="legacy") as alice, \
                    Client(url, mode="legacy") as mallory, Client(url) as anonymous:
                bad = await alice.call_tool("start_episode", {"env_id": "M3Bench-L2", "seed": 1})
                assert bad.is_error and "this server offers M3Bench-L1" in bad.content[0].text
                by_path = await alice.call_tool("start_episode", {
                    "env_id": "M3Bench-L1", "seed": 1, "reward": str(reward)})
                assert by_path.is_error and str(reward) not in by_path.content[0].text
                res = await alice.call_tool("start_episode", {"env_id": "M3Bench-L1", "seed": 1,
                                                              "reward": "strict"})
                assert not res.is_error, res.content[0].text
                eid = res.structured_content["episode_id"]
                for client in (mallory, anonymous):
                    stolen = await client.call_tool("answer", {"episode_id": eid, "text": "x"})
                    assert stolen.is_error and "unknown episode" in stolen.content[0].text
                done = await alice.call_tool("answer", {"episode_id": eid, "text": "x"})
                assert done.structured_content["status"] == "ok"

        anyio.run(main)
    finally:
        err = stop(proc)
    assert proc.returncode == 0, err[-2000:]
    config = json.loads((tmp_path / "run" / "config.json").read_text())
    assert config["mcp_server"]["envs"] == ["M3Bench-L1"]
    assert config["mcp_server"]["default_reward"] == "strict"
    assert config["mcp_server"]["shared_episodes"] is False
