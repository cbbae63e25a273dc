"""Running many model calls: the call cache, per-endpoint limits, retries, budget, progress.

Calls are dispatched in ``group`` order, so calls sharing a prompt prefix (the same item) run back
to back. Each answer is written together with the stage's row by one writer thread, in small
transactions: a run killed at any moment leaves only whole results, and a rerun does the rest.
Calls to an endpoint set to batch go through its provider's batch API (``_batching``) instead.
Progress goes to a callback, so the caller decides how (and whether) to show it.
"""

from __future__ import annotations

import asyncio
import random
import time
from collections.abc import Sequence
from dataclasses import dataclass, field

from heart.config import EngineSpec, ProviderName
from heart.engine._batch_store import held_calls
from heart.engine._calls import (
    Call,
    Progress,
    ProgressFn,
    ReplicaLoad,
    RunSummary,
    estimated_tokens_in,
)
from heart.engine._limits import EndpointLimits
from heart.engine._plan import batched
from heart.engine._replicas import Replica, Replicas, pool_key, rests
from heart.engine._retry import RetryPolicy, call_with_retries, given_up, timed_out
from heart.engine._writer import Result, Writer, cached_answers
from heart.models import ChatRequest, ChatResponse, billed, call_key
from heart.models._errors import Cause, ModelCallError
from heart.store import Store

OVER_BUDGET = "over budget"
BUDGET_RAN_OUT = "the budget ran out before the refused answer could be asked again"
Answer = tuple[ChatResponse | None, str | None, Cause]


def merged(answers: list[ChatResponse], earlier: list[tuple[str, str]]) -> ChatResponse:
    """The last answer, carrying the time and tokens of every ask and the refused answers."""

    def total(values: list[int | None]) -> int | None:
        known = [v for v in values if v is not None]
        return sum(known) if known else None

    return answers[-1].model_copy(
        update={
            "tokens_in": total([a.tokens_in for a in answers]),
            "tokens_out": total([a.tokens_out for a in answers]),
            "cached_tokens_in": sum(a.cached_tokens_in for a in answers),
            "cache_write_tokens": sum(a.cache_write_tokens for a in answers),
            "cache_write_1h_tokens": sum(a.cache_write_1h_tokens for a in answers),
            "latency_ms": sum(a.latency_ms for a in answers),
            "ttft_ms": answers[0].ttft_ms,
            "earlier": tuple(earlier),
        }
    )


@dataclass
class Asking:
    """One call on its way to a usable answer: the request to send now (the call's own, or a
    follow-up after a refused answer), the answers so far and the problems found in them,
    the batch calls whose outcomes it used, and how many batch tries it has had."""

    call: Call
    request: ChatRequest
    answers: list[ChatResponse] = field(default_factory=list)
    earlier: list[tuple[str, str]] = field(default_factory=list)
    taken: list[tuple[str, str]] = field(default_factory=list)
    tries: int = 0

    @property
    def key(self) -> str:
        return (
            self.call.key
            if self.request is self.call.request
            else call_key(self.call.model, self.request)
        )

    @property
    def first(self) -> bool:
        """Nothing was asked for this call yet (so the budget can still leave it unstarted)."""
        return not self.answers and not self.earlier


