"""An agent backed by any OpenAI-compatible chat endpoint (vLLM, SGLang, Ollama, hosted APIs).

The conversation follows Agentic-MME: a system prompt (indexed images, 0-1000 boxes, one action
or one answer per turn, budgets), a user turn with the question and the images as base64 data
URLs at view resolution, then one assistant turn per env step. After a step, each tool call gets
a ``role: tool`` message with its result text (matched by ``tool_call_id``) and a user message
carries the new images (most servers cannot put images in tool messages) and any parse errors.

The action handed to the env is the assistant message (its ``tool_calls``) or, without tool
calls, its text (``<tool_call>`` blocks / ``<answer>``); text with neither is passed on as is so
the env records a parse error, a counted misexecution rather than a crash.

Transport failures (connection refused, timeouts, 429, 5xx) are retried with exponential
backoff; when retries run out, or on errors retrying cannot fix (401, 404, bad request),
:class:`~m3gym.agents.errors.InfrastructureError` is raised. The agent never invents an answer.
An error the server answers *because of the model's own output* (tool-call JSON it cannot parse,
a call without ``arguments``, a conversation past the context: :func:`model_failure_mode` reads
the status and the server's reason) raises :class:`~m3gym.agents.errors.ModelOutputError`
instead, at once: the eval harness scores that episode as the model's failure. Every recorded
error carries the server's own reason (:func:`error_body`).

Past assistant tool calls are sent back with JSON-object ``arguments`` (``"{}"`` for a call
without arguments or with arguments that are not a JSON object; the env still gets them as the
model wrote them), since servers that render history through a chat template parse them.

Configuration comes from constructor arguments, else the environment: ``OPENAI_BASE_URL``,
``M3GYM_MODEL`` or ``OPENAI_MODEL``, ``OPENAI_API_KEY`` (``"EMPTY"`` for local servers). Without a
model name the first model the endpoint lists (``GET /models``) is used.
"""

from __future__ import annotations

import base64
import copy
import json
import os
import re
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any, Literal

import cv2
import numpy as np

from m3gym.agents.errors import InfrastructureError, ModelOutputError
from m3gym.agents.prompts import (
    ToolMode,
    image_caption,
    not_run_text,
    parse_error_text,
    system_prompt,
    tool_message_text,
)
from m3gym.extras import require_extra
from m3gym.trace import code_cell_call_ids

openai = require_extra("openai", "eval", "the OpenAI agent (--agent openai)")

ImageFormat = Literal["png", "jpeg"]
RETRYABLE_STATUS = frozenset({408, 409, 425, 429, 500, 502, 503, 504})
"""HTTP statuses worth retrying (plus every other 5xx)."""

ERROR_BODY_CHARS = 500
"""The most characters of a server's error body kept in a recorded error."""

CONTEXT_OVERFLOW_PATTERNS: tuple[str, ...] = (
    r"maximum context length",  # vLLM, SGLang, OpenAI: "This model's maximum context length is"
    r"context_length_exceeded",  # OpenAI's error code
    r"longer than the maximum model length",  # vLLM: "The decoder prompt (length N) is longer ..."
    r"longer than the model's context length",  # SGLang: "The input (N tokens) is longer ..."
    r"exceeds? the available context size",  # llama.cpp server
    r"takes at most \d+, prompt and answer",  # transformers serve: "The prompt has N tokens, ..."
)
"""Server reasons (regular expressions, case-insensitive) of a prompt past the model's context."""

TOOL_OUTPUT_PATTERNS: tuple[str, ...] = (
    r"could not parse region as json",  # transformers serve: broken or cut-off tool-call JSON
    r"could not parse after dialect transforms",  # transformers serve: the same, lax JSON
    r"keyerror: '(arguments|name|function)'",  # a tool call without arguments, when the 500
    # body names the exception
)
"""Server reasons (regular expressions, case-insensitive) of tool calls it could not parse."""

