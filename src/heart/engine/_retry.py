"""Retries: exponential backoff with full jitter, honouring the server's Retry-After."""

from __future__ import annotations

import asyncio
import random
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TypeVar

from heart.models._errors import Cause, ModelCallError

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    """How often and how patiently to retry one call."""

    max_retries: int = 5
    base_s: float = 0.5
    cap_s: float = 60.0
    timeout_s: float = 120.0

    def delay(self, attempt: int, error: ModelCallError, rng: random.Random) -> float:
        """Seconds to wait before retry number ``attempt`` (1-based)."""
        if error.retry_after is not None:
            return min(error.retry_after, self.cap_s)
        return rng.uniform(0, min(self.cap_s, self.base_s * 2 ** (attempt - 1)))


async def call_with_retries(
    attempt: Callable[[], Awaitable[T]],
    policy: RetryPolicy,
    *,
    rng: random.Random | None = None,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
) -> tuple[T, int]:
    """Run ``attempt`` until it succeeds, fails for good, or retries run out.

    Each try is bounded by ``policy.timeout_s``; a timeout counts as retryable. Returns the result
    and the number of tries; raises the last ``ModelCallError`` otherwise.
    """
    rng = rng or random.Random()
    tries = 0
    while True:
        tries += 1
        try:
            async with asyncio.timeout(policy.timeout_s):  # no extra task per call, unlike wait_for
                result = await attempt()
            return result, tries
        except TimeoutError:
            error = timed_out(policy)
        except ModelCallError as exc:
            error = exc
        if not error.retryable or tries > policy.max_retries:
            raise given_up(error, tries)
        await sleep(policy.delay(tries, error, rng))


def timed_out(policy: RetryPolicy) -> ModelCallError:
    """The failure of a try that took longer than ``policy.timeout_s`` (worth retrying)."""
    return ModelCallError(
        f"no answer within {policy.timeout_s:g} s", retryable=True, cause=Cause.TIMEOUT
    )


def given_up(error: ModelCallError, tries: int) -> ModelCallError:
    """``error`` as the last of ``tries`` tries, its message saying how many there were."""
    error.tries = tries
    if tries > 1:
        error.args = (f"{error.args[0]} (after {tries} tries)",)
    return error