class Run:
    """One engine run over a stage's calls: what the live and batch paths share (limits,
    retries, the budget, the writer, the summary)."""

    def __init__(self, store: Store, spec: EngineSpec, label: str, total: int) -> None:
        self.store = store
        self.spec = spec
        self.label = label
        self.total = total
        self.summary = RunSummary()
        self.rng = random.Random(0)
        self.committed = 0.0  # spent plus reserved for calls in flight or in open batches
        self.twins: dict[str, list[Call]] = {}
        self.limits: dict[tuple[ProviderName, str], EndpointLimits] = {}
        self.policies: dict[tuple[ProviderName, str], RetryPolicy] = {}
        self.batches_open = 0
        self.pools: dict[tuple[str, str, tuple[str, ...]], Replicas] = {}
        self.progress: ProgressFn | None = None
        self.broken: list[Exception] = []
        self.writer: Writer

    def endpoint_settings(self, calls: Sequence[Call]) -> None:
        for endpoint in {c.endpoint for c in calls}:
            s = self.spec.settings(*endpoint)
            self.limits[endpoint] = EndpointLimits(
                s.concurrency, s.requests_per_minute, s.tokens_per_minute
            )
            self.policies[endpoint] = RetryPolicy(
                s.max_retries, s.backoff_base_s, s.backoff_cap_s, s.timeout_s
            )
        for call in calls:
            if len(call.model.replicas) > 1 and pool_key(call.model) not in self.pools:
                self.pools[pool_key(call.model)] = self.replica_pool(call)

    def replica_pool(self, call: Call) -> Replicas:
        """The replicas of ``call``'s model, each with the limits of its own URL (shared with
        any other model reached there), over its model's endpoint's, over its provider's."""
        provider, endpoint = call.endpoint
        replicas = []
        for model in call.model.replicas:
            s = self.spec.settings(provider, endpoint, model.endpoint)
            gate = self.limits.setdefault(
                (provider, model.endpoint),
                EndpointLimits(s.concurrency, s.requests_per_minute, s.tokens_per_minute),
            )
            replicas.append(Replica(model, gate, s.concurrency))
        return Replicas(call.model.model, replicas, self.policies[call.endpoint])

    def replica_loads(self) -> list[ReplicaLoad]:
        return [load for pool in self.pools.values() for load in pool.loads()]

    def report(self, finished: bool = False) -> None:
        """Tell the callback (on the event loop's thread); one that fails is not called
        again, and its error is raised once every answer is stored."""
        if self.progress is None:
            return
        s = self.summary
        try:
            self.progress(
                Progress(self.label, s.calls, self.total, s.calls - s.cached,
                         s.tokens_in + s.tokens_out, s.cost_usd, finished, self.batches_open,
                         tuple(self.replica_loads()))
            )  # fmt: skip
        except Exception as exc:
            self.progress = None
            self.broken.append(exc)

    def reserve(self, call: Call, request: ChatRequest, *, batch: bool = False) -> float | None:
        """Hold the most ``request`` can cost against the budget; None when it does not fit."""
        tokens_in = estimated_tokens_in(request)
        estimate = call.price.cost(tokens_in, request.max_tokens, batch=batch)
        if self.spec.budget_usd is not None and self.committed + estimate > self.spec.budget_usd:
            return None
        self.committed += estimate
        return estimate

    def spent(self, call: Call, response: ChatResponse, reserved: float) -> None:
        """Count an answer's tokens and cost, in place of what was held for it."""
        self.summary.tokens_in += response.tokens_in or 0
        self.summary.tokens_out += response.tokens_out or 0
        cost = billed(call.price, response)
        self.summary.cost_usd += cost
        self.committed += cost - reserved

    async def ask(self, call: Call, request: ChatRequest) -> Answer:
        """One live request under its endpoint's limits, retry policy and the budget."""
        if len(call.model.replicas) > 1:
            return await self.ask_replicas(call, request)
        policy, gate = self.policies[call.endpoint], self.limits[call.endpoint]
        async with gate.slots:
            reserved = self.reserve(call, request)
            if reserved is None:
                return None, OVER_BUDGET, Cause.OTHER
            await gate.admit(estimated_tokens_in(request) + request.max_tokens)
            response: ChatResponse | None = None
            error: str | None = None
            cause = Cause.OTHER
            try:
                response, tries = await call_with_retries(
                    lambda: call.model.complete(request), policy, rng=self.rng
                )
            except ModelCallError as exc:
                tries, error, cause = exc.tries, str(exc), exc.cause
            except Exception as exc:  # a provider bug fails this call, never the run
                tries, error = 1, f"{type(exc).__name__}: {exc}"
            self.summary.retries += tries - 1
        if response is not None:
            self.spent(call, response, reserved)
        else:
            self.committed -= reserved
        return response, error, cause

    async def ask_replicas(self, call: Call, request: ChatRequest) -> Answer:
        """One live request to the model's replicas: sent to the least busy one awake; when
        it fails as a server does, sent at once to another one awake, without using up a
        retry, as long as the replicas it has not been to this round last."""
        pool = self.pools[pool_key(call.model)]
        policy = pool.policy
        tokens = estimated_tokens_in(request) + request.max_tokens
        reserved: float | None = None
        sends = tries = moved = 0
        while True:
            replica = await pool.take()
            if reserved is None:
                reserved = self.reserve(call, request)
                if reserved is None:
                    pool.give_back(replica)
                    return None, OVER_BUDGET, Cause.OTHER
            sends += 1
            sent_at = time.monotonic()
            try:
                async with replica.gate.slots:
                    await replica.gate.admit(tokens)
                    try:
                        async with asyncio.timeout(policy.timeout_s):
                            response = await replica.model.complete(request)
                    except TimeoutError:
                        raise timed_out(policy) from None
            except ModelCallError as exc:
                error = exc
            except Exception as exc:  # a provider bug fails this call, never the run
                error = ModelCallError(f"{type(exc).__name__}: {exc}", retryable=False)
            else:
                pool.answered(replica)
                pool.give_back(replica)
                self.summary.retries += sends - 1
                self.spent(call, response, reserved)
                return response, None, Cause.OTHER
            resting = rests(error)
            if resting:
                pool.failed(replica, sent_at)
            pool.give_back(replica)
            if resting and moved < len(pool.replicas) - 1 and pool.awake():
                moved += 1
                continue
            tries, moved = tries + 1, 0
            if not error.retryable or tries > policy.max_retries:
                self.summary.retries += sends - 1
                self.committed -= reserved
                failure = given_up(error, sends)
                return None, str(failure), failure.cause
            if not resting:  # a resting replica's wait is its rest
                await asyncio.sleep(policy.delay(tries, error, self.rng))

    async def lookup(self, asking: Asking) -> ChatResponse | None:
        """A usable cached answer to a follow-up request, if an earlier run stored one."""
        if asking.request is asking.call.request:
            return None  # the call's own request was looked up before the run started
        key = asking.key
        hit = (await asyncio.to_thread(cached_answers, self.store, [key])).get(key)
        return hit if hit is not None and asking.call.usable(hit) else None

    def settle(
        self,
        asking: Asking,
        response: ChatResponse | None,
        error: str | None,
        cause: Cause,
        fresh: tuple[str, ChatResponse] | None,
    ) -> bool:
        """Take an answer (or a failure); True when the stage's check refused the answer and
        it must be asked again (``asking.request`` is then the follow-up). Otherwise the
        result is queued for the writer, with every twin of the call."""
        call = asking.call
        if response is not None:
            asking.answers.append(response)
            check = call.check
            problem = check.problem(response.text) if check is not None else None
            if check is not None and problem is not None and len(asking.earlier) < check.reasks:
                asking.earlier.append((response.text, problem))
                asking.request = asking.request.follow_up(response.text, check.message(problem))
                self.summary.reasks += 1
                return True
            if asking.earlier:
                response = merged(asking.answers, asking.earlier)
        elif error == OVER_BUDGET:
            error, cause = BUDGET_RAN_OUT, Cause.BAD_OUTPUT
        self.writer.put(Result(call, response, error, fresh, cause, tuple(asking.taken)))
        for twin in self.twins.get(call.key, ()):  # the same request asked twice in one run
            twin_response = response and response.model_copy(update={"cached": True})
            self.writer.put(Result(twin, twin_response, error, cause=cause))
        return False

    def not_started(self, asking: Asking) -> None:
        """The budget stopped a call before anything was asked for it (nor for its twins)."""
        self.summary.not_started += 1 + len(self.twins.get(asking.call.key, ()))

    async def live(self, asking: Asking) -> None:
        """Ask live until the call has a usable answer, or no more asks are allowed."""
        while True:
            hit = await self.lookup(asking)
            if hit is not None:
                again = self.settle(asking, hit, None, Cause.OTHER, None)
            else:
                response, error, cause = await self.ask(asking.call, asking.request)
                if error == OVER_BUDGET and asking.first:
                    self.not_started(asking)
                    return
                fresh = (asking.key, response) if response is not None else None
                again = self.settle(asking, response, error, cause, fresh)
            if not again:
                return


