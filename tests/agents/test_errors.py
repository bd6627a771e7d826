"""Whose failure an endpoint error is (issue 42): the model's own output, or the machinery.

The fake server answers with the bodies real servers send (tests/fake_openai_server.py BODIES):
``transformers serve``'s 400 for tool JSON it cannot parse, vLLM's / SGLang's / OpenAI's context
errors, and errors that are nobody's output (an unknown model, overload).
"""

import json
from typing import Any

import pytest

import m3gym  # noqa: F401  (registers the env ids)
from m3gym.agents.errors import InfrastructureError, ModelOutputError
from m3gym.agents.openai_agent import (
    ERROR_BODY_CHARS,
    OpenAIAgent,
    OpenAIAgentConfig,
    history_arguments,
    model_failure_mode,
)
from m3gym.eval.runner import EvalConfig, read_episode_rows, run_eval
from tests.fake_openai_server import BODIES, FakeOpenAIServer, error_entry

L1 = ("M3Bench-L1",)
Q = {"text": "q", "images": (), "image_indices": ()}


def make(server: FakeOpenAIServer, **kw) -> tuple[OpenAIAgent, list[float]]:
    delays: list[float] = []
    settings = {"base_url": server.base_url, "model": "fake-vlm", "timeout": 5.0,
                "max_retries": 2, "backoff": 0.0, **kw}
    return OpenAIAgent(OpenAIAgentConfig(**settings), sleep=delays.append), delays


def act_error(expected: type[BaseException] | tuple[type[BaseException], ...] = (
        ModelOutputError, InfrastructureError), **server_args) -> tuple[Any, FakeOpenAIServer]:
    """Return the error of one agent turn against a fake server (``script=``, ``default=``)."""
    with FakeOpenAIServer(**server_args) as server:
        agent, _ = make(server)
        agent.reset(Q, {})
        with pytest.raises(expected) as err:
            agent.act(Q, {})
    return err.value, server


def first_error(name: str) -> tuple[BaseException, FakeOpenAIServer]:
    return act_error(default=error_entry(name))


@pytest.mark.parametrize(("name", "mode"), [
    ("transformers_bad_json", "tool_misexecution"),
    ("no_arguments_traceback", "tool_misexecution"),
    ("transformers_context", "context_overflow"),
    ("vllm_context", "context_overflow"),
    ("vllm_decoder_prompt", "context_overflow"),
    ("sglang_context", "context_overflow"),
    ("openai_context", "context_overflow"),
])
def test_the_models_own_failures_are_not_retried_and_carry_the_servers_reason(name, mode):
    exc, server = first_error(name)
    assert isinstance(exc, ModelOutputError)
    assert exc.failure_mode == mode and exc.status_code == BODIES[name][0]
    assert len(server.chat_requests) == 1  # temperature 0: a retry gets the same answer
    assert exc.reason and exc.reason in str(exc)
    assert f"HTTP {exc.status_code}" in str(exc)


@pytest.mark.parametrize(("name", "attempts", "needle"), [
    # a 5xx on every attempt, and on the short probe too: a server fault (3 attempts + 1 probe)
    ("transformers_no_arguments", 4, "Internal Server Error"),
    ("transformers_unknown_field", 1, "Unexpected fields in the request: {'top_k'}"),
    ("unknown_model", 1, "Model 'nope' not found"),
    ("overloaded", 4, "The engine is overloaded"),
])
def test_other_errors_stay_infrastructure_with_the_servers_reason(name, attempts, needle):
    exc, server = first_error(name)
    assert isinstance(exc, InfrastructureError)
    assert len(server.chat_requests) == attempts
    assert needle in str(exc)  # not just "Error code: 400"


