"""Calls sent through provider batch APIs, at the batch price.

Each batch is recorded before it is submitted and its provider id as soon as it is known, so a
run stopped at any moment resumes by polling the batches it already paid for: a call a batch
holds is never sent again. Finished batches' results are kept before any stage uses them. A
request a batch failed in a way worth retrying, or left unanswered (expired, cancelled), goes
back to the queue: the next batch, or a live call, as ``engine.batch.failed_calls`` says. An
answer the stage's check refuses is asked again in the next batch, as live answers are.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from functools import partial
from typing import TypeVar

from heart.engine import _batch_store as records
from heart.engine._batch_store import Held, Outcome
from heart.engine._retry import call_with_retries
from heart.engine._run import OVER_BUDGET, Asking, Run
from heart.models import BatchAPI, BatchStatus, ChatModel
from heart.models._errors import Cause, ModelCallError

T = TypeVar("T")
CLOCK_SKEW_S = 300  # how far a provider's clock may be behind ours when it stamps a batch


@dataclass
class _Open:
    remote_id: str
    keys: list[str] = field(default_factory=list)


class Batcher:
    """The calls of one model at one endpoint that go through its provider's batch API."""

    def __init__(self, run: Run, model: ChatModel, api: BatchAPI) -> None:
        self.run = run
        self.model = model
        self.api = api
        self.settings = run.spec.batch
        self.policy = run.policies[(model.provider, model.endpoint)]
        self.queue: list[Asking] = []
        self.waiting: dict[str, Asking] = {}  # in an open batch, by key
        self.reserved: dict[str, float] = {}  # budget held per key until its result
        self.open: dict[str, _Open] = {}  # by heart's batch id
        self.live: list[asyncio.Task[None]] = []
        self.failed_submits = 0

    async def _provider(self, action: Callable[[], Awaitable[T]]) -> T:
        """One batch API request under the endpoint's retry policy."""
        result, tries = await call_with_retries(action, self.policy, rng=self.run.rng)
        self.run.summary.retries += tries - 1
        return result

    async def _store(self, fn: Callable[..., T], *args: object) -> T:
        return await asyncio.to_thread(fn, self.run.store, *args)

    async def run_all(self, askings: list[Asking]) -> None:
        self.queue = list(askings)
        try:
            while self.queue or self.open:
                if self.queue:
                    queued, self.queue = self.queue, []
                    await self._send(queued)
                if self.open:
                    await asyncio.sleep(self.settings.poll_s)
                    await self._check()
        finally:
            self.run.batches_open -= len(self.open)
        await asyncio.gather(*self.live)

    async def _send(self, queued: list[Asking]) -> None:
        """Submit what no batch holds yet, in batches of the set size; adopt the batches that
        hold the rest."""
        ready: list[Asking] = []
        for asking in queued:
            while (hit := await self.run.lookup(asking)) is not None:
                if not self.run.settle(asking, hit, None, Cause.OTHER, None):
                    break
            else:
                ready.append(asking)
        held = await self._store(records.held_calls, [a.key for a in ready])
        fresh: list[Asking] = []
        adopted: dict[str, bool | ModelCallError] = {}  # decided once per batch
        for asking in ready:
            found = held.get(asking.key)
            if found is None:
                fresh.append(asking)
                continue
            if found.outcome is not None:
                self._take(asking, found.batch_id, found.outcome)
                continue
            if found.batch_id not in adopted:
                adopted[found.batch_id] = await self._adopt(found)
            verdict = adopted[found.batch_id]
            if isinstance(verdict, ModelCallError):
                reason = (
                    f"batch {found.batch_id} could not be looked up ({verdict}); its calls are "
                    "not sent again, and the next run looks again"
                )
                self.run.settle(asking, None, reason, verdict.cause, None)
            elif verdict:
                self.waiting[asking.key] = asking
                self.open[found.batch_id].keys.append(asking.key)
            else:
                fresh.append(asking)
        for start in range(0, len(fresh), self.settings.size):
            await self._submit(fresh[start : start + self.settings.size])

    async def _adopt(self, held: Held) -> bool | ModelCallError:
        """Wait on a batch an earlier run submitted: True; False when it never reached the
        provider (its calls are then sent again); the provider's error when whether it did
        cannot be told now."""
        if held.batch_id in self.open:
            return True
        remote_id = held.remote_id
        if remote_id is None:  # the submission was cut off before its id was recorded
            try:
                remote_id = await self._confirm(held.batch_id, held.total, held.submitted_at)
            except ModelCallError as exc:
                return exc
            if remote_id is None:
                await self._store(
                    records.record_refused, held.batch_id,
                    "its submission was cut off before the provider confirmed it",
                )  # fmt: skip
                return False
            await self._store(records.record_open, held.batch_id, remote_id)
        self.open[held.batch_id] = _Open(remote_id)
        self.run.batches_open += 1
        return True

    async def _confirm(self, batch_id: str, total: int, submitted_at: str) -> str | None:
        """The provider's id of a batch whose submission got no answer, if it was made."""
        stored = await self._store(partial(records.stored_batches, everything=True))
        known = frozenset(b.remote_id for b in stored if b.remote_id is not None)
        since = records.earlier(submitted_at, CLOCK_SKEW_S)
        return await self._provider(lambda: self.api.find(batch_id, total, since, known))

    async def _submit(self, chunk: list[Asking]) -> None:
        sending: list[Asking] = []
        for asking in chunk:
            reserved = self.run.reserve(asking.call, asking.request, batch=True)
            if reserved is None:
                if asking.first:
                    self.run.not_started(asking)
                else:
                    self.run.settle(asking, None, OVER_BUDGET, Cause.OTHER, None)
                continue
            self.reserved[asking.key] = reserved
            sending.append(asking)
        if not sending:
            return
        batch_id = records.new_batch_id()
        keys = [a.key for a in sending]
        stamp = await self._store(
            records.record_submitting, batch_id, self.model, self.run.label, keys
        )
        requests = [(a.key, a.request) for a in sending]
        try:  # one try: a lost answer is looked for before anything is sent again
            remote_id: str | None = await asyncio.wait_for(
                self.api.submit(requests, batch_id), self.policy.timeout_s
            )
        except (ModelCallError, TimeoutError) as exc:
            error = exc if isinstance(exc, ModelCallError) else ModelCallError(
                f"no answer to the batch submission in {self.policy.timeout_s:g} s",
                retryable=True, cause=Cause.TIMEOUT,
            )  # fmt: skip
            remote_id = None
            if error.retryable:
                with contextlib.suppress(ModelCallError):
                    remote_id = await self._confirm(batch_id, len(keys), stamp)
            if remote_id is None:
                await self._refused(batch_id, sending, error)
                return
        assert remote_id is not None
        await self._store(records.record_open, batch_id, remote_id)
        self.open[batch_id] = _Open(remote_id, keys)
        self.run.batches_open += 1
        self.waiting.update((a.key, a) for a in sending)

    async def _refused(self, batch_id: str, sending: list[Asking], error: ModelCallError) -> None:
        """A submission the provider refused, or that cannot be found after a lost answer:
        its calls are asked again (when that can help), live, or fail with the reason."""
        await self._store(records.record_refused, batch_id, str(error))
        self.failed_submits += 1
        for asking in sending:
            if error.retryable:
                why = f"the batch could not be submitted: {error}"
                self._take(asking, batch_id, Outcome("missing", error=why, cause=error.cause))
                continue
            self.run.committed -= self.reserved.pop(asking.key, 0.0)
            if self.settings.failed_calls == "live":
                self._go_live(asking)
            else:
                self.run.settle(asking, None, self._refusal(error), error.cause, None)
        if error.retryable:  # wait before sending them again, as for a failed live call
            await asyncio.sleep(self.policy.delay(self.failed_submits, error, self.run.rng))

    def _refusal(self, exc: ModelCallError) -> str:
        reason = f"the provider refused the batch: {exc}"
        if exc.status in (404, 405, 501):
            reason += (
                f"; if {self.model.endpoint} has no batch API, set its engine.endpoints "
                "entry to batch: false (or run without --batch)"
            )
        return reason

    async def _check(self) -> None:
        """Poll every open batch once; take the results of those that finished."""
        for batch_id, batch in list(self.open.items()):
            remote_id = batch.remote_id
            try:
                status = await self._provider(lambda: self.api.status(remote_id))  # noqa: B023
                if status.finished and status.state != "failed":
                    results = await self._provider(
                        lambda: self.api.results(remote_id)  # noqa: B023
                    )
                else:
                    results = []
            except ModelCallError as exc:
                await self._unreachable(batch_id, batch, exc)
                continue
            if not status.finished:
                await self._store(records.record_status, batch_id, status)
                continue
            outcomes = await self._store(records.record_results, batch_id, status, results)
            del self.open[batch_id]
            self.run.batches_open -= 1
            for key in batch.keys:
                asking = self.waiting.pop(key, None)
                if asking is not None:
                    outcome = outcomes.get(key, Outcome("missing"))
                    self._take(asking, batch_id, _whole(outcome, status))
        self.run.report()

    async def _unreachable(self, batch_id: str, batch: _Open, exc: ModelCallError) -> None:
        """A batch whose state cannot be read stays open in the store for the next run; its
        calls fail for this one. One its provider no longer knows is over: its calls are
        asked again."""
        del self.open[batch_id]
        self.run.batches_open -= 1
        if exc.cause is Cause.NOT_FOUND:
            await self._store(records.record_refused, batch_id, f"the provider lost it: {exc}")
            for key in batch.keys:
                asking = self.waiting.pop(key, None)
                if asking is not None:
                    why = f"the provider no longer knows batch {batch_id}: {exc}"
                    self._take(asking, batch_id, Outcome("missing", error=why, cause=exc.cause))
            return
        reason = (
            f"batch {batch_id} could not be checked ({exc}); it stays open, and the next run "
            "collects its results"
        )
        for key in batch.keys:
            asking = self.waiting.pop(key, None)
            if asking is not None:
                self.run.committed -= self.reserved.pop(key, 0.0)
                self.run.settle(asking, None, reason, exc.cause, None)

    def _take(self, asking: Asking, batch_id: str, outcome: Outcome) -> None:
        """Use a call's outcome: an answer goes to the stage's check; a failure worth retrying
        or a missing answer goes back to the queue until the endpoint's retries run out."""
        key = asking.key
        asking.taken.append((batch_id, key))
        reserved = self.reserved.pop(key, 0.0)
        if outcome.response is not None:
            self.run.spent(asking.call, outcome.response, reserved)
            fresh = (key, outcome.response)
            if self.run.settle(asking, outcome.response, None, Cause.OTHER, fresh):
                self.queue.append(asking)
            return
        self.run.committed -= reserved
        if outcome.state == "failed" and not outcome.retryable:
            self.run.settle(asking, None, outcome.error, outcome.cause, None)
            return
        asking.tries += 1
        if asking.tries > self.policy.max_retries:
            reason = outcome.error or f"batch {batch_id} ended without answering it"
            self.run.settle(asking, None, f"{reason} ({asking.tries} batches)", outcome.cause,
                            None)  # fmt: skip
            return
        self.run.summary.retries += 1
        if self.settings.failed_calls == "live":
            self._go_live(asking)
        else:
            self.queue.append(asking)

    def _go_live(self, asking: Asking) -> None:
        self.live.append(asyncio.get_running_loop().create_task(self.run.live(asking)))


def _whole(outcome: Outcome, status: BatchStatus) -> Outcome:
    """A missing answer's reason, from how its batch finished."""
    if outcome.state != "missing":
        return outcome
    how = {"expired": "expired", "cancelled": "was cancelled", "failed": "failed"}
    reason = f"the batch {how.get(status.state, 'ended')} before answering it"
    if status.detail:
        reason += f" ({status.detail})"
    return Outcome("missing", error=reason, cause=Cause.SERVER, retryable=True)


async def run_batches(run: Run, askings: list[Asking]) -> None:
    """Send ``askings`` through their providers' batch APIs, one batcher per model."""
    groups: dict[tuple[str, str, str], list[Asking]] = {}
    for asking in askings:
        model = asking.call.model
        groups.setdefault((model.provider, model.endpoint, model.model), []).append(asking)
    batchers = []
    for group in groups.values():
        model = group[0].call.model
        assert model.batches is not None  # only calls to models with a batch API come here
        batchers.append(Batcher(run, model, model.batches).run_all(group))
    await asyncio.gather(*batchers)
