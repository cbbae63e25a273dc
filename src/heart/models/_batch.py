"""Provider batch APIs behind one protocol: submit many requests at once, poll, read results.

A batch is billed at the provider's batch price and answered within a day. The engine records
each batch in the store as it is submitted, so a run stopped at any moment polls the batches it
already paid for instead of sending their calls again.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal, Protocol

from heart.models._errors import ModelCallError
from heart.models._protocol import ChatRequest, ChatResponse

BatchState = Literal["open", "ended", "expired", "cancelled", "failed"]
"""Where a batch stands: still running (``open``), or finished one of four ways. An ended,
expired or cancelled batch has results for some or all of its requests; the rest go back to
the queue. A ``failed`` batch was refused as a whole (its ``detail`` says why)."""


@dataclass(frozen=True)
class BatchStatus:
    """A batch as its provider reports it: its state and how many requests are answered."""

    remote_id: str
    state: BatchState
    total: int
    succeeded: int = 0
    errored: int = 0
    detail: str = ""

    @property
    def finished(self) -> bool:
        return self.state != "open"


@dataclass(frozen=True)
class BatchResult:
    """One request's outcome: the answer, or why it failed (``error.retryable`` says whether
    asking again can help). Requests a finished batch has no result for are not listed."""

    custom_id: str
    response: ChatResponse | None = None
    error: ModelCallError | None = None


class BatchAPI(Protocol):
    """A provider's batch API for one model at one endpoint.

    ``custom_id`` values are the call keys (64 hex characters), which both providers accept.
    ``label`` is heart's own id for the batch; it is sent along where the provider keeps
    metadata, so ``find`` can adopt a batch whose submission was cut off before its id was
    recorded.
    """

    async def submit(self, requests: Sequence[tuple[str, ChatRequest]], label: str) -> str:
        """Create a batch of ``requests`` ((custom_id, request) pairs); returns its remote id."""
        ...

    async def find(
        self, label: str, total: int, since: str, known: frozenset[str] = frozenset()
    ) -> str | None:
        """The remote id of a batch of ``total`` requests created at or after ``since`` (ISO
        8601, UTC) under ``label``, when the provider shows one; else None. Batches in
        ``known`` (those the store already holds) are never the answer."""
        ...

    async def status(self, remote_id: str) -> BatchStatus: ...

    async def results(self, remote_id: str) -> list[BatchResult]:
        """The results of a finished batch, each answer carrying ``batch_id`` = ``remote_id``.
        A line that cannot be read is a retryable server error for its request when its
        custom_id can be read, and left out when not; requests the batch did not answer
        (expired, cancelled) are left out too, so the engine asks for them again."""
        ...

    async def cancel(self, remote_id: str) -> BatchStatus: ...