@pytest.mark.parametrize("probe", [{"content": "A"}, error_entry("transformers_bad_json")])
def test_a_5xx_only_on_the_models_full_answer_is_the_models_failure(probe):
    # transformers serve answers a call without `arguments` with a bare 500 on every retry; the
    # same request cut to one token is answered (text, or a 400 for the cut-off call): the server
    # is up and failed on the model's answer
    bare_500 = error_entry("transformers_no_arguments")
    exc, server = act_error(ModelOutputError, script=[bare_500] * 3 + [probe])
    assert exc.failure_mode == "tool_misexecution" and exc.status_code == 500
    assert "max_tokens=1 succeeds" in str(exc) and "Internal Server Error" in str(exc)
    requests = server.chat_requests
    assert len(requests) == 4 and requests[-1]["max_tokens"] == 1
    assert requests[-1]["messages"] == requests[0]["messages"]  # the same conversation


@pytest.mark.parametrize("probe", [[{"content": "A"}], [{"reset": True}, {"content": "A"}]])
def test_a_dropped_connection_after_the_500_keeps_the_servers_answer(probe):
    # uvicorn closes a kept-alive connection after an unhandled exception, so the retry after a
    # bare 500 (and the probe after that) may fail to connect: the 500 is still the server's answer
    bare_500 = error_entry("transformers_no_arguments")
    exc, server = act_error(ModelOutputError,
                            script=[bare_500, {"reset": True}, {"reset": True}, *probe])
    assert exc.failure_mode == "tool_misexecution" and exc.status_code == 500
    assert "its last answer: HTTP 500" in str(exc) and "max_tokens=1 succeeds" in str(exc)
    assert len(server.chat_requests) == 3 + len(probe)


@pytest.mark.parametrize(("script", "status", "requests"), [
    # the server answered a 500, then never again, the probe included: its fault, status kept
    ([error_entry("transformers_no_arguments")] + [{"reset": True}] * 4, 500, 5),
    # no answer at all: a connection failure, no probe (nothing says the server is up)
    ([{"reset": True}] * 3, None, 3),
])
def test_a_server_that_stops_answering_stays_infrastructure(script, status, requests):
    exc, server = act_error(InfrastructureError, script=script)
    assert exc.status_code == status and exc.attempts == 3
    assert len(server.chat_requests) == requests
    assert ("its last answer: HTTP 500" in str(exc)) == (status == 500)


@pytest.mark.parametrize(("status", "reason", "mode"), [
    (400, "json parser could not parse region as JSON.\nContent: '{'", "tool_misexecution"),
    (422, "json: could not parse after dialect transforms. Original: ...", "tool_misexecution"),
    (413, "This model's maximum context length is 8192 tokens", "context_overflow"),
    (500, "the request exceeds the available context size, try increasing it",
     "context_overflow"),
    # the status matters: the same words from a 401/404/503 are not the model's output
    (401, "This model's maximum context length is 8192 tokens", None),
    (503, "json parser could not parse region as JSON", None),
    (404, "could not parse region as JSON", None),
    # a 400 that names neither
    (400, "Unexpected fields in the request: {'top_k'}", None),
    (400, "invalid JSON in the request body", None),
    (500, "Internal Server Error", None),
    (None, "maximum context length", None),
    (400, "", None),
])
def test_model_failure_mode(status, reason, mode):
    assert model_failure_mode(status, reason) == mode


def test_the_recorded_reason_is_bounded():
    long = {"status": 400, "body": {"detail": "The prompt has 9 tokens, but the model takes at most "
                                               "4, prompt and answer " + "x" * 5000}}
    exc, _ = act_error(ModelOutputError, default=long)
    assert len(exc.reason) <= ERROR_BODY_CHARS
    assert len(str(exc)) < 2 * ERROR_BODY_CHARS + 300


