"""The OpenAI-compatible agent against a scripted server over real HTTP."""

import base64
import json
import socket

import cv2
import gymnasium as gym
import numpy as np
import pytest

import m3gym  # noqa: F401  (registers the env ids)
from m3gym.agents import make_agent
from m3gym.agents.errors import InfrastructureError
from m3gym.agents.openai_agent import (
    OpenAIAgent,
    OpenAIAgentConfig,
    backoff_delay,
    elide_images,
    image_data_url,
)
from m3gym.agents.prompts import system_prompt
from m3gym.rollout import run_episode
from tests.fake_openai_server import FakeOpenAIServer

OPTIONS = {"family": "tiny_text", "task_seed": 3}


def make(server: FakeOpenAIServer, **kw) -> tuple[OpenAIAgent, list[float]]:
    delays: list[float] = []
    settings = {"base_url": server.base_url, "model": "fake-vlm", "api_key": "EMPTY",
                "timeout": 5.0, "max_retries": 2, "backoff": 0.25, "backoff_max": 4.0}
    settings.update(kw)
    return OpenAIAgent(OpenAIAgentConfig(**settings), sleep=delays.append), delays


def l1_env_and_task():
    env = gym.make("M3Bench-L1")
    env.reset(seed=0, options=OPTIONS)
    return env, env.unwrapped.task