PROBE_MAX_TOKENS = 1
"""The answer length of the probe that tells a server fault from a 5xx on the model's answer."""

MODEL_FAILURE_STATUS: frozenset[int] = frozenset({400, 413, 422, 500})
"""HTTP statuses a server answers for a model's own bad output or an overlong prompt."""


@dataclass(frozen=True)
class OpenAIAgentConfig:
    """Settings of :class:`OpenAIAgent`.

    Attributes:
        base_url: endpoint root, e.g. ``http://localhost:8000/v1``; ``None`` = the client's
            default (``https://api.openai.com/v1``).
        model: model name; ``None`` = the first model ``GET /models`` lists.
        api_key: bearer token; ``"EMPTY"`` suits local servers.
        temperature / max_tokens / seed: sampling parameters sent with every request
            (``max_tokens`` / ``seed`` are left out when ``None``).
        timeout: seconds per HTTP request.
        max_retries: retries after the first attempt on transport errors (0 = no retry).
        backoff / backoff_max: the n-th retry waits ``min(backoff_max, backoff * 2**n)`` seconds
            (longer when the server sends ``Retry-After``, still capped by ``backoff_max``).
        tool_mode: ``native`` sends OpenAI tool schemas; ``text`` lists them in the system
            prompt and expects ``<tool_call>`` blocks (for servers without a tool parser).
        image_format / jpeg_quality: how images are encoded into data URLs.
        image_detail: the ``detail`` field of image parts (``low``/``high``/``auto``), or ``None``
            (vLLM, SGLang and ``transformers serve`` ignore it: docs/evaluation.md, "Server
            support of the request options").
        tool_choice: sent as ``tool_choice`` in native mode when set (e.g. ``"auto"``;
            ``transformers serve`` ignores it).
        extra_body: extra JSON fields merged into each request (e.g. vLLM's
            ``{"chat_template_kwargs": {...}}``); a server that does not know a field may refuse
            the request (``transformers serve``: HTTP 422 for ``top_k``), an infrastructure error.
    """

    base_url: str | None = None
    model: str | None = None
    api_key: str = "EMPTY"
    temperature: float = 0.0
    max_tokens: int | None = 1024
    seed: int | None = None
    timeout: float = 120.0
    max_retries: int = 3
    backoff: float = 1.0
    backoff_max: float = 30.0
    tool_mode: ToolMode = "native"
    image_format: ImageFormat = "png"
    jpeg_quality: int = 90
    image_detail: str | None = None
    tool_choice: str | None = None
    extra_body: Mapping[str, Any] | None = field(default=None, hash=False)

    def __post_init__(self) -> None:
        # Values may come from CLI flags as JSON (``model=7``, ``timeout=30``): coerce the types.
        for name in ("base_url", "model", "api_key", "image_detail", "tool_choice"):
            value = getattr(self, name)
            if value is not None and not isinstance(value, str):
                object.__setattr__(self, name, str(value))
        for name in ("temperature", "timeout", "backoff", "backoff_max"):
            object.__setattr__(self, name, float(getattr(self, name)))
        for name in ("max_tokens", "seed", "max_retries", "jpeg_quality"):
            value = getattr(self, name)
            if value is not None:
                object.__setattr__(self, name, int(value))
        if self.tool_mode not in ("native", "text"):
            raise ValueError(f"tool_mode must be 'native' or 'text', got {self.tool_mode!r}")
        if self.image_format not in ("png", "jpeg"):
            raise ValueError(f"image_format must be 'png' or 'jpeg', got {self.image_format!r}")
        if self.max_retries < 0 or self.timeout <= 0 or self.backoff < 0:
            raise ValueError("max_retries >= 0, timeout > 0 and backoff >= 0 required")

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None,
                 **overrides: Any) -> OpenAIAgentConfig:
        """Return a config from ``overrides`` (``None`` values ignored), then the environment.

        ``environ`` defaults to ``os.environ``; unknown override names raise ``TypeError``.
        """
        env = os.environ if environ is None else environ
        names = {f.name for f in fields(cls)}
        unknown = sorted(set(overrides) - names)
        if unknown:
            raise TypeError(f"unknown OpenAIAgent settings: {', '.join(unknown)}")
        values = {k: v for k, v in overrides.items() if v is not None}
        values.setdefault("base_url", env.get("OPENAI_BASE_URL") or None)
        values.setdefault("model", env.get("M3GYM_MODEL") or env.get("OPENAI_MODEL") or None)
        values.setdefault("api_key", env.get("OPENAI_API_KEY") or "EMPTY")
        return cls(**values)


