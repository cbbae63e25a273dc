"""What a failed model call means for the engine: retry (when, after how long) or give up."""

from __future__ import annotations

from collections.abc import Iterable
from enum import StrEnum


class Cause(StrEnum):
    """Why a call failed for good, as a user fixes it: each cause has one kind of fix."""

    AUTH = "auth"
    NOT_FOUND = "not found"
    RATE_LIMIT = "rate limit"
    TIMEOUT = "timeout"
    CONNECTION = "connection"
    SERVER = "server error"
    BAD_REQUEST = "bad request"
    BAD_OUTPUT = "bad output"
    OTHER = "other"


FIXES = {
    Cause.AUTH: "check the API key in the variable the model's api_key_env names (and that the "
    "key may use this model)",
    Cause.NOT_FOUND: "check the model's base_url and model name against what the server serves",
    Cause.RATE_LIMIT: "lower engine concurrency or requests_per_minute for this endpoint, or "
    "wait for the quota to refill",
    Cause.TIMEOUT: "raise engine timeout_s for this endpoint, or check that the server keeps up",
    Cause.CONNECTION: "check the model's base_url and that the server is up and reachable",
    Cause.SERVER: "the server failed or answered garbage; try again later",
    Cause.BAD_REQUEST: "the server refused the request as sent: check the model's "
    "structured_output, max_tokens and context window against what the server supports",
    Cause.BAD_OUTPUT: "the answers did not pass the stage's checks; raise the stage's reasks, "
    "set structured_output to what the server supports, or use a stronger model",
    Cause.OTHER: "see the reason",
}
"""What to do about each cause, in one clause."""


def cause_of_status(status: int) -> Cause:
    """The cause an HTTP error status stands for."""
    if status in (401, 402, 403):
        return Cause.AUTH
    if status == 404:
        return Cause.NOT_FOUND
    if status == 429:
        return Cause.RATE_LIMIT
    if status in (408, 504):
        return Cause.TIMEOUT
    if status >= 500:
        return Cause.SERVER
    if status in (400, 413, 422):
        return Cause.BAD_REQUEST
    return Cause.OTHER


class ModelCallError(Exception):
    """A call that did not produce an answer.

    ``retryable`` says whether trying again can help (rate limits, 5xx, dropped connections,
    timeouts, garbled bodies); ``retry_after`` is the server's requested wait in seconds;
    ``cause`` is why it failed (by default, what ``status`` stands for, else other).
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        status: int | None = None,
        cause: Cause | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.tries = 1
        if cause is None:
            cause = cause_of_status(status) if status is not None else Cause.OTHER
        self.cause = cause


RETRYABLE_STATUS = frozenset({408, 409, 429})


def status_is_retryable(status: int) -> bool:
    """Rate limits, request timeouts, conflicts and server errors are worth another try."""
    return status in RETRYABLE_STATUS or status >= 500


def retry_after_seconds(headers: object) -> float | None:
    """The wait a server asked for, from ``retry-after-ms`` or ``retry-after`` (seconds)."""
    get = getattr(headers, "get", None)
    if get is None:
        return None
    for name, scale in (("retry-after-ms", 1000.0), ("retry-after", 1.0)):
        value = get(name)
        if value is None:
            continue
        try:
            seconds = float(value) / scale
        except ValueError:
            continue  # an HTTP date: fall back to our own backoff
        if seconds >= 0:
            return seconds
    return None


def redact(text: str, secrets: Iterable[str]) -> str:
    """``text`` with every secret (an API key) replaced, for messages that get stored or shown."""
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return text


def status_error(status: int, message: str, *, retry_after: float | None = None) -> ModelCallError:
    """An answer with HTTP error ``status`` (live, or a batch's line) as a ModelCallError."""
    return ModelCallError(
        f"HTTP {status}: {message}",
        retryable=status_is_retryable(status),
        retry_after=retry_after,
        status=status,
    )


def translate_error(exc: Exception, secrets: Iterable[str]) -> ModelCallError:
    """An SDK or transport exception as a ModelCallError the engine knows how to treat, with
    every secret redacted from its message."""
    status = getattr(exc, "status_code", None)
    response = getattr(exc, "response", None)
    message = redact(f"{type(exc).__name__}: {exc}", secrets)
    if isinstance(status, int):
        return status_error(
            status, message, retry_after=retry_after_seconds(getattr(response, "headers", None))
        )
    cause = _transient_cause(exc)
    if cause is not None:
        return ModelCallError(message, retryable=True, cause=cause)
    return ModelCallError(message, retryable=False)


TIMEOUT_NAMES = frozenset({"APITimeoutError", "TimeoutException"})
CONNECTION_NAMES = frozenset({"APIConnectionError", "TransportError"})
GARBLED_NAMES = frozenset({"APIResponseValidationError"})


def _transient_cause(exc: Exception) -> Cause | None:
    """Why a transient failure happened: a timeout, a refused, dropped or cut-off connection,
    or a garbled body (the server's fault); None when the failure is not transient. SDK and
    transport classes are matched by name, so no SDK needs importing here."""
    names = {cls.__name__ for cls in type(exc).__mro__}
    if isinstance(exc, TimeoutError) or names & TIMEOUT_NAMES:
        return Cause.TIMEOUT
    if isinstance(exc, ConnectionError) or names & CONNECTION_NAMES:
        return Cause.CONNECTION
    if isinstance(exc, ValueError) or names & GARBLED_NAMES:  # JSONDecodeError included
        return Cause.SERVER
    return None