class Engine:
    """Runs a stage's calls under the study's engine settings, reporting to ``progress``."""

    def __init__(self, store: Store, spec: EngineSpec, progress: ProgressFn | None = None) -> None:
        self.store = store
        self.spec = spec
        self.progress = progress

    async def run(self, calls: Sequence[Call], *, label: str) -> RunSummary:
        """Run every call (cached answers first), recording each result as it arrives."""
        from heart.engine._batching import run_batches

        ordered = sorted(calls, key=lambda c: c.group)
        run = Run(self.store, self.spec, label, len(ordered))
        run.progress = self.progress
        run.endpoint_settings(ordered)
        cached = await asyncio.to_thread(cached_answers, self.store, [c.key for c in ordered])
        run.report()
        run.writer = Writer(self.store, run.summary, lambda _: run.report())
        fresh: dict[str, Call] = {}
        try:
            for call in ordered:
                hit = cached.get(call.key)
                if hit is not None and call.usable(hit):
                    run.summary.cached += 1
                    run.writer.put(Result(call, hit, None))
                elif call.key in fresh:
                    run.twins.setdefault(call.key, []).append(call)
                else:
                    fresh[call.key] = call
            # a call a batch holds is collected from it, whether or not this run batches
            held = await asyncio.to_thread(held_calls, self.store, list(fresh))
            to_batch = {
                key for key, c in fresh.items()
                if batched(c, self.spec) or (key in held and c.model.batches is not None)
            }  # fmt: skip
            live = [Asking(c, c.request) for key, c in fresh.items() if key not in to_batch]
            in_batches = [Asking(c, c.request) for key, c in fresh.items() if key in to_batch]
            await asyncio.gather(
                *(run.live(asking) for asking in live), run_batches(run, in_batches)
            )
        finally:
            for pool in run.pools.values():
                pool.close()
            run.summary.replicas = run.replica_loads()
            await run.writer.close()
            models = {id(call.model): call.model for call in ordered}
            await asyncio.gather(*(model.aclose() for model in models.values()))
        run.total -= run.summary.not_started
        run.report(finished=True)
        if run.broken:
            raise run.broken[0]
        return run.summary


async def run_calls(
    calls: Sequence[Call],
    store: Store,
    *,
    label: str,
    progress: ProgressFn | None = None,
    spec: EngineSpec | None = None,
) -> RunSummary:
    """Run ``calls`` with an engine over ``store`` (default settings unless ``spec`` is given)."""
    return await Engine(store, spec or EngineSpec(), progress).run(calls, label=label)