def image_data_url(image: np.ndarray, fmt: ImageFormat = "png", jpeg_quality: int = 90) -> str:
    """Return an RGB (or gray) uint8 image as a ``data:image/...;base64,`` URL."""
    array = np.asarray(image)
    if array.ndim == 3 and array.shape[2] == 3:
        array = cv2.cvtColor(array, cv2.COLOR_RGB2BGR)
    elif array.ndim == 3 and array.shape[2] == 4:
        array = cv2.cvtColor(array, cv2.COLOR_RGBA2BGRA)
    if fmt == "jpeg":
        ok, buf = cv2.imencode(".jpg", array, [cv2.IMWRITE_JPEG_QUALITY, int(jpeg_quality)])
    else:
        ok, buf = cv2.imencode(".png", array)
    if not ok:
        raise ValueError(f"could not encode an image of shape {array.shape} as {fmt}")
    return f"data:image/{fmt};base64," + base64.b64encode(buf.tobytes()).decode("ascii")


def is_retryable(exc: Exception) -> bool:
    """Return whether an ``openai`` client error is a transient transport failure."""
    if isinstance(exc, openai.APIConnectionError):  # includes APITimeoutError
        return True
    if isinstance(exc, openai.APIStatusError):
        return exc.status_code in RETRYABLE_STATUS or exc.status_code >= 500
    return False


def backoff_delay(retry: int, base: float, cap: float, retry_after: float | None = None) -> float:
    """Return the wait before retry number ``retry`` (from 0): exponential, capped."""
    delay = min(cap, base * (2.0 ** retry))
    if retry_after is not None and retry_after > delay:
        delay = min(cap, retry_after)
    return delay


def retry_after_seconds(exc: Exception) -> float | None:
    """Return the ``Retry-After`` header of an HTTP error in seconds, when it has one."""
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if not headers:
        return None
    try:
        return float(headers.get("retry-after", ""))
    except ValueError:
        return None


def error_body(exc: Exception, limit: int = ERROR_BODY_CHARS) -> str:
    """Return the server's own reason of an HTTP error (its body), on one line, bounded.

    The openai SDK keeps the parsed body in ``exc.body`` (the ``error`` object of an OpenAI-style
    body, else the whole JSON body; ``message`` / ``detail`` are taken from it) and the raw
    response in ``exc.response``; ``""`` when there is neither (connection errors).
    """
    body = getattr(exc, "body", None)
    text = ""
    if isinstance(body, dict):
        for key in ("message", "detail", "error"):
            value = body.get(key)
            if isinstance(value, dict):
                value = value.get("message") or value.get("detail")
            if value:
                text = value if isinstance(value, str) else json.dumps(value, default=str)
                break
        else:
            text = json.dumps(body, default=str)
    elif isinstance(body, str):
        text = body
    elif body is not None:
        text = str(body)
    if not text:
        response = getattr(exc, "response", None)
        try:
            text = str(getattr(response, "text", "") or "")
        except Exception:  # a streamed response that was never read
            text = ""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


