"""Retries: backoff with jitter, Retry-After honoured, client errors never retried."""

from __future__ import annotations

import asyncio
import random
import time

import pytest

from heart.engine import EndpointLimits, RetryPolicy, TokenBucket, call_with_retries
from heart.models._errors import ModelCallError, redact, retry_after_seconds


def _script(*outcomes: ModelCallError | str):  # type: ignore[no-untyped-def]
    """An attempt function that plays ``outcomes`` in order, counting its calls."""
    calls = {"n": 0}

    async def attempt() -> str:
        outcome = outcomes[min(calls["n"], len(outcomes) - 1)]
        calls["n"] += 1
        if isinstance(outcome, ModelCallError):
            raise outcome
        return outcome

    return attempt, calls


def _run(attempt, policy: RetryPolicy) -> tuple[object, list[float]]:  # type: ignore[no-untyped-def]
    slept: list[float] = []

    async def sleep(seconds: float) -> None:
        slept.append(seconds)

    result = asyncio.run(call_with_retries(attempt, policy, rng=random.Random(1), sleep=sleep))
    return result, slept


def test_retry_after_is_honoured_then_success() -> None:
    attempt, calls = _script(
        ModelCallError("429", retryable=True, retry_after=1.5, status=429), "fine"
    )
    (value, tries), slept = _run(attempt, RetryPolicy(max_retries=3))
    assert (value, tries, calls["n"]) == ("fine", 2, 2)
    assert slept == [1.5]


def test_backoff_grows_exponentially_with_full_jitter() -> None:
    error = ModelCallError("503", retryable=True, status=503)
    attempt, _ = _script(error, error, error, error, "ok")
    (_, tries), slept = _run(attempt, RetryPolicy(max_retries=5, base_s=1.0, cap_s=60))
    assert tries == 5 and len(slept) == 4
    for n, seconds in enumerate(slept):
        assert 0 <= seconds <= 2**n  # full jitter within the exponential ceiling
    rng = random.Random(1)
    assert slept == [rng.uniform(0, 2**n) for n in range(4)]


def test_client_errors_are_never_retried() -> None:
    attempt, calls = _script(ModelCallError("HTTP 400: bad request", retryable=False, status=400))
    with pytest.raises(ModelCallError, match="400") as err:
        _run(attempt, RetryPolicy(max_retries=5))
    assert calls["n"] == 1 and err.value.tries == 1


def test_retries_run_out_with_the_reason_and_count() -> None:
    attempt, calls = _script(ModelCallError("HTTP 500: boom", retryable=True, status=500))
    with pytest.raises(ModelCallError, match=r"HTTP 500: boom \(after 3 tries\)") as err:
        _run(attempt, RetryPolicy(max_retries=2))
    assert calls["n"] == 3 and err.value.tries == 3


def test_a_hanging_call_times_out_and_is_retried() -> None:
    state = {"n": 0}

    async def attempt() -> str:
        state["n"] += 1
        if state["n"] == 1:
            await asyncio.sleep(30)
        return "late but fine"

    (value, tries), _ = _run(attempt, RetryPolicy(max_retries=2, timeout_s=0.05))
    assert (value, tries) == ("late but fine", 2)


def test_retry_after_headers() -> None:
    assert retry_after_seconds({"retry-after": "2"}) == 2.0
    assert retry_after_seconds({"retry-after-ms": "300", "retry-after": "1"}) == 0.3
    assert retry_after_seconds({"retry-after": "Wed, 21 Oct 2015 07:28:00 GMT"}) is None
    assert retry_after_seconds(None) is None


def test_redact_hides_keys() -> None:
    assert redact("bad key sk-abc123 given", ["sk-abc123"]) == "bad key [redacted] given"


def test_token_bucket_paces_requests_per_minute() -> None:
    async def main() -> float:
        bucket = TokenBucket(capacity=600)  # 10 per second
        start = time.monotonic()
        for _ in range(600 + 5):  # the first 600 pass at once, 5 more need half a second
            await bucket.take(1)
        return time.monotonic() - start

    elapsed = asyncio.run(main())
    assert 0.4 <= elapsed < 1.5


def test_provider_limits_cap_concurrency() -> None:
    async def main() -> int:
        limits = EndpointLimits(concurrency=3)
        running = peak = 0

        async def one() -> None:
            nonlocal running, peak
            async with limits.slots:
                running += 1
                peak = max(peak, running)
                await asyncio.sleep(0.01)
                running -= 1

        await asyncio.gather(*(one() for _ in range(20)))
        return peak

    assert asyncio.run(main()) == 3
