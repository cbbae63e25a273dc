"""OpenAI's Batch API for an OpenAI-compatible model: a JSONL file of chat completion requests
uploaded, a batch created from it, polled, and its output and error files read."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from heart.models._batch import BatchResult, BatchState, BatchStatus
from heart.models._batch_wire import result_lines, since_seconds, unreadable
from heart.models._errors import ModelCallError, status_error
from heart.models._protocol import ChatRequest
from heart.models._remote import translated
from heart.types import canonical_json

if TYPE_CHECKING:
    from heart.models.openai_compat import OpenAICompatibleModel

ENDPOINT = "/v1/chat/completions"
LABEL = "heart_batch"
STATES: dict[str, BatchState] = {
    "validating": "open",
    "in_progress": "open",
    "finalizing": "open",
    "cancelling": "open",
    "completed": "ended",
    "expired": "expired",
    "cancelled": "cancelled",
    "failed": "failed",
}
UNANSWERED = frozenset({"batch_expired", "batch_cancelled"})


class OpenAIBatches:
    """The BatchAPI of an OpenAI-compatible model, over the model's own client."""

    def __init__(self, model: OpenAICompatibleModel) -> None:
        self.model = model

    @translated
    async def submit(self, requests: Sequence[tuple[str, ChatRequest]], label: str) -> str:
        client = self.model._connect()
        lines = [
            canonical_json(
                {
                    "custom_id": custom_id,
                    "method": "POST",
                    "url": ENDPOINT,
                    "body": self.model.arguments(request),
                }
            )
            for custom_id, request in requests
        ]
        data = "".join(line + "\n" for line in lines).encode("utf-8")
        upload = await client.files.create(
            file=(f"{label}.jsonl", data, "application/jsonl"), purpose="batch"
        )
        batch = await client.batches.create(
            input_file_id=upload.id,
            endpoint=ENDPOINT,
            completion_window="24h",
            metadata={LABEL: label},
        )
        return str(batch.id)

    @translated
    async def find(
        self, label: str, total: int, since: str, known: frozenset[str] = frozenset()
    ) -> str | None:
        """The newest batch under ``label`` with ``total`` requests (or none counted yet, as
        while it is validated) created at or after ``since``, and not ``known``."""
        client = self.model._connect()
        floor = since_seconds(since)
        async for batch in client.batches.list(limit=100):
            if batch.created_at < floor:
                break  # newest first: the rest are older
            counted = batch.request_counts.total if batch.request_counts else 0
            mine = (batch.metadata or {}).get(LABEL) == label and counted in (total, 0)
            if mine and str(batch.id) not in known:
                return str(batch.id)
        return None

    @translated
    async def status(self, remote_id: str) -> BatchStatus:
        client = self.model._connect()
        return _status_of(await client.batches.retrieve(remote_id))

    @translated
    async def results(self, remote_id: str) -> list[BatchResult]:
        client = self.model._connect()
        batch = await client.batches.retrieve(remote_id)
        results: list[BatchResult] = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                content = await client.files.content(file_id)
                results += _read(content.content, remote_id)
        return results

    @translated
    async def cancel(self, remote_id: str) -> BatchStatus:
        client = self.model._connect()
        try:
            return _status_of(await client.batches.cancel(remote_id))
        except Exception as exc:
            if getattr(exc, "status_code", None) != 409:  # 409: it has already finished
                raise
        return _status_of(await client.batches.retrieve(remote_id))


def _status_of(batch: Any) -> BatchStatus:
    counts = batch.request_counts
    state = STATES.get(batch.status, "open")
    detail = ""
    if state == "failed" and batch.errors is not None and batch.errors.data:
        detail = "; ".join(
            f"line {e.line}: {e.message}" if e.line is not None else str(e.message)
            for e in batch.errors.data
        )
    return BatchStatus(
        remote_id=str(batch.id),
        state=state,
        total=counts.total if counts else 0,
        succeeded=counts.completed if counts else 0,
        errored=counts.failed if counts else 0,
        detail=detail,
    )


def _read(data: bytes, remote_id: str) -> list[BatchResult]:
    """The results in an output or error file; requests the batch never ran are left out."""
    from openai.types.chat import ChatCompletion

    from heart.models.openai_compat import completion_answer

    results: list[BatchResult] = []
    for item in result_lines(data):
        if isinstance(item, BatchResult):
            results.append(item)
            continue
        custom_id = item["custom_id"]
        error, response = item.get("error"), item.get("response")
        if isinstance(error, dict) and error.get("code") in UNANSWERED:
            continue
        try:
            if not isinstance(response, dict):
                raise ValueError(f"no response ({error!r})")
            status, body = int(response["status_code"]), response.get("body")
            if status != 200:
                results.append(BatchResult(custom_id, error=status_error(status, _message(body))))
                continue
            completion = ChatCompletion.model_validate(body)
            answer = completion_answer(completion, batch_id=remote_id)
        except ModelCallError as exc:
            results.append(BatchResult(custom_id, error=exc))
        except (KeyError, TypeError, ValueError) as exc:  # pydantic's ValidationError included
            results.append(unreadable(custom_id, exc))
        else:
            results.append(BatchResult(custom_id, response=answer))
    return results


def _message(body: Any) -> str:
    error = body.get("error") if isinstance(body, dict) else None
    if isinstance(error, dict) and error.get("message"):
        return str(error["message"])
    return "the batch's request failed"
