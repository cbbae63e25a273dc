"""Running many model calls: the store's call cache, ordering by shared prefix, progress, resume."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from rich.console import Console
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from sqlalchemy.orm import Session

from heart.models import ChatModel, ChatRequest, ChatResponse
from heart.store import CallRow, Store, now_iso


@dataclass(frozen=True)
class Call:
    """One model call a stage needs, and where its result goes.

    ``group`` orders calls so that those sharing a prompt prefix (the same item) run back to back;
    ``on_result`` writes the stage's row in the same transaction that caches the answer, so a call
    is either fully recorded or not at all; it returns the reason when the stage could not use the
    answer (an empty reply, an invalid verdict), and ``None`` otherwise.
    """

    model: ChatModel
    request: ChatRequest
    group: str
    on_result: Callable[[Session, ChatResponse | None, str | None], str | None]

    @property
    def key(self) -> str:
        return self.request.call_hash(self.model.provider, self.model.model)


@dataclass
class RunSummary:
    calls: int = 0
    cached: int = 0
    failed: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    errors: list[str] = field(default_factory=list)


def _cached(store: Store, key: str) -> ChatResponse | None:
    with store.session() as session:
        row = session.get(CallRow, key)
        if row is None:
            return None
        return ChatResponse.model_validate({**row.response, "cached": True})


def _record(
    store: Store, call: Call, response: ChatResponse | None, error: str | None
) -> str | None:
    with store.session() as session:
        if response is not None and not response.cached:
            session.merge(
                CallRow(
                    hash=call.key,
                    provider=call.model.provider,
                    model=call.model.model,
                    response=response.model_dump(mode="json", exclude={"cached"}),
                    created_at=now_iso(),
                )
            )
        return call.on_result(session, response, error)


async def _execute(call: Call, store: Store) -> tuple[ChatResponse | None, str | None]:
    cached = await asyncio.to_thread(_cached, store, call.key)
    if cached is not None:
        return cached, None
    try:
        return await call.model.complete(call.request), None
    except Exception as exc:  # a failed call is recorded with its reason, never fatal to the run
        return None, f"{type(exc).__name__}: {exc}"


async def run_calls(
    calls: Sequence[Call],
    store: Store,
    *,
    label: str,
    console: Console | None = None,
    concurrency: int = 1,
) -> RunSummary:
    """Run ``calls`` (cache first), recording each result as it arrives; returns the totals."""
    summary = RunSummary()
    ordered = sorted(calls, key=lambda c: c.group)
    semaphore = asyncio.Semaphore(concurrency)
    progress = Progress(
        TextColumn("[bold]{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[rate]}"),
        TimeElapsedColumn(),
        TextColumn("eta"),
        TimeRemainingColumn(),
        TextColumn("{task.fields[tokens]} tok"),
        console=console,
        transient=False,
    )

    async def one(call: Call, task_id: TaskID) -> None:
        async with semaphore:
            response, error = await _execute(call, store)
        failure = await asyncio.to_thread(_record, store, call, response, error)
        summary.calls += 1
        if failure is not None:
            summary.failed += 1
            summary.errors.append(failure)
        if response is not None:
            summary.cached += response.cached
            summary.tokens_in += response.tokens_in
            summary.tokens_out += response.tokens_out
        elapsed = progress.tasks[task_id].elapsed or 0.0
        fresh = summary.calls - summary.cached
        rate = f"{fresh / elapsed * 60:.0f}/min" if elapsed > 0 and fresh else ""
        progress.update(
            task_id, advance=1, rate=rate, tokens=summary.tokens_in + summary.tokens_out
        )

    with progress:
        task_id = progress.add_task(label, total=len(ordered), rate="", tokens=0)
        if concurrency == 1:
            for call in ordered:
                await one(call, task_id)
        else:
            await asyncio.gather(*(one(call, task_id) for call in ordered))
    return summary
