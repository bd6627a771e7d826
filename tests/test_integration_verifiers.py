"""m3gym as a native verifiers (v1) environment, offline (needs ``pip install .[verifiers]``).

Verifiers' own loader finds the taskset under the id ``m3gym``; ``vf-validate`` replays the oracle
(gold passes) and scores untouched tasks (noop: return 0, not solved) on L1, L2 and L3 tasks; an
end-to-end ``vf-eval`` run against a local OpenAI-compatible server that replays the oracle's tool
calls (streamed, as verifiers' interception proxy asks for) scores the oracle's return.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

if os.environ.get("M3GYM_REQUIRE_EXTRA") == "verifiers":  # CI's .[verifiers] venv: never skip
    import verifiers  # noqa: F401
else:
    pytest.importorskip("verifiers")

import gymnasium as gym  # noqa: E402
import verifiers.v1 as vf  # noqa: E402

import m3gym  # noqa: E402
from m3gym.verifiers import (  # noqa: E402
    M3GymConfig,
    M3GymHarness,
    M3GymTaskset,
    oracle_calls,
    replay,
)
from tests.fake_openai_server import FakeOpenAIServer  # noqa: E402

BIN = Path(sys.executable).parent


def _tasks(**kwargs: Any) -> list:
    config = vf.taskset_config_type("m3gym").model_validate({"id": "m3gym", **kwargs})
    return list(vf.load_taskset(config))


def test_verifiers_loader_finds_m3gym():
    from verifiers.v1.utils.loaders import harness_class, taskset_class

    assert taskset_class("m3gym") is M3GymTaskset
    assert harness_class("m3gym") is M3GymHarness
    assert vf.default_harness_id("m3gym") == "m3gym"  # plain chat + MCP tools, no bash
    assert vf.taskset_config_type("m3gym") is M3GymConfig
    tasks = _tasks(levels=[1, 2, 3], per_level=1)
    assert [t.data.level for t in tasks] == [1, 2, 3]
    for task in tasks:
        (message,) = task.data.prompt
        kinds = [part.type for part in message.content]
        assert kinds[0] == "text" and "image_url" in kinds
        assert message.content[1].image_url.url.startswith("data:image/png;base64,")
        assert task.data.task_seed is not None and task.data.seed is None
        assert task.key == task.data.id
        assert [type(t).__name__ for t in task.toolsets(task.config)] == ["M3GymToolset"]


def test_import_m3gym_never_imports_verifiers():
    code = ("import sys, m3gym, gymnasium as gym; gym.make('M3Bench-L1'); "
            "assert not any(m == 'verifiers' or m.startswith('verifiers.') for m in sys.modules)")
    subprocess.run([sys.executable, "-W", "ignore", "-c", code], check=True)
    assert "M3GymTaskset" in m3gym.__all__  # listed where verifiers is installed


def test_seed_rule_reset_seed_is_gym_reset():
    (task,) = _tasks(seeds=[7], env_id="M3Bench-L2")
    assert task.data.row == {"env_id": "M3Bench-L2", "seed": 7}
    obs, _ = gym.make("M3Bench-L2").reset(seed=7)
    assert task.data.prompt[0].content[0].text == obs["text"]


def test_replay_scores_the_calls():
    (task,) = _tasks(levels=[1], per_level=1)
    calls = oracle_calls(task.data)
    good = replay(task.data, calls)
    assert good.metric("acc") == 1.0 and good.episode_return > 0
    wrong = [*calls[:-1], {"name": "answer", "arguments": {"text": "certainly not it"}}]
    assert replay(task.data, wrong).metric("acc") == 0.0
    assert replay(task.data, []).episode_return <= 0.0  # untouched: ended as a truncation


def test_vf_validate_gold_passes_noop_fails(tmp_path):
    out = tmp_path / "validate"
    proc = subprocess.run(
        [str(BIN / "vf-validate"), "m3gym", "--taskset.levels", "[1,2,3]",
         "--taskset.per_level", "2", "--runtime.type", "subprocess", "-o", str(out)],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (results,) = out.rglob("results.jsonl")
    rows = [json.loads(line) for line in results.read_text().splitlines()]
    assert len(rows) == 6
    assert {row["name"].split("/")[0] for row in rows} == {
        m3gym.level_env_id(level) for level in (1, 2, 3)}
    for row in rows:
        assert row["gold"]["valid"] is True, row
        assert row["noop"]["reason"] == "valid" and row["noop"]["reward"] <= 0.0, row
    (summary,) = out.rglob("summary.json")
    assert json.loads(summary.read_text())["checks"]["gold"]["valid"] == 6


class OracleServer(FakeOpenAIServer):
    """Chat completions that replay each task's oracle calls, one per turn, streamed as SSE.

    The task is recognised by its prompt text; the turn by the assistant messages so far.
    """

    def __init__(self, plans: dict[str, list[dict[str, Any]]]) -> None:
        super().__init__()
        self.plans = plans

    def next_entry(self) -> dict[str, Any]:
        """Return the next oracle call of the request's task (then a closing text)."""
        with self._lock:
            body = self.requests[-1]
        messages = body.get("messages") or []
        text = next(_text(m) for m in messages if m.get("role") == "user")
        plan = next(calls for prompt, calls in self.plans.items() if prompt in text)
        turn = sum(m.get("role") == "assistant" for m in messages)
        return {"tool_calls": [plan[turn]]} if turn < len(plan) else {"content": "done"}

    def _handler_class(self) -> type:
        base = super()._handler_class()
        server = self

        class Handler(base):  # type: ignore[misc, valid-type]
            def _send(self, status: int, body: dict[str, Any],
                      headers: dict[str, str] | None = None) -> None:
                with server._lock:
                    stream = bool(server.requests and server.requests[-1].get("stream"))
                if status != 200 or body.get("object") != "chat.completion" or not stream:
                    super()._send(status, body, headers)
                    return
                choice = body["choices"][0]
                message = choice["message"]
                delta = {"role": "assistant", "content": message.get("content")}
                if message.get("tool_calls"):
                    delta["tool_calls"] = [{"index": i, **c}
                                           for i, c in enumerate(message["tool_calls"])]
                head = {k: body[k] for k in ("id", "created", "model")}
                chunks = [
                    {**head, "object": "chat.completion.chunk",
                     "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
                    {**head, "object": "chat.completion.chunk",
                     "choices": [{"index": 0, "delta": {},
                                  "finish_reason": choice["finish_reason"]}]},
                    {**head, "object": "chat.completion.chunk", "choices": [],
                     "usage": body["usage"]},
                ]
                data = b"".join(f"data: {json.dumps(c)}\n\n".encode() for c in chunks)
                data += b"data: [DONE]\n\n"
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        return Handler


def _text(message: dict[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, str):
        return content
    return "".join(p.get("text", "") for p in content or [] if isinstance(p, dict))


def test_vf_eval_replaying_the_oracle_scores_its_return(tmp_path):
    tasks = _tasks(levels=[1, 2], per_level=1)
    plans = {t.data.prompt[0].content[0].text: oracle_calls(t.data) for t in tasks}
    want = {t.data.id: replay(t.data, plans[t.data.prompt[0].content[0].text]) for t in tasks}
    out = tmp_path / "eval"
    with OracleServer(plans) as server:
        proc = subprocess.run(
            [str(BIN / "vf-eval"), "m3gym", "--model", "fake-vlm",
             "--client.base_url", server.base_url, "--client.api_key_var", "FAKE_OPENAI_KEY",
             "--env.taskset.levels", "[1,2]", "--env.taskset.per_level", "1",
             "--num_rollouts", "1", "--max_concurrent", "1",
             "--env.agent.runtime.type", "subprocess", "--push", "false",
             "--output_dir", str(out)],
            # the venv's uv (the extra) runs the harness's chat program; without it on PATH
            # verifiers would `pip install --user uv`
            env={**os.environ, "FAKE_OPENAI_KEY": "x",
                 "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}"},
            capture_output=True, text=True,
            timeout=300, cwd=tmp_path)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-2000:]
    (traces,) = out.rglob("traces.jsonl")
    episodes = [json.loads(line) for line in traces.read_text().splitlines()]
    assert len(episodes) == 2
    for episode in episodes:
        (trace,) = episode["traces"]
        assert trace["ok"], trace["errors"]
        name = trace["task"]["data"]["id"]
        session = want[name]
        assert trace["rewards"]["episode_return"]["score"] == pytest.approx(
            session.episode_return)
        assert trace["metrics"]["acc"] == 1.0
        assert trace["metrics"]["tool_calls"] == len(plans[trace["task"]["data"]["prompt"][0]
                                                            ["content"][0]["text"]])
    # the tools' images came back to the model as image parts of the tool messages
    tool_parts = [p.get("type") for request in server.chat_requests for m in request["messages"]
                  if m.get("role") == "tool" and isinstance(m.get("content"), list)
                  for p in m["content"]]
    assert "image_url" in tool_parts
