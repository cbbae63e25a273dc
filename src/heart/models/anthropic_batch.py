"""Anthropic's Message Batches for an Anthropic model: requests sent in one batch, polled, and
their results read line by line."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from heart.models._batch import BatchResult, BatchState, BatchStatus
from heart.models._batch_wire import result_lines, since_seconds, unreadable
from heart.models._errors import status_error
from heart.models._protocol import ChatRequest
from heart.models._remote import translated

if TYPE_CHECKING:
    from heart.models.anthropic import AnthropicModel

ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status each of Anthropic's error types is sent with."""


class AnthropicBatches:
    """The BatchAPI of an Anthropic model, over the model's own client. Anthropic keeps no
    metadata on a batch, so ``find`` goes by creation time and size."""

    def __init__(self, model: AnthropicModel) -> None:
        self.model = model

    @translated
    async def submit(self, requests: Sequence[tuple[str, ChatRequest]], label: str) -> str:
        client = self.model._connect()
        batch = await client.messages.batches.create(
            requests=[
                {"custom_id": custom_id, "params": self.model.arguments(request)}
                for custom_id, request in requests
            ]
        )
        return str(batch.id)

    @translated
    async def find(
        self, label: str, total: int, since: str, known: frozenset[str] = frozenset()
    ) -> str | None:
        """The one batch of ``total`` requests created at or after ``since`` and not
        ``known``; None when there is none, or several (then which is ours cannot be told)."""
        client = self.model._connect()
        floor = since_seconds(since)
        found: list[str] = []
        async for batch in client.messages.batches.list(limit=100):
            if batch.created_at.timestamp() < floor:
                break  # newest first: the rest are older
            if _size(batch.request_counts) == total and str(batch.id) not in known:
                found.append(str(batch.id))
        return found[0] if len(found) == 1 else None

    @translated
    async def status(self, remote_id: str) -> BatchStatus:
        client = self.model._connect()
        return _status_of(await client.messages.batches.retrieve(remote_id))

    @translated
    async def results(self, remote_id: str) -> list[BatchResult]:
        client = self.model._connect()
        # the SDK's decoder stops at the first line it cannot parse: read the body instead
        decoder = await client.messages.batches.results(remote_id)
        return _read(await decoder.http_response.aread(), remote_id)

    @translated
    async def cancel(self, remote_id: str) -> BatchStatus:
        client = self.model._connect()
        return _status_of(await client.messages.batches.cancel(remote_id))


def _size(counts: Any) -> int:
    return int(
        counts.processing + counts.succeeded + counts.errored + counts.canceled + counts.expired
    )


def _status_of(batch: Any) -> BatchStatus:
    counts = batch.request_counts
    total = _size(counts)
    state: BatchState = "open"
    if batch.processing_status == "ended":
        if batch.cancel_initiated_at is not None:
            state = "cancelled"
        elif total and counts.expired == total:
            state = "expired"
        else:
            state = "ended"
    return BatchStatus(
        remote_id=str(batch.id),
        state=state,
        total=total,
        succeeded=counts.succeeded,
        errored=counts.errored,
    )


def _read(data: bytes, remote_id: str) -> list[BatchResult]:
    """The results in a results file; cancelled and expired requests are left out."""
    from anthropic.types import Message

    from heart.models.anthropic import message_answer

    results: list[BatchResult] = []
    for item in result_lines(data):
        if isinstance(item, BatchResult):
            results.append(item)
            continue
        custom_id, result = item["custom_id"], item.get("result")
        kind = result.get("type") if isinstance(result, dict) else None
        if kind in ("canceled", "expired"):
            continue
        try:
            if not isinstance(result, dict) or kind not in ("succeeded", "errored"):
                raise ValueError(f"a result of type {kind!r}")
            if kind == "errored":
                error = (result.get("error") or {}).get("error") or {}
                status = ERROR_STATUS.get(str(error.get("type")), 500)
                message = str(error.get("message") or error.get("type") or "errored")
                results.append(BatchResult(custom_id, error=status_error(status, message)))
                continue
            answer = message_answer(Message.model_validate(result["message"]), batch_id=remote_id)
        except (KeyError, TypeError, ValueError, AttributeError) as exc:
            results.append(unreadable(custom_id, exc))
        else:
            results.append(BatchResult(custom_id, response=answer))
    return results