def model_failure_mode(status: int | None, reason: str) -> str | None:
    """Return the failure label of an error caused by the model's own output, else ``None``.

    ``context_overflow``: a 400/413/422/500 whose reason says the prompt is past the context
    (:data:`CONTEXT_OVERFLOW_PATTERNS`); ``tool_misexecution``: one whose reason says the
    server could not parse the model's tool call (:data:`TOOL_OUTPUT_PATTERNS`). Any other
    status or reason (a bare "Internal Server Error", a bad key, an unknown model) is not the
    model's doing.
    """
    if status not in MODEL_FAILURE_STATUS or not reason:
        return None
    if any(re.search(p, reason, re.IGNORECASE) for p in CONTEXT_OVERFLOW_PATTERNS):
        return "context_overflow"
    if any(re.search(p, reason, re.IGNORECASE) for p in TOOL_OUTPUT_PATTERNS):
        return "tool_misexecution"
    return None


def describe_error(exc: Exception) -> str:
    """Return a one-line description of a client error: status, type and the server's reason."""
    status = getattr(exc, "status_code", None)
    prefix = f"HTTP {status}: " if status is not None else ""
    message = " ".join(str(exc).split())[:300]
    reason = error_body(exc)
    if reason and reason not in message:
        message = f"{message} ({reason})" if message else reason
    return f"{prefix}{type(exc).__name__}: {message}"


def history_arguments(arguments: str) -> str:
    """Return tool-call ``arguments`` fit for the history: a JSON object's text, else ``"{}"``."""
    try:
        value = json.loads(arguments)
    except (TypeError, ValueError):
        return "{}"
    return arguments if isinstance(value, dict) else "{}"


