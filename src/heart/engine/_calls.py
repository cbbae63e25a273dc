"""Running many model calls: the call cache, per-provider limits, retries, budget, progress.

Calls are dispatched in ``group`` order, so calls sharing a prompt prefix (the same item) run back
to back. Each answer is written together with the stage's row by one writer thread, in small
transactions: a run killed at any moment leaves only whole results, and a rerun does the rest.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from functools import cached_property

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
from sqlalchemy import insert, select
from sqlalchemy.orm import Session

from heart.config import EngineSpec, Price
from heart.engine._limits import ProviderLimits
from heart.engine._retry import RetryPolicy, call_with_retries
from heart.models import ChatModel, ChatRequest, ChatResponse
from heart.models._errors import ModelCallError
from heart.store import CallRow, Store, now_iso

Recorder = Callable[[Session, ChatResponse | None, str | None], str | None]


@dataclass(frozen=True)
class Call:
    """One model call a stage needs, and where its result goes.

    ``on_result`` writes the stage's row in the transaction that caches the answer; it returns
    the reason when the stage could not use the answer (an empty reply, an invalid verdict).
    """

    model: ChatModel
    request: ChatRequest
    group: str
    on_result: Recorder
    price: Price = field(default_factory=Price)

    @cached_property
    def key(self) -> str:
        return self.request.call_hash(self.model.provider, self.model.model)

    @cached_property
    def estimated_tokens_in(self) -> int:
        """About four characters a token: good enough for limits, budgets and dry runs."""
        return sum(len(m.content) for m in self.request.messages) // 4 + 8


@dataclass
class RunSummary:
    calls: int = 0
    cached: int = 0
    failed: int = 0
    retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    not_started: int = 0
    errors: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class PlannedModel:
    """What a dry run expects to spend on one model."""

    provider: str
    model: str
    calls: int
    cached: int
    tokens_in: int
    max_tokens_out: int
    max_cost_usd: float


def _cached_answers(store: Store, keys: list[str]) -> dict[str, ChatResponse]:
    found: dict[str, ChatResponse] = {}
    with store.session() as session:
        for start in range(0, len(keys), 500):
            rows = session.scalars(
                select(CallRow).where(CallRow.hash.in_(keys[start : start + 500]))
            )
            for row in rows:
                found[row.hash] = ChatResponse.model_validate({**row.response, "cached": True})
    return found


def plan_calls(calls: Sequence[Call], store: Store) -> list[PlannedModel]:
    """A dry run: per model, how many calls are new, and their tokens and cost at most."""
    cached = _cached_answers(store, [c.key for c in calls])
    plans: dict[tuple[str, str], PlannedModel] = {}
    for call in calls:
        key = (call.model.provider, call.model.model)
        old = plans.get(key) or PlannedModel(key[0], key[1], 0, 0, 0, 0, 0.0)
        if call.key in cached:
            plans[key] = PlannedModel(*key, old.calls + 1, old.cached + 1, old.tokens_in,
                                      old.max_tokens_out, old.max_cost_usd)  # fmt: skip
            continue
        tokens_in, tokens_out = call.estimated_tokens_in, call.request.max_tokens
        plans[key] = PlannedModel(
            *key,
            old.calls + 1,
            old.cached,
            old.tokens_in + tokens_in,
            old.max_tokens_out + tokens_out,
            old.max_cost_usd + call.price.cost(tokens_in, tokens_out),
        )
    return sorted(plans.values(), key=lambda p: (p.provider, p.model))


class _Writer:
    """Records results in batches: they collect on the event loop and one worker-thread call
    writes each batch, so the loop is not interrupted by a thread hand-off per result."""

    WINDOW_S = 0.1  # the longest a result waits before its batch is written

    def __init__(self, store: Store, summary: RunSummary, on_done: Callable[[int], None]) -> None:
        self.store = store
        self.summary = summary
        self.on_done = on_done
        self.pending: list[tuple[Call, ChatResponse | None, str | None]] = []
        self.closing = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._flush_loop())

    def put(self, call: Call, response: ChatResponse | None, error: str | None) -> None:
        self.pending.append((call, response, error))

    async def close(self) -> None:
        self.closing.set()
        await self.task

    async def _flush_loop(self) -> None:
        while True:
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.closing.wait(), self.WINDOW_S)
            if self.pending:
                batch, self.pending = self.pending, []
                await asyncio.to_thread(self._write, batch)
            if self.closing.is_set() and not self.pending:
                return

    def _write(self, results: list[tuple[Call, ChatResponse | None, str | None]]) -> None:
        stamp = now_iso()
        answers = {
            call.key: {
                "hash": call.key,
                "provider": call.model.provider,
                "model": call.model.model,
                "response": response.model_dump(mode="json", exclude={"cached"}),
                "created_at": stamp,
            }
            for call, response, _ in results
            if response is not None and not response.cached
        }
        with self.store.session() as session:
            if answers:
                session.execute(insert(CallRow), list(answers.values()))
            failures = [
                call.on_result(session, response, error) for call, response, error in results
            ]
        for failure in failures:
            self.summary.calls += 1
            if failure is not None:
                self.summary.failed += 1
                self.summary.errors.append(failure)
        self.on_done(len(failures))


class Engine:
    """Runs a stage's calls under the study's engine settings."""

    def __init__(self, store: Store, spec: EngineSpec, console: Console | None = None) -> None:
        self.store = store
        self.spec = spec
        self.console = console
        self.rng = random.Random(0)

    def _progress(self) -> Progress:
        return Progress(
            TextColumn("[bold]{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[rate]}"),
            TimeElapsedColumn(),
            TextColumn("eta"),
            TimeRemainingColumn(),
            TextColumn("{task.fields[tokens]} tok ${task.fields[cost]:.4f}"),
            console=self.console,
            refresh_per_second=4,
        )

    async def run(self, calls: Sequence[Call], *, label: str) -> RunSummary:
        """Run every call (cached answers first), recording each result as it arrives."""
        summary = RunSummary()
        ordered = sorted(calls, key=lambda c: c.group)
        cached = await asyncio.to_thread(_cached_answers, self.store, [c.key for c in ordered])
        limits = {
            provider: ProviderLimits(s.concurrency, s.requests_per_minute, s.tokens_per_minute)
            for provider, s in (
                (p, self.spec.settings(p)) for p in {c.model.provider for c in ordered}
            )
        }
        budget = self.spec.budget_usd
        committed = 0.0  # spent plus reserved for calls in flight
        progress = self._progress()
        task = TaskID(0)

        def advance(done: int) -> None:
            elapsed = progress.tasks[task].elapsed or 0.0
            fresh = summary.calls - summary.cached
            rate = f"{fresh / elapsed * 60:.0f}/min" if elapsed > 0 and fresh else ""
            progress.update(task, advance=done, rate=rate, cost=summary.cost_usd,
                            tokens=summary.tokens_in + summary.tokens_out)  # fmt: skip

        policies = {
            provider: RetryPolicy(s.max_retries, s.backoff_base_s, s.backoff_cap_s, s.timeout_s)
            for provider, s in ((p, self.spec.settings(p)) for p in limits)
        }

        async def one(call: Call) -> None:
            nonlocal committed
            policy, gate = policies[call.model.provider], limits[call.model.provider]
            async with gate.slots:
                estimate = call.price.cost(call.estimated_tokens_in, call.request.max_tokens)
                if budget is not None and committed + estimate > budget:
                    summary.not_started += 1 + len(twins.get(call.key, ()))
                    return
                committed += estimate
                await gate.admit(call.estimated_tokens_in + call.request.max_tokens)
                response: ChatResponse | None = None
                error: str | None = None
                try:
                    response, tries = await call_with_retries(
                        lambda: call.model.complete(call.request), policy, rng=self.rng
                    )
                except ModelCallError as exc:
                    tries, error = exc.tries, str(exc)
                except Exception as exc:  # a provider bug fails this call, never the run
                    tries, error = 1, f"{type(exc).__name__}: {exc}"
                summary.retries += tries - 1
            cost = 0.0
            if response is not None:
                summary.tokens_in += response.tokens_in or 0
                summary.tokens_out += response.tokens_out or 0
                cost = call.price.cost(response.tokens_in, response.tokens_out)
                summary.cost_usd += cost
            committed += cost - estimate
            writer.put(call, response, error)
            for twin in twins.get(call.key, ()):  # the same request asked twice in one run
                writer.put(twin, response and response.model_copy(update={"cached": True}), error)

        with progress:
            task = progress.add_task(label, total=len(ordered), rate="", tokens=0, cost=0.0)
            writer = _Writer(self.store, summary, advance)
            fresh: dict[str, Call] = {}
            twins: dict[str, list[Call]] = {}
            try:
                for call in ordered:
                    hit = cached.get(call.key)
                    if hit is not None:
                        summary.cached += 1
                        writer.put(call, hit, None)
                    elif call.key in fresh:
                        twins.setdefault(call.key, []).append(call)
                    else:
                        fresh[call.key] = call
                await asyncio.gather(*(one(call) for call in fresh.values()))
            finally:
                await writer.close()
                models = {id(call.model): call.model for call in ordered}
                await asyncio.gather(*(model.aclose() for model in models.values()))
            if summary.not_started:
                progress.update(task, total=len(ordered) - summary.not_started)
        return summary


async def run_calls(
    calls: Sequence[Call],
    store: Store,
    *,
    label: str,
    console: Console | None = None,
    spec: EngineSpec | None = None,
) -> RunSummary:
    """Run ``calls`` with an engine over ``store`` (default settings unless ``spec`` is given)."""
    return await Engine(store, spec or EngineSpec(), console).run(calls, label=label)