def test_history_sends_json_arguments_and_the_env_gets_them_as_written():
    script = [{"tool_calls": [{"name": "list_images", "arguments": "", "id": "a"},
                              {"name": "crop", "arguments": "[1, 2]", "id": "b"},
                              {"name": "zoom", "arguments": '{"image_index": 0', "id": "c"},
                              {"name": "rotate", "arguments": {"image_index": 0}, "id": "d"}]},
              {"content": "<answer>X</answer>"}]
    with FakeOpenAIServer(script) as server:
        agent, _ = make(server)
        agent.reset(Q, {})
        action = agent.act(Q, {})
        agent.act(Q, {"calls": [], "parse_errors": []})
    sent = [a["function"]["arguments"] for a in action["tool_calls"]]
    assert sent == ["", "[1, 2]", '{"image_index": 0', '{"image_index": 0}']
    history = server.chat_requests[1]["messages"]
    calls = next(m for m in history if m.get("tool_calls"))["tool_calls"]
    assert [c["function"]["arguments"] for c in calls] == ["{}", "{}", "{}",
                                                          '{"image_index": 0}']
    for call in calls:
        assert isinstance(json.loads(call["function"]["arguments"]), dict)
    assert history_arguments("null") == "{}" and history_arguments('{"a": 1}') == '{"a": 1}'


def eval_cfg(server: FakeOpenAIServer, episodes: int = 2) -> EvalConfig:
    return EvalConfig(envs=L1, agent="openai", episodes=episodes, seed=0,
                      agent_args={"base_url": server.base_url, "model": "fake-vlm",
                                  "max_retries": 1, "backoff": 0.0, "timeout": 5.0})


@pytest.mark.parametrize(("name", "mode"), [("transformers_bad_json", "tool_misexecution"),
                                            ("vllm_context", "context_overflow")])
def test_eval_scores_a_model_failure_and_resume_does_not_rerun_it(tmp_path, name, mode):
    crop = {"tool_calls": [{"name": "crop", "arguments": {"image_index": 0,
                                                          "box": [0, 0, 500, 500]}}]}
    # episode 1: one good call, then the server refuses the model's next output
    server = FakeOpenAIServer([crop, error_entry(name)], default=error_entry(name))
    with server:
        result = run_eval(eval_cfg(server), tmp_path / "run")
        served = len(server.chat_requests)
        server.default = {"content": "<answer>X</answer>"}
        again = run_eval(eval_cfg(server), tmp_path / "run", resume=True)
        assert len(server.chat_requests) == served  # nothing ran again
    rows = result.rows
    assert len(rows) == 2 and served == 3  # no retry of a model failure
    for row in rows:
        assert row["status"] == "ok" and row["failure_mode"] == mode
        assert row["answer"] is None and row["answer_correct"] is False and row["truncated"]
        assert row["metrics"]["failure_mode"] == mode and row["metrics"]["acc"] == 0.0
        assert "ModelOutputError" in row["error"]
        assert BODIES[name][1]["detail" if "detail" in BODIES[name][1] else "message"][:40] \
            in row["error"]
    assert result.rows[0]["calls"] >= 1 or result.rows[1]["calls"] >= 1
    overall = result.summary["overall"]
    assert overall["scored"] == 2 and overall["infra_errors"] == 0
    assert overall["failure_modes"] == {mode: 2}
    trace = json.loads((tmp_path / "run" / "traces" / f"{rows[0]['episode_id']}.json")
                       .read_text())
    assert trace["status"] == "ok" and "ModelOutputError" in trace["error"]
    assert again.ran == 0 and again.skipped == 2
    assert len(read_episode_rows(tmp_path / "run" / "episodes.jsonl")) == 2


def test_eval_counts_transport_failures_as_infra_errors_and_reruns_them(tmp_path):
    with FakeOpenAIServer(default=error_entry("overloaded")) as server:
        result = run_eval(eval_cfg(server, episodes=1), tmp_path / "run")
        (row,) = result.rows
        assert row["status"] == "infra_error" and "The engine is overloaded" in row["error"]
        assert result.summary["overall"]["infra_errors"] == 1
        assert result.summary["overall"]["scored"] == 0
        served = len(server.chat_requests)
        server.default = {"content": "<answer>X</answer>"}
        again = run_eval(eval_cfg(server, episodes=1), tmp_path / "run", resume=True)
        assert len(server.chat_requests) == served + 1
    assert again.ran == 1 and again.rows[-1]["status"] == "ok"
