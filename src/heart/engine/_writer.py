"""Writing a stage's results: each answer is cached with the stage's row in one transaction."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from sqlalchemy import delete, insert, select, update

from heart.engine._calls import Call, CallFailure, RunSummary
from heart.models import ChatResponse
from heart.models._errors import Cause
from heart.store import BatchCallRow, CallRow, Store, now_iso


def cached_answers(store: Store, keys: list[str]) -> dict[str, ChatResponse]:
    """The call cache's answers to ``keys`` (marked ``cached``)."""
    found: dict[str, ChatResponse] = {}
    with store.session() as session:
        for start in range(0, len(keys), 500):
            rows = session.scalars(
                select(CallRow).where(CallRow.hash.in_(keys[start : start + 500]))
            )
            for row in rows:
                found[row.hash] = ChatResponse.model_validate({**row.response, "cached": True})
    return found


@dataclass(frozen=True)
class Result:
    """A call's outcome to record: the answer (or ``error`` and its ``cause``), ``fresh`` the
    new answer to cache under its request's key once the stage has used it, and ``taken`` the
    batch calls (batch id, call key) whose outcomes this result used up."""

    call: Call
    response: ChatResponse | None
    error: str | None
    fresh: tuple[str, ChatResponse] | None = None
    cause: Cause = Cause.OTHER
    taken: Sequence[tuple[str, str]] = ()


def _failure(result: Result, reason: str | None) -> CallFailure | None:
    """The failure a stage reported for a result (None: it used the answer): the call's own
    cause when the call failed, else bad output (the stage refused the answer)."""
    if reason is None:
        return None
    call = result.call
    return CallFailure(
        result.cause if result.error is not None else Cause.BAD_OUTPUT,
        reason,
        call.model.provider,
        call.model.endpoint,
        call.model.model,
    )


class Writer:
    """Records results in batches: they collect on the event loop and one worker-thread call
    writes each batch, so the loop is not interrupted by a thread hand-off per result. The
    summary and ``on_done`` are updated back on the event loop."""

    WINDOW_S = 0.1  # the longest a result waits before its batch is written

    def __init__(self, store: Store, summary: RunSummary, on_done: Callable[[int], None]) -> None:
        self.store = store
        self.summary = summary
        self.on_done = on_done
        self.pending: list[Result] = []
        self.closing = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._flush_loop())

    def put(self, result: Result) -> None:
        """Queue a result to be written with the next batch."""
        self.pending.append(result)

    async def close(self) -> None:
        self.closing.set()
        await self.task

    async def _flush_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.closing.wait(), self.WINDOW_S)
            if self.pending:
                batch, self.pending = self.pending, []
                failures = await asyncio.to_thread(self._write, batch)
                for failure in failures:
                    self.summary.calls += 1
                    if failure is not None:
                        self.summary.failed += 1
                        self.summary.failures.append(failure)
                self.on_done(len(failures))
            if self.closing.is_set() and not self.pending:
                return

    def _write(self, results: list[Result]) -> list[CallFailure | None]:
        """Store a batch in one transaction; returns each result's failure (None: used)."""
        stamp = now_iso()
        with self.store.session() as session:
            failures = [
                _failure(r, r.call.on_result(session, r.response, r.error)) for r in results
            ]
            answers = {
                r.fresh[0]: {
                    "hash": r.fresh[0],
                    "provider": r.call.model.provider,
                    "endpoint": r.call.model.endpoint,
                    "model": r.call.model.model,
                    "response": r.fresh[1].model_dump(mode="json", exclude={"cached", "earlier"}),
                    "created_at": stamp,
                }
                for r, failure in zip(results, failures, strict=True)
                if r.fresh is not None and failure is None
            }
            if answers:  # a newer answer replaces one cached but refused on a check
                session.execute(delete(CallRow).where(CallRow.hash.in_(list(answers))))
                session.execute(insert(CallRow), list(answers.values()))
            taken: dict[str, list[str]] = {}
            for r in results:
                for batch_id, key in r.taken:
                    taken.setdefault(batch_id, []).append(key)
            for batch_id, keys in taken.items():
                for start in range(0, len(keys), 500):
                    session.execute(
                        update(BatchCallRow)
                        .where(
                            BatchCallRow.batch_id == batch_id,
                            BatchCallRow.call_key.in_(keys[start : start + 500]),
                        )
                        .values(state="used")
                    )
        return failures
