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
