"""A tiny scripted OpenAI-compatible server for tests, over real HTTP on 127.0.0.1.

It serves ``POST /v1/chat/completions`` from a script (one entry per request) and
``GET /v1/models``, and records every request body it got. Script entries:

- ``{"tool_calls": [{"name": ..., "arguments": dict | str, "id": optional}], "content": ...}``
  (string arguments are sent verbatim, so malformed JSON can be scripted);
- ``{"content": "text"}``;
- ``{"status": 500}`` (optionally ``"message"`` and ``"headers"``): an error response;
- ``{"status": 400, "body": dict | str}``: an error response with exactly that body (a ``str``
  is sent as ``text/plain``), e.g. the real servers' bodies below (:data:`BODIES`);
- ``{"delay": seconds, ...}``: wait before answering (for timeout tests);
- ``{"reset": True}``: close the connection without an answer, as uvicorn does to a kept-alive
  connection after an unhandled exception (the client sees a connection error).

When the script runs out, ``default`` answers (an HTTP 500 "script exhausted" when unset).
"""

from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

BODIES: dict[str, tuple[int, dict[str, Any] | str]] = {
    # transformers serve 5.25: the tool-call region of a response is not JSON (ValueError -> 400)
    "transformers_bad_json": (400, {"detail": (
        "json parser could not parse region as JSON.\nContent: '{\"name\": \"crop\", "
        "\"arguments\": {\"image_index\": 0, \"box\": [0, 0'\nError: Expecting ',' "
        "delimiter: line 1 column 58 (char 57)")}),
    # transformers serve 5.25: a call without "arguments" (KeyError in _normalize_tool_call):
    # Starlette's bare 500, indistinguishable from a server fault
    "transformers_no_arguments": (500, "Internal Server Error"),
    # the same with a server that names the exception (a debug traceback)
    "no_arguments_traceback": (500, "Traceback (most recent call last):\n  ...\n"
                                    "KeyError: 'arguments'"),
    # transformers serve 5.25: the prompt leaves no room for an answer (ValueError -> 400)
    "transformers_context": (400, {"detail": (
        "The prompt has 4101 tokens, but the model takes at most 4096, prompt and answer "
        "(`--max-model-len`).")}),
    # transformers serve 5.25: a field it does not know (top_k) -> 422
    "transformers_unknown_field": (422, {"detail": "Unexpected fields in the request: {'top_k'}"}),
    # vLLM (OpenAI-style error object)
    "vllm_context": (400, {"object": "error", "message": (
        "This model's maximum context length is 4096 tokens. However, you requested 5120 tokens "
        "(4096 in the messages, 1024 in the completion). Please reduce the length of the "
        "messages or completion."), "type": "BadRequestError", "param": None, "code": 400}),
    "vllm_decoder_prompt": (400, {"error": {"message": (
        "The decoder prompt (length 5000) is longer than the maximum model length of 4096. "
        "Make sure that `max_model_len` is no smaller than the number of text tokens plus "
        "multimodal tokens."), "type": "BadRequestError", "param": None, "code": 400}}),
    # SGLang
    "sglang_context": (400, {"object": "error", "message": (
        "The input (5000 tokens) is longer than the model's context length (4096 tokens)."),
        "type": "BadRequestError", "param": None, "code": 400}),
    # OpenAI
    "openai_context": (400, {"error": {"message": (
        "This model's maximum context length is 128000 tokens. However, your messages resulted "
        "in 130000 tokens. Please reduce the length of the messages."),
        "type": "invalid_request_error", "param": "messages",
        "code": "context_length_exceeded"}}),
    # a 400 that is no one's output: an unknown model
    "unknown_model": (400, {"detail": "Model 'nope' not found"}),
    # an overloaded server
    "overloaded": (503, {"error": "The engine is overloaded"}),
}
"""Error responses (status, body) of real OpenAI-compatible servers, for ``{"status", "body"}``
entries (transformers serve's are read from its 5.25 source; vLLM's, SGLang's and OpenAI's are
their documented / commonly reported messages)."""


