"""What a failed model call means for the engine: retry (when, after how long) or give up."""

from __future__ import annotations

from collections.abc import Iterable


class ModelCallError(Exception):
    """A call that did not produce an answer.

    ``retryable`` says whether trying again can help (rate limits, 5xx, dropped connections,
    timeouts, garbled bodies); ``retry_after`` is the server's requested wait in seconds.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool,
        retry_after: float | None = None,
        status: int | None = None,
    ) -> None:
        super().__init__(message)
        self.retryable = retryable
        self.retry_after = retry_after
        self.status = status
        self.tries = 1


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
