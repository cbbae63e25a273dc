"""What the store keeps of provider batches: each batch before it is submitted, its provider id
once known, its progress, and every call's outcome as soon as the batch finishes."""

from __future__ import annotations

import uuid
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta

from sqlalchemy import select, update

from heart.models import BatchResult, BatchStatus, ChatModel, ChatResponse
from heart.models._errors import Cause
from heart.store import BatchCallRow, BatchRow, Store, now_iso

OPEN_STATES = ("submitting", "open")


@dataclass(frozen=True)
class Outcome:
    """A call's outcome in a finished batch: ``answered`` (with its answer), ``failed`` (with
    the error, its cause and whether asking again can help) or ``missing``."""

    state: str
    response: ChatResponse | None = None
    error: str | None = None
    cause: Cause = Cause.SERVER
    retryable: bool = True


@dataclass(frozen=True)
class Held:
    """A call a batch holds: still open in batch ``batch_id`` (``remote_id`` None while its
    submission is unconfirmed), or finished with a non-retryable ``outcome`` not yet used;
    ``total`` and ``submitted_at`` are its batch's, to find an unconfirmed one by."""

    batch_id: str
    remote_id: str | None
    outcome: Outcome | None
    total: int = 0
    submitted_at: str = ""


def new_batch_id() -> str:
    return f"hb-{uuid.uuid4().hex[:24]}"


def earlier(stamp: str, seconds: float) -> str:
    """The ISO 8601 time ``seconds`` before ``stamp``."""
    moment = datetime.fromisoformat(stamp.replace("Z", "+00:00")) - timedelta(seconds=seconds)
    return moment.isoformat()


def _outcome(row: BatchCallRow) -> Outcome:
    response = ChatResponse.model_validate(row.response) if row.response is not None else None
    cause = Cause(row.cause) if row.cause else Cause.SERVER
    return Outcome(row.state, response, row.error, cause, row.retryable)


def held_calls(store: Store, keys: Sequence[str]) -> dict[str, Held]:
    """The calls among ``keys`` a batch holds open, or answered (or failed for good) but not
    yet used: these are never submitted again."""
    found: dict[str, Held] = {}
    with store.session() as session:
        for start in range(0, len(keys), 500):
            rows = session.execute(
                select(BatchCallRow, BatchRow)
                .join(BatchRow, BatchRow.id == BatchCallRow.batch_id)
                .where(BatchCallRow.call_key.in_(keys[start : start + 500]))
                .where(BatchCallRow.state.in_(("open", "answered", "failed")))
            )
            for call, batch in rows:
                if call.state == "failed" and call.retryable:
                    continue  # asked again in a new batch
                if call.state == "open" and batch.state not in OPEN_STATES:
                    continue
                outcome = None if call.state == "open" else _outcome(call)
                found[call.call_key] = Held(
                    batch.id, batch.remote_id, outcome, batch.total, batch.submitted_at
                )
    return found


def batch_keys(store: Store, batch_id: str) -> list[str]:
    """The keys a batch still holds open."""
    with store.session() as session:
        return list(
            session.scalars(
                select(BatchCallRow.call_key).where(
                    BatchCallRow.batch_id == batch_id, BatchCallRow.state == "open"
                )
            )
        )


def record_submitting(
    store: Store, batch_id: str, model: ChatModel, stage: str, keys: Sequence[str]
) -> str:
    """Record a batch and its calls before it is sent; returns when it was recorded."""
    stamp = now_iso()
    with store.session() as session:
        session.add(
            BatchRow(id=batch_id, provider=model.provider, endpoint=model.endpoint,
                     model=model.model, stage=stage, remote_id=None, state="submitting",
                     total=len(keys), succeeded=0, errored=0, detail="", submitted_at=stamp,
                     updated_at=stamp)
        )  # fmt: skip
        session.flush()
        session.add_all(
            BatchCallRow(batch_id=batch_id, call_key=k, state="open", retryable=False) for k in keys
        )
    return stamp


def record_open(store: Store, batch_id: str, remote_id: str) -> None:
    with store.session() as session:
        session.execute(
            update(BatchRow)
            .where(BatchRow.id == batch_id)
            .values(remote_id=remote_id, state="open", updated_at=now_iso())
        )


def record_refused(store: Store, batch_id: str, detail: str) -> None:
    """A batch that never ran (its submission failed or was never confirmed): its calls are
    missing, and may be sent again."""
    with store.session() as session:
        session.execute(
            update(BatchRow)
            .where(BatchRow.id == batch_id)
            .values(state="failed", detail=detail, updated_at=now_iso())
        )
        session.execute(
            update(BatchCallRow)
            .where(BatchCallRow.batch_id == batch_id, BatchCallRow.state == "open")
            .values(state="missing")
        )


def record_status(store: Store, batch_id: str, status: BatchStatus) -> None:
    """The provider's latest counts for a batch still open."""
    with store.session() as session:
        session.execute(
            update(BatchRow)
            .where(BatchRow.id == batch_id)
            .values(succeeded=status.succeeded, errored=status.errored, detail=status.detail,
                    updated_at=now_iso())
        )  # fmt: skip


def record_results(
    store: Store, batch_id: str, status: BatchStatus, results: Sequence[BatchResult]
) -> dict[str, Outcome]:
    """Keep a finished batch's results in one transaction and return every call's outcome;
    calls it has no result for are missing."""
    by_key = {r.custom_id: r for r in results}
    outcomes: dict[str, Outcome] = {}
    with store.session() as session:
        batch = session.get(BatchRow, batch_id)
        if batch is None:
            return outcomes
        batch.state, batch.detail, batch.updated_at = status.state, status.detail, now_iso()
        batch.succeeded, batch.errored = status.succeeded, status.errored
        rows = session.scalars(
            select(BatchCallRow).where(
                BatchCallRow.batch_id == batch_id, BatchCallRow.state == "open"
            )
        )
        for row in rows:
            result = by_key.get(row.call_key)
            if result is not None and result.response is not None:
                row.state = "answered"
                row.response = result.response.model_dump(
                    mode="json", exclude={"cached", "earlier"}
                )
            elif result is not None and result.error is not None:
                row.state, row.error = "failed", str(result.error)
                row.cause, row.retryable = result.error.cause.value, result.error.retryable
            else:
                row.state = "missing"
            outcomes[row.call_key] = _outcome(row)
    return outcomes


@dataclass(frozen=True)
class BatchView:
    """A batch as ``heart batches`` shows it."""

    id: str
    provider: str
    endpoint: str
    model: str
    stage: str
    remote_id: str | None
    state: str
    total: int
    succeeded: int
    errored: int
    submitted_at: str
    updated_at: str
    detail: str


def stored_batches(store: Store, *, everything: bool = False) -> list[BatchView]:
    """The batches still open (every batch with ``everything``), oldest first."""
    with store.session() as session:
        query = select(BatchRow).order_by(BatchRow.submitted_at, BatchRow.id)
        if not everything:
            query = query.where(BatchRow.state.in_(OPEN_STATES))
        return [
            BatchView(b.id, b.provider, b.endpoint, b.model, b.stage, b.remote_id, b.state,
                      b.total, b.succeeded, b.errored, b.submitted_at, b.updated_at, b.detail)
            for b in session.scalars(query)
        ]  # fmt: skip