def error_entry(name: str) -> dict[str, Any]:
    """Return the script entry answering the real server's error :data:`BODIES` ``[name]``."""
    status, body = BODIES[name]
    return {"status": status, "body": body}


class QuietHTTPServer(ThreadingHTTPServer):
    """A threading HTTP server that does not print client disconnects (timeout tests)."""

    daemon_threads = True

    def handle_error(self, request: Any, client_address: Any) -> None:
        """Ignore errors of a handler (e.g. a client that hung up after its timeout)."""


class FakeOpenAIServer:
    """Scripted chat-completions server; use as a context manager (``with ... as server``)."""

    def __init__(self, script: list[dict[str, Any]] | None = None,
                 default: dict[str, Any] | None = None, model: str = "fake-vlm") -> None:
        self.script = list(script or [])
        self.default = default
        self.model = model
        self.requests: list[dict[str, Any]] = []
        self.paths: list[str] = []
        self._lock = threading.Lock()
        self._served = 0
        self._httpd = QuietHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(target=self._httpd.serve_forever, args=(0.02,),
                                        daemon=True)

    @property
    def base_url(self) -> str:
        """The endpoint root to give the client, ``http://127.0.0.1:<port>/v1``."""
        return f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"

    @property
    def chat_requests(self) -> list[dict[str, Any]]:
        """The recorded chat-completion request bodies, in order."""
        return [r for r, p in zip(self.requests, self.paths) if p.endswith("/chat/completions")]

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()

    def next_entry(self) -> dict[str, Any]:
        """Return the script entry for the next chat request."""
        with self._lock:
            i = self._served
            self._served += 1
        if i < len(self.script):
            return self.script[i]
        if self.default is not None:
            return self.default
        return {"status": 500, "message": "script exhausted"}

    def completion(self, entry: dict[str, Any], index: int) -> dict[str, Any]:
        """Return the chat.completion body of a scripted (non-error) entry."""
        message: dict[str, Any] = {"role": "assistant", "content": entry.get("content")}
        calls = []
        for j, call in enumerate(entry.get("tool_calls") or ()):
            args = call.get("arguments", {})
            calls.append({"id": call.get("id", f"call_{index}_{j}"), "type": "function",
                          "function": {"name": call["name"],
                                       "arguments": args if isinstance(args, str)
                                       else json.dumps(args)}})
        if calls:
            message["tool_calls"] = calls
        return {
            "id": f"chatcmpl-{index}", "object": "chat.completion", "created": 0,
            "model": self.model,
            "choices": [{"index": 0, "message": message,
                         "finish_reason": "tool_calls" if calls else "stop"}],
            "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
        }

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # keep test output quiet
                pass

            def _send(self, status: int, body: dict[str, Any],
                      headers: dict[str, str] | None = None) -> None:
                data = json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                for key, value in (headers or {}).items():
                    self.send_header(key, value)
                self.end_headers()
                self.wfile.write(data)

            def _send_raw(self, status: int, body: dict[str, Any] | str) -> None:
                text = isinstance(body, str)
                data = body.encode() if text else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("Content-Type", "text/plain; charset=utf-8" if text
                                 else "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/models"):
                    self._send(200, {"object": "list", "data": [
                        {"id": server.model, "object": "model", "created": 0,
                         "owned_by": "test"}]})
                else:
                    self._send(404, {"error": {"message": "not found"}})

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                body = json.loads(self.rfile.read(length) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    server.paths.append(self.path)
                if not self.path.rstrip("/").endswith("/chat/completions"):
                    self._send(404, {"error": {"message": "not found"}})
                    return
                index = len(server.chat_requests)
                entry = server.next_entry()
                if entry.get("reset"):
                    self.close_connection = True
                    return
                if entry.get("delay"):
                    time.sleep(float(entry["delay"]))
                status = int(entry.get("status", 200))
                if status != 200 and "body" in entry:
                    self._send_raw(status, entry["body"])
                    return
                if status != 200:
                    self._send(status, {"error": {
                        "message": entry.get("message", "scripted error"),
                        "type": "server_error", "code": status}}, entry.get("headers"))
                    return
                self._send(200, server.completion(entry, index))

        return Handler