def decode_data_url(url: str) -> np.ndarray:
    header, data = url.split(",", 1)
    assert header == "data:image/png;base64"
    buf = np.frombuffer(base64.b64decode(data), dtype=np.uint8)
    return cv2.cvtColor(cv2.imdecode(buf, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)


def image_urls(message: dict) -> list[str]:
    content = message.get("content")
    if not isinstance(content, list):
        return []
    return [p["image_url"]["url"] for p in content if p.get("type") == "image_url"]


def closed_port() -> int:
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    sock.close()
    return port


def test_scripted_episode_solves_l1_task():
    env, task = l1_env_and_task()
    script = [{"tool_calls": [{"name": c.name, "arguments": dict(c.arguments)} for c in step]}
              for step in task.reference]
    script.append({"tool_calls": [{"name": "answer", "arguments": {"text": task.answer.value}}]})
    with FakeOpenAIServer(script) as server:
        agent, delays = make(server)
        result = run_episode(env, agent, seed=0, options=OPTIONS)
    info = result.final_info
    assert result.terminated and info["answer_correct"] is True
    assert info["metrics"]["acc"] == 1.0 and info["metrics"]["failed_calls"] == 0
    assert delays == []
    requests = server.chat_requests
    assert len(requests) == len(task.reference) + 1
    first = requests[0]
    assert first["model"] == "fake-vlm"
    assert [t["function"]["name"] for t in first["tools"]] == \
        [t["function"]["name"] for t in env.unwrapped.tool_schemas("openai")]
    system, user = first["messages"]
    assert system["role"] == "system" and "Image 0" in system["content"]
    assert "0-1000" in system["content"] and "15 tool calls" in system["content"]
    assert user["content"][0]["text"].startswith(task.question.strip())
    (url,) = image_urls(user)
    np.testing.assert_array_equal(decode_data_url(url), env.unwrapped.view(0))
    # The tool result comes back with the server's tool_call_id, the new image as a user turn.
    second = requests[1]["messages"]
    assistant, tool, feedback = second[2], second[3], second[4]
    assert assistant["tool_calls"][0]["id"] == "call_1_0"
    assert tool == {"role": "tool", "tool_call_id": "call_1_0",
                    "content": result.trace["steps"][0][0]["result_text"]}
    assert "Image 1" in tool["content"]
    assert feedback["role"] == "user"
    (url1,) = image_urls(feedback)
    np.testing.assert_array_equal(decode_data_url(url1), env.unwrapped.view(1))
    assert agent.usage == {"requests": 2, "retries": 0, "prompt_tokens": 20,
                           "completion_tokens": 10}


def test_malformed_tool_calls_become_recorded_failures():
    env, task = l1_env_and_task()
    good = dict(task.reference[0][0].arguments)
    script = [
        {"tool_calls": [{"name": "crop", "arguments": '{"image_index": 0, "bbox_2d": [1, 2'},
                        {"name": "zoom_in", "arguments": {"image_index": 0}},
                        {"name": "crop", "arguments": good}]},
        {"content": 'Let me rotate. <tool_call>{"name": "rotate", "arguments": '
                    '{"image_index": 1, "angle": 0}}</tool_call>'},
        {"content": "I am not sure what to do."},
        {"content": f"<answer>{task.answer.value}</answer>"},
    ]
    with FakeOpenAIServer(script) as server:
        agent, _ = make(server)
        result = run_episode(env, agent, seed=0, options=OPTIONS)
    info = result.final_info
    assert result.terminated and info["answer_correct"] is True
    trace = result.trace
    step0 = trace["steps"][0]
    assert [(c["requested_name"], c["ok"]) for c in step0] == [("zoom_in", False), ("crop", True)]
    assert [s for s, _ in trace["parse_errors"]] == [0, 2]
    assert "not valid JSON" in trace["parse_errors"][0][1]
    assert info["metrics"]["failed_calls"] == 3  # unknown tool + bad JSON + text without action
    # Every tool_call_id got a tool message, in order, with the right verdict.
    messages = server.chat_requests[1]["messages"]
    tools = [m for m in messages if m["role"] == "tool"]
    assert [m["tool_call_id"] for m in tools] == ["call_1_0", "call_1_1", "call_1_2"]
    assert tools[0]["content"].startswith("Error: this call was not run")
    assert "tool_calls[0]" in tools[0]["content"] and "not valid JSON" in tools[0]["content"]
    assert tools[1]["content"].startswith("Error: unknown tool 'zoom_in'")
    assert "Image 1" in tools[2]["content"]
    feedback = messages[-1]
    assert feedback["role"] == "user"
    assert "could not be fully understood" in feedback["content"][0]["text"]
    assert len(image_urls(feedback)) == 1
    # A text action's results come back as one user message (the env's step text + image).
    messages = server.chat_requests[2]["messages"]
    assert messages[-2] == {"role": "assistant", "content": script[1]["content"]}
    assert "rotate: Image 2 created" in messages[-1]["content"][0]["text"]
    assert len(image_urls(messages[-1])) == 1
    # Text with neither a call nor an answer is passed on and reported as a parse error.
    last = server.chat_requests[3]["messages"][-1]
    assert last["role"] == "user" and "no <tool_call>" in last["content"]


def test_http_500_then_success_is_retried_transparently():
    answer = {"tool_calls": [{"name": "answer", "arguments": {"text": "X"}}]}
    with FakeOpenAIServer([{"status": 500}, answer]) as server:
        agent, delays = make(server)
        env, _ = l1_env_and_task()
        obs, info = env.reset(seed=0, options=OPTIONS)
        agent.reset(obs, info)
        action = agent.act(obs, info)
    assert action["tool_calls"][0]["function"] == {"name": "answer", "arguments": '{"text": "X"}'}
    assert len(server.chat_requests) == 2
    assert server.chat_requests[0] == server.chat_requests[1]
    assert delays == [0.25]
    assert agent.usage["requests"] == 2 and agent.usage["retries"] == 1


def test_server_that_always_fails_raises_infrastructure_error():
    with FakeOpenAIServer(default={"status": 503}) as server:
        agent, delays = make(server, max_retries=3)
        env, _ = l1_env_and_task()
        obs, info = env.reset(seed=0, options=OPTIONS)
        agent.reset(obs, info)
        with pytest.raises(InfrastructureError) as err:
            agent.act(obs, info)
    assert err.value.status_code == 503 and err.value.attempts == 4
    assert "after 4 attempts" in str(err.value)
    assert len(server.chat_requests) == 5  # 4 attempts, then the max_tokens=1 probe (also 503)
    assert server.chat_requests[-1]["max_tokens"] == 1
    assert delays == [0.25, 0.5, 1.0]


def test_client_errors_are_not_retried():
    with FakeOpenAIServer(default={"status": 401, "message": "bad key"}) as server:
        agent, delays = make(server)
        agent.reset({"text": "q", "images": (), "image_indices": ()}, {})
        with pytest.raises(InfrastructureError) as err:
            agent.act({}, {})
    assert err.value.status_code == 401 and err.value.attempts == 1
    assert len(server.chat_requests) == 1 and delays == []


def test_rate_limit_waits_for_retry_after():
    answer = {"content": "<answer>X</answer>"}
    script = [{"status": 429, "headers": {"Retry-After": "3"}}, answer]
    with FakeOpenAIServer(script) as server:
        agent, delays = make(server)
        agent.reset({"text": "q", "images": (), "image_indices": ()}, {})
        assert agent.act({}, {}) == "<answer>X</answer>"
    assert delays == [3.0]


def test_unreachable_endpoint_raises_infrastructure_error():
    config = OpenAIAgentConfig(base_url=f"http://127.0.0.1:{closed_port()}/v1", model="m",
                               timeout=2.0, max_retries=2, backoff=0.0)
    delays: list[float] = []
    agent = OpenAIAgent(config, sleep=delays.append)
    agent.reset({"text": "q", "images": (), "image_indices": ()}, {})
    with pytest.raises(InfrastructureError) as err:
        agent.act({}, {})
    assert err.value.status_code is None and err.value.attempts == 3
    assert "APIConnectionError" in str(err.value)
    assert delays == [0.0, 0.0]


def test_timeout_is_a_retried_transport_error():
    with FakeOpenAIServer(default={"delay": 1.0, "content": "<answer>late</answer>"}) as server:
        agent, delays = make(server, timeout=0.1, max_retries=1)
        agent.reset({"text": "q", "images": (), "image_indices": ()}, {})
        with pytest.raises(InfrastructureError) as err:
            agent.act({}, {})
    assert err.value.attempts == 2 and "APITimeoutError" in str(err.value)
    assert delays == [0.25]


def test_model_is_resolved_from_the_models_endpoint():
    with FakeOpenAIServer([{"content": "<answer>X</answer>"}], model="served-model") as server:
        agent, _ = make(server, model=None)
        agent.reset({"text": "q", "images": (), "image_indices": ()}, {})
        agent.act({}, {})
    assert server.paths[0] == "/v1/chat/completions"
    assert server.chat_requests[0]["model"] == "served-model"


def test_text_tool_mode_lists_schemas_in_the_prompt_and_sends_no_tools():
    env, task = l1_env_and_task()
    call = task.reference[0][0]
    block = json.dumps({"name": call.name, "arguments": dict(call.arguments)})
    script = [{"content": f"<tool_call>{block}</tool_call>"},
              {"content": f"<answer>{task.answer.value}</answer>"}]
    with FakeOpenAIServer(script) as server:
        agent, _ = make(server, tool_mode="text")
        result = run_episode(env, agent, seed=0, options=OPTIONS)
    assert result.final_info["answer_correct"] is True
    first = server.chat_requests[0]
    assert "tools" not in first
    assert '"name": "crop"' in first["messages"][0]["content"]
    assert "<tool_call>" in first["messages"][0]["content"]


def test_repeated_server_ids_are_made_unique_per_episode():
    env, task = l1_env_and_task()
    args = dict(task.reference[0][0].arguments)
    crop = {"tool_calls": [{"id": "call_0", "name": "crop", "arguments": args}]}
    answer = {"tool_calls": [{"id": "call_0", "name": "answer",
                              "arguments": {"text": task.answer.value}}]}
    with FakeOpenAIServer([crop, crop, answer]) as server:
        agent, _ = make(server)
        result = run_episode(env, agent, seed=0, options=OPTIONS)
    assert [c["call_id"] for s in result.trace["steps"] for c in s] == ["call_0", "call_0_2"]
    messages = server.chat_requests[2]["messages"]
    ids = [m["tool_call_id"] for m in messages if m["role"] == "tool"]
    assert ids == ["call_0", "call_0_2"]
    assert all(m["content"].startswith("Image") for m in messages if m["role"] == "tool")


def test_config_from_environment_and_overrides():
    environ = {"OPENAI_BASE_URL": "http://h:1/v1", "OPENAI_MODEL": "b", "M3GYM_MODEL": "a"}
    config = OpenAIAgentConfig.from_env(environ, temperature=0.5, max_tokens=None)
    assert (config.base_url, config.model, config.api_key) == ("http://h:1/v1", "a", "EMPTY")
    assert config.temperature == 0.5 and config.max_tokens == 1024
    assert OpenAIAgentConfig.from_env({"OPENAI_API_KEY": "k"}, model="m").api_key == "k"
    with pytest.raises(TypeError, match="nope"):
        OpenAIAgentConfig.from_env({}, nope=1)
    with pytest.raises(ValueError):
        OpenAIAgentConfig(tool_mode="json")
    flags = OpenAIAgentConfig(model=7, timeout=30, max_retries=2.0, temperature=1)
    assert (flags.model, flags.timeout, flags.max_retries, flags.temperature) == ("7", 30.0, 2, 1.0)


def test_make_agent_builds_the_openai_agent(monkeypatch):
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    agent = make_agent("openai", seed=7, model="m", max_retries=0)
    assert isinstance(agent, OpenAIAgent) and agent.name == "openai"
    assert agent.config.seed == 7 and agent.config.base_url == "http://127.0.0.1:9/v1"
    assert agent.client.max_retries == 0


def test_helpers():
    img = np.zeros((4, 6, 3), np.uint8)
    img[1, 2] = (255, 10, 20)
    np.testing.assert_array_equal(decode_data_url(image_data_url(img)), img)
    assert image_data_url(img, "jpeg").startswith("data:image/jpeg;base64,/9j/")
    assert image_data_url(img[..., 0]).startswith("data:image/png;base64,")
    messages = [{"role": "user", "content": [{"type": "image_url",
                                              "image_url": {"url": image_data_url(img)}}]}]
    elided = elide_images(messages)
    assert elided[0]["content"][0]["image_url"]["url"].startswith("<image/png ")
    assert messages[0]["content"][0]["image_url"]["url"].startswith("data:")
    assert [backoff_delay(n, 1.0, 5.0) for n in range(4)] == [1.0, 2.0, 4.0, 5.0]
    assert backoff_delay(0, 1.0, 5.0, retry_after=30.0) == 5.0
    assert "<answer>" in system_prompt(3, 4, "text") and "3 tool calls" in system_prompt(3, 4)