def elide_images(messages: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """Return a deep copy of ``messages`` with data URLs replaced by a short placeholder."""
    out = copy.deepcopy([dict(m) for m in messages])
    for message in out:
        content = message.get("content")
        if isinstance(content, list):
            for part in content:
                url = part.get("image_url", {}).get("url", "") if isinstance(part, dict) else ""
                if url.startswith("data:"):
                    part["image_url"]["url"] = f"<{url[5:url.find(';')]} {len(url)} chars>"
    return out


class OpenAIAgent:
    """A chat model behind an OpenAI-compatible endpoint, acting through the env's tools.

    Args:
        config: full settings; keyword settings override its fields. Without ``config`` the
            settings come from the keywords, then the environment
            (:meth:`OpenAIAgentConfig.from_env`).
        client: an ``openai.OpenAI`` client to use instead of building one (tests, custom auth).
        sleep: the function used to wait between retries.
        **settings: any :class:`OpenAIAgentConfig` field.

    Attributes:
        messages: the conversation of the current episode (OpenAI message dicts).
        usage: per-episode counters: ``requests``, ``retries``, ``prompt_tokens``,
            ``completion_tokens``.
    """

    name = "openai"

    def __init__(self, config: OpenAIAgentConfig | None = None, *,
                 client: openai.OpenAI | None = None,
                 sleep: Callable[[float], None] = time.sleep, **settings: Any) -> None:
        if config is None:
            config = OpenAIAgentConfig.from_env(**settings)
        elif settings:
            config = replace(config, **{k: v for k, v in settings.items() if v is not None})
        self.config = config
        self.client = client if client is not None else openai.OpenAI(
            base_url=config.base_url, api_key=config.api_key, timeout=config.timeout,
            max_retries=0)
        self._sleep = sleep
        self._model = config.model
        self.messages: list[dict[str, Any]] = []
        self.usage: dict[str, int] = {}
        self._tools: list[dict[str, Any]] = []
        self._pending: list[tuple[str, str]] = []  # (tool_call_id, tool name) of the last turn
        self._seen_ids: set[str] = set()
        self._turn = 0
        self._budget = (15, 15)

    # ------------------------------------------------------------------ Agent protocol
    def reset(self, observation: dict[str, Any], info: dict[str, Any]) -> None:
        """Start a conversation: system prompt, then the question with the task's images."""
        self._tools = [dict(s) for s in info.get("tool_schemas") or ()]
        self._pending = []
        self._seen_ids = set()
        self._turn = 0
        self.usage = {"requests": 0, "retries": 0, "prompt_tokens": 0, "completion_tokens": 0}
        self._budget = (int(info.get("max_tool_calls", 15)), int(info.get("max_rounds", 15)))
        prompt = system_prompt(*self._budget, self.config.tool_mode, self._tools)
        parts: list[dict[str, Any]] = [{"type": "text", "text": str(observation.get("text", ""))}]
        parts += self._image_parts(observation, {})
        self.messages = [{"role": "system", "content": prompt},
                         {"role": "user", "content": parts}]

    def act(self, observation: dict[str, Any], info: dict[str, Any]) -> Any:
        """Send the conversation (with the last step's results) and return the model's action."""
        if not self.messages:
            raise RuntimeError("OpenAIAgent.act() called before reset()")
        if self._turn > 0:
            self._add_feedback(observation, info)
        self._turn += 1
        message = self._complete()
        assistant, action = self._assistant_turn(message)
        self.messages.append(assistant)
        return action

    # ------------------------------------------------------------------ helpers
    def transcript(self) -> list[dict[str, Any]]:
        """Return the conversation with image data elided (for logs)."""
        return elide_images(self.messages)

    @property
    def model(self) -> str:
        """The model name requests use (resolved from ``GET /models`` when not configured)."""
        if self._model is None:
            listing = self._with_retries("list models", self.client.models.list)
            ids = [m.id for m in getattr(listing, "data", None) or []]
            if not ids:
                raise InfrastructureError("the endpoint lists no models; set a model name")
            self._model = str(ids[0])
        return self._model

    def _image_parts(self, observation: Mapping[str, Any],
                     by_output: Mapping[int, Mapping[str, Any]]) -> list[dict[str, Any]]:
        parts: list[dict[str, Any]] = []
        images = observation.get("images") or ()
        indices = observation.get("image_indices") or tuple(range(len(images)))
        for index, image in zip(indices, images):
            url = image_data_url(image, self.config.image_format, self.config.jpeg_quality)
            image_url: dict[str, Any] = {"url": url}
            if self.config.image_detail:
                image_url["detail"] = self.config.image_detail
            parts.append({"type": "text", "text": image_caption(int(index),
                                                                by_output.get(int(index)))})
            parts.append({"type": "image_url", "image_url": image_url})
        return parts

    def _add_feedback(self, observation: Mapping[str, Any], info: Mapping[str, Any]) -> None:
        records = [r for r in info.get("calls") or () if isinstance(r, Mapping)]
        errors = [str(e) for e in info.get("parse_errors") or ()]
        by_output = {int(r["output_index"]): r for r in records
                     if r.get("output_index") is not None}
        texts: list[str] = []
        cells = {str(c.get("call_id")): c for c in info.get("code_cells") or ()
                 if isinstance(c, Mapping)}
        if cells:  # code mode: a run_python call is answered with its cell's report
            inner = {i for c in cells.values() for i in code_cell_call_ids(c)}
            records = [r for r in records if r.get("call_id") not in inner]
        if self._pending:
            matched = {**match_records(self._pending, records),
                       **{i: {"ok": bool(cells[i].get("ok")), "result_text": cells[i].get("text"),
                              "error": cells[i].get("error")}
                          for i, _ in self._pending if i in cells}}
            for j, (call_id, _) in enumerate(self._pending):
                record = matched.get(call_id)
                if record is not None:
                    content = tool_message_text(record)
                else:
                    mine = [e for e in errors if f"tool_calls[{j}]" in e]
                    content = not_run_text(mine or errors)
                self.messages.append({"role": "tool", "tool_call_id": call_id,
                                      "content": content})
            used = {id(r) for r in matched.values()}
            texts += [f"[{r.get('call_id')}] {r.get('name')}: {tool_message_text(r)}"
                      for r in records if id(r) not in used]
            if errors:
                texts.append(parse_error_text(errors))
        else:
            text = str(observation.get("text") or "").strip()
            texts.append(text or parse_error_text(errors or ["no tool call or answer found"]))
        if "calls_used" in info:
            texts.append(f"(budget used: {info['calls_used']} of {self._budget[0]} tool calls, "
                         f"{info.get('rounds', self._turn)} of {self._budget[1]} turns)")
        self._pending = []
        image_parts = self._image_parts(observation, by_output)
        if not texts and not image_parts:
            return
        text = "\n".join(texts)
        if not image_parts:
            self.messages.append({"role": "user", "content": text})
            return
        parts = ([{"type": "text", "text": text}] if text else []) + image_parts
        self.messages.append({"role": "user", "content": parts})

    def _assistant_turn(self, message: Any) -> tuple[dict[str, Any], Any]:
        content = getattr(message, "content", None)
        content = content if isinstance(content, str) else ""
        tool_calls: list[dict[str, Any]] = []
        for j, tc in enumerate(getattr(message, "tool_calls", None) or ()):
            fn = getattr(tc, "function", None)
            name = str(getattr(fn, "name", "") or "")
            arguments = getattr(fn, "arguments", "")
            if not isinstance(arguments, str):
                arguments = "" if arguments is None else str(arguments)
            call_id = self._unique_id(getattr(tc, "id", None), j)
            tool_calls.append({"id": call_id, "type": "function",
                               "function": {"name": name, "arguments": arguments}})
        self._pending = [(tc["id"], tc["function"]["name"]) for tc in tool_calls]
        if not tool_calls:
            return {"role": "assistant", "content": content}, content
        action = {"role": "assistant", "content": content or None, "tool_calls": tool_calls}
        assistant = copy.deepcopy(action)  # the env gets the arguments as written, history JSON
        for tc in assistant["tool_calls"]:
            tc["function"]["arguments"] = history_arguments(tc["function"]["arguments"])
        return assistant, action

    def _unique_id(self, call_id: Any, position: int) -> str:
        base = str(call_id) if isinstance(call_id, (str, int)) and str(call_id) else \
            f"call_{self._turn}_{position}"
        unique, n = base, 1
        while unique in self._seen_ids:
            n += 1
            unique = f"{base}_{n}"
        self._seen_ids.add(unique)
        return unique

    def _request(self) -> dict[str, Any]:
        cfg = self.config
        request: dict[str, Any] = {"model": self.model, "messages": self.messages,
                                   "temperature": cfg.temperature}
        if cfg.max_tokens is not None:
            request["max_tokens"] = cfg.max_tokens
        if cfg.seed is not None:
            request["seed"] = cfg.seed
        if cfg.tool_mode == "native" and self._tools:
            request["tools"] = self._tools
            if cfg.tool_choice is not None:
                request["tool_choice"] = cfg.tool_choice
        if cfg.extra_body:
            request["extra_body"] = dict(cfg.extra_body)
        return request

    def _complete(self) -> Any:
        request = self._request()
        try:
            response = self._with_retries("chat completion",
                                          lambda: self.client.chat.completions.create(**request))
        except InfrastructureError as exc:
            if (exc.status_code or 0) >= 500 and self._answers_a_short_probe(request):
                raise ModelOutputError(
                    f"chat completion refused (tool_misexecution): {exc}; the same request with "
                    f"max_tokens={PROBE_MAX_TOKENS} succeeds, so the server failed on the model's "
                    "own answer (its tool-call parser)", failure_mode="tool_misexecution",
                    status_code=exc.status_code, reason=str(exc)) from exc
            raise
        usage = getattr(response, "usage", None)
        if usage is not None:
            self.usage["prompt_tokens"] += int(getattr(usage, "prompt_tokens", 0) or 0)
            self.usage["completion_tokens"] += int(getattr(usage, "completion_tokens", 0) or 0)
        choices = getattr(response, "choices", None)
        if not choices or getattr(choices[0], "message", None) is None:
            raise InfrastructureError(
                f"malformed chat completion without choices: {str(response)[:300]}",
                attempts=self.usage.get("requests", 0))
        return choices[0].message

    def _answers_a_short_probe(self, request: Mapping[str, Any]) -> bool:
        """Return whether the endpoint answers ``request`` cut to :data:`PROBE_MAX_TOKENS`.

        A server that answers a 5xx on every retry of a turn (or drops the connection after one),
        yet answers the same conversation when the answer is cut short, is up and failed on the
        model's answer itself (``transformers serve`` answers a tool call without ``arguments``
        with a bare 500): the model's failure. Any HTTP answer below 500 (a 400 for a cut-off call
        included) shows the server up. One request, and a second only when the first could not
        connect: uvicorn closes a kept-alive connection after a 500, and the client may reuse it
        once. A server that is down or overloaded fails the probe too.
        """
        for attempt in range(2):
            self.usage["requests"] = self.usage.get("requests", 0) + 1
            try:
                self.client.chat.completions.create(**{**request, "max_tokens": PROBE_MAX_TOKENS})
                return True
            except openai.APIStatusError as exc:
                return exc.status_code < 500
            except openai.APIConnectionError as exc:  # a timeout is one too, and is not retried
                if attempt or isinstance(exc, openai.APITimeoutError):
                    return False
            except openai.OpenAIError:
                return False
        return False

    def _with_retries(self, what: str, call: Callable[[], Any]) -> Any:
        cfg = self.config
        attempts = 0
        last_answer: openai.OpenAIError | None = None  # the last error the server answered
        while True:
            attempts += 1
            self.usage["requests"] = self.usage.get("requests", 0) + 1
            try:
                return call()
            except openai.OpenAIError as exc:
                status = getattr(exc, "status_code", None)
                last_answer = exc if status is not None else last_answer
                reason = error_body(exc)
                mode = model_failure_mode(status, reason)
                if mode is not None:  # the model's own output: retrying gets the same answer
                    raise ModelOutputError(
                        f"{what} refused ({mode}): {describe_error(exc)}", failure_mode=mode,
                        status_code=status, reason=reason) from exc
                if not is_retryable(exc):
                    raise InfrastructureError(f"{what} failed: {describe_error(exc)}",
                                              status_code=status, attempts=attempts) from exc
                if attempts > cfg.max_retries:
                    # uvicorn drops a kept-alive connection after a 500, so the next attempt can
                    # fail to connect: the server's last answer is still what it said
                    answered = "" if last_answer is None or last_answer is exc else \
                        f"; its last answer: {describe_error(last_answer)}"
                    raise InfrastructureError(
                        f"{what} failed after {attempts} attempts: {describe_error(exc)}"
                        f"{answered}", status_code=getattr(last_answer, "status_code", None),
                        attempts=attempts) from exc
                self.usage["retries"] = self.usage.get("retries", 0) + 1
                self._sleep(backoff_delay(attempts - 1, cfg.backoff, cfg.backoff_max,
                                          retry_after_seconds(exc)))


def match_records(pending: Sequence[tuple[str, str]],
                  records: Sequence[Mapping[str, Any]]) -> dict[str, Mapping[str, Any]]:
    """Return the executed call record of each pending tool call id.

    Records are matched by ``call_id`` first; records the env renamed are matched in order to the
    remaining calls of the same requested tool name. Calls the env could not parse have no record.
    """
    matched: dict[str, Mapping[str, Any]] = {}
    ids = {call_id for call_id, _ in pending}
    rest = []
    for record in records:
        call_id = str(record.get("call_id"))
        if call_id in ids and call_id not in matched:
            matched[call_id] = record
        else:
            rest.append(record)
    for record in rest:
        for call_id, name in pending:
            if call_id not in matched and name == record.get("requested_name"):
                matched[call_id] = record
                break
    return matched
