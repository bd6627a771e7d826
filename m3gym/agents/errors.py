"""Errors agents raise when the failure is not the agent's answer but the machinery around it."""

from __future__ import annotations


class InfrastructureError(RuntimeError):
    """A model endpoint could not be used, so the episode has no valid outcome.

    Causes: connection refused, timeouts, 429/5xx after retries, authentication or configuration
    errors, or a malformed response. The eval harness catches it to mark the episode as an
    infrastructure failure, which is reported separately and never scored as a wrong answer.
    Agents raise it instead of returning a made-up action when the endpoint fails.

    Attributes:
        status_code: the last HTTP status the endpoint returned, or ``None`` when no response
            came back (connection or timeout errors).
        attempts: how many requests were made before giving up.
    """

    def __init__(self, message: str, *, status_code: int | None = None, attempts: int = 0) -> None:
        super().__init__(message)
        self.status_code = status_code
        self.attempts = attempts


class ModelOutputError(RuntimeError):
    """The endpoint refused a request because of the model's own output: the model's failure.

    An OpenAI-compatible server that parses tool calls itself answers an error (``transformers
    serve``: HTTP 400 "could not parse region as JSON" for broken or cut-off tool JSON, 500 for a
    call without ``arguments``) where a lenient server would pass the text on; a conversation
    grown past the model's context is refused the same way (vLLM: "maximum context length").
    Rerunning cannot help (the same prompt fails the same way at temperature 0), so the eval
    harness scores the episode as a failed one with :attr:`failure_mode` instead of recording an
    infrastructure error (:func:`m3gym.eval.episode_loop.record_episode`).

    Attributes:
        failure_mode: the failure-taxonomy label: ``tool_misexecution`` or ``context_overflow``
            (:data:`m3gym.scoring.taxonomy.FAILURE_LABELS`).
        status_code: the HTTP status the endpoint answered.
        reason: the server's own reason (its error body, bounded in length).
    """

    def __init__(self, message: str, *, failure_mode: str, status_code: int | None = None,
                 reason: str = "") -> None:
        super().__init__(message)
        self.failure_mode = failure_mode
        self.status_code = status_code
        self.reason = reason
