"""Running many model calls: the call cache, per-endpoint limits, retries, budget, progress.

Calls are dispatched in ``group`` order, so calls sharing a prompt prefix (the same item) run back
to back. Each answer is written together with the stage's row by one writer thread, in small
transactions: a run killed at any moment leaves only whole results, and a rerun does the rest.
Progress goes to a callback, so the caller decides how (and whether) to show it.
"""

from __future__ import annotations

import asyncio
import contextlib
import random
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from functools import cached_property

from sqlalchemy import delete, insert, select
from sqlalchemy.orm import Session

from heart.config import EngineSpec, Price, ProviderName
from heart.engine._limits import EndpointLimits
from heart.engine._retry import RetryPolicy, call_with_retries
from heart.errors import HeartError
from heart.models import ChatModel, ChatRequest, ChatResponse, call_key
from heart.models._errors import Cause, ModelCallError
from heart.store import CallRow, Store, now_iso


def estimated_tokens_in(request: ChatRequest) -> int:
    """About four characters a token: good enough for limits, budgets and dry runs."""
    return sum(len(m.content) for m in request.messages) // 4 + 8


Recorder = Callable[[Session, ChatResponse | None, str | None], str | None]


@dataclass(frozen=True)
class Check:
    """A stage's test of an answer, and how often a refused answer is asked again.

    ``problem`` returns what is wrong with an answer's text (None when it is usable);
    ``message`` turns that problem into the follow-up message sent with the refused answer.
    """

    problem: Callable[[str], str | None]
    message: Callable[[str], str]
    reasks: int = 1

    @classmethod
    def parses(
        cls, parse: Callable[[str], object], refusal: type[Exception], template: str, reasks: int
    ) -> Check:
        """An answer is usable when ``parse`` accepts it; when ``parse`` raises ``refusal`` its
        message is the problem, sent back as ``template`` with the message at ``{problem}``."""

        def problem(text: str) -> str | None:
            try:
                parse(text)
            except refusal as exc:
                return str(exc)
            return None

        return cls(problem, lambda found: template.replace("{problem}", found), reasks)


@dataclass(frozen=True)
class Call:
    """One model call a stage needs, and where its result goes.

    ``on_result`` writes the stage's row in the transaction that caches the answer; it returns
    the reason when the stage could not use the answer (an empty reply, an invalid verdict).
    An answer is cached only when the stage used it, so a refused one is asked for again next
    run. With a ``check``, a refused answer is first asked again within the run.
    """

    model: ChatModel
    request: ChatRequest
    group: str
    on_result: Recorder
    price: Price = field(default_factory=Price)
    check: Check | None = None

    @cached_property
    def key(self) -> str:
        return call_key(self.model, self.request)

    @property
    def endpoint(self) -> tuple[ProviderName, str]:
        """The (provider, endpoint) whose limits this call passes."""
        return (self.model.provider, self.model.endpoint)

    @cached_property
    def estimated_tokens_in(self) -> int:
        return estimated_tokens_in(self.request)


@dataclass(frozen=True)
class CallFailure:
    """A call that failed for good: why (its cause), the stored reason, and where it went."""

    cause: Cause
    reason: str
    provider: str
    endpoint: str
    model: str


@dataclass
class RunSummary:
    """What a stage's calls did. ``failed`` calls are stored with their reason (never counted)
    and asked again by the next run of the stage, as are the ``not_started`` ones the budget
    stopped."""

    calls: int = 0
    cached: int = 0
    failed: int = 0
    retries: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cost_usd: float = 0.0
    not_started: int = 0
    reasks: int = 0
    failures: list[CallFailure] = field(default_factory=list)

    @property
    def errors(self) -> list[str]:
        """The failed calls' reasons, in the order they were stored."""
        return [f.reason for f in self.failures]

    @property
    def complete(self) -> bool:
        """Every call has a usable answer: none failed and the budget stopped none."""
        return not self.failed and not self.not_started

    def by_cause(self) -> Counter[Cause]:
        """Failed calls per cause, most common first when iterated with ``most_common``."""
        return Counter(f.cause for f in self.failures)

    def add(self, other: RunSummary) -> None:
        """Count ``other``'s calls in with these (a stage that runs the engine several times)."""
        for name in ("calls", "cached", "failed", "retries", "tokens_in", "tokens_out",
                     "not_started", "reasks"):  # fmt: skip
            setattr(self, name, getattr(self, name) + getattr(other, name))
        self.cost_usd += other.cost_usd
        self.failures.extend(other.failures)


class CallsFailed(HeartError):
    """A stage that keeps nothing unless every call is answered stopped; ``calls`` says what
    its calls did (failures by cause included), and the message what was left unchanged."""

    def __init__(self, message: str, calls: RunSummary) -> None:
        super().__init__(message)
        self.calls = calls


@dataclass(frozen=True)
class Progress:
    """Where a stage's calls stand: ``done`` of ``total`` recorded, ``fresh`` of them answered
    by a model in this run (the rest from the cache), and what those cost. The engine reports
    on the thread that runs it, once at the start, after every stored batch, and once
    ``finished``."""

    stage: str
    done: int
    total: int
    fresh: int = 0
    tokens: int = 0
    cost_usd: float = 0.0
    finished: bool = False


ProgressFn = Callable[[Progress], None]


@dataclass(frozen=True)
class PlannedModel:
    """What a dry run expects to spend on one model at one endpoint; ``estimated`` of the new
    calls ask about work not done yet (their prompts, and so tokens in, are estimates)."""

    provider: str
    endpoint: str
    model: str
    calls: int
    cached: int
    tokens_in: int
    max_tokens_out: int
    max_cost_usd: float
    estimated: int = 0


def _usable(call: Call, response: ChatResponse) -> bool:
    return call.check is None or call.check.problem(response.text) is None


_OVER_BUDGET = "over budget"
_Answer = tuple[ChatResponse | None, str | None, Cause]


def _merged(answers: list[ChatResponse], earlier: list[tuple[str, str]]) -> ChatResponse:
    """The last answer, carrying the time and tokens of every ask and the refused answers."""

    def total(values: list[int | None]) -> int | None:
        known = [v for v in values if v is not None]
        return sum(known) if known else None

    return answers[-1].model_copy(
        update={
            "tokens_in": total([a.tokens_in for a in answers]),
            "tokens_out": total([a.tokens_out for a in answers]),
            "latency_ms": sum(a.latency_ms for a in answers),
            "ttft_ms": answers[0].ttft_ms,
            "earlier": tuple(earlier),
        }
    )


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


def plan_calls(
    calls: Sequence[Call], store: Store, estimated: Callable[[Call], bool] | None = None
) -> list[PlannedModel]:
    """A dry run: per endpoint and model, how many calls are new (and how many of those are
    ``estimated``), and their tokens and cost at most."""
    cached = _cached_answers(store, [c.key for c in calls])
    plans: dict[tuple[str, str, str], PlannedModel] = {}
    for call in calls:
        key = (*call.endpoint, call.model.model)
        old = plans.get(key) or PlannedModel(*key, 0, 0, 0, 0, 0.0)
        if call.key in cached and _usable(call, cached[call.key]):
            plans[key] = replace(old, calls=old.calls + 1, cached=old.cached + 1)
            continue
        tokens_in, tokens_out = call.estimated_tokens_in, call.request.max_tokens
        plans[key] = replace(
            old,
            calls=old.calls + 1,
            tokens_in=old.tokens_in + tokens_in,
            max_tokens_out=old.max_tokens_out + tokens_out,
            max_cost_usd=old.max_cost_usd + call.price.cost(tokens_in, tokens_out),
            estimated=old.estimated + bool(estimated and estimated(call)),
        )
    return sorted(plans.values(), key=lambda p: (p.provider, p.endpoint, p.model))


_Result = tuple[Call, ChatResponse | None, str | None, tuple[str, ChatResponse] | None, Cause]


def _failure(call: Call, reason: str | None, error: str | None, cause: Cause) -> CallFailure | None:
    """The failure a stage reported for a result (None: it used the answer): the call's own
    cause when the call failed, else bad output (the stage refused the answer)."""
    if reason is None:
        return None
    return CallFailure(
        cause if error is not None else Cause.BAD_OUTPUT,
        reason,
        call.model.provider,
        call.model.endpoint,
        call.model.model,
    )


class _Writer:
    """Records results in batches: they collect on the event loop and one worker-thread call
    writes each batch, so the loop is not interrupted by a thread hand-off per result. The
    summary and ``on_done`` are updated back on the event loop."""

    WINDOW_S = 0.1  # the longest a result waits before its batch is written

    def __init__(self, store: Store, summary: RunSummary, on_done: Callable[[int], None]) -> None:
        self.store = store
        self.summary = summary
        self.on_done = on_done
        self.pending: list[_Result] = []
        self.closing = asyncio.Event()
        self.task = asyncio.get_running_loop().create_task(self._flush_loop())

    def put(
        self,
        call: Call,
        response: ChatResponse | None,
        error: str | None,
        fresh: tuple[str, ChatResponse] | None = None,
        cause: Cause = Cause.OTHER,
    ) -> None:
        """Queue a result; ``fresh`` is the new answer to cache (its request's key and the
        answer itself) once the stage has used it; ``cause`` is why the call failed, when
        ``error`` says it did (a failure the stage finds in an answer is bad output)."""
        self.pending.append((call, response, error, fresh, cause))

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

    def _write(self, results: list[_Result]) -> list[CallFailure | None]:
        """Store a batch in one transaction; returns each result's failure (None: used)."""
        stamp = now_iso()
        with self.store.session() as session:
            failures = [
                _failure(call, call.on_result(session, response, error), error, cause)
                for call, response, error, _, cause in results
            ]
            answers = {
                fresh[0]: {
                    "hash": fresh[0],
                    "provider": call.model.provider,
                    "endpoint": call.model.endpoint,
                    "model": call.model.model,
                    "response": fresh[1].model_dump(mode="json", exclude={"cached", "earlier"}),
                    "created_at": stamp,
                }
                for (call, _, _, fresh, _), failure in zip(results, failures, strict=True)
                if fresh is not None and failure is None
            }
            if answers:  # a newer answer replaces one cached but refused on a check
                session.execute(delete(CallRow).where(CallRow.hash.in_(list(answers))))
                session.execute(insert(CallRow), list(answers.values()))
        return failures


class Engine:
    """Runs a stage's calls under the study's engine settings, reporting to ``progress``."""

    def __init__(self, store: Store, spec: EngineSpec, progress: ProgressFn | None = None) -> None:
        self.store = store
        self.spec = spec
        self.progress = progress
        self.rng = random.Random(0)

    async def run(self, calls: Sequence[Call], *, label: str) -> RunSummary:
        """Run every call (cached answers first), recording each result as it arrives."""
        summary = RunSummary()
        ordered = sorted(calls, key=lambda c: c.group)
        cached = await asyncio.to_thread(_cached_answers, self.store, [c.key for c in ordered])
        settings = {e: self.spec.settings(*e) for e in {c.endpoint for c in ordered}}
        limits = {
            e: EndpointLimits(s.concurrency, s.requests_per_minute, s.tokens_per_minute)
            for e, s in settings.items()
        }
        policies = {
            e: RetryPolicy(s.max_retries, s.backoff_base_s, s.backoff_cap_s, s.timeout_s)
            for e, s in settings.items()
        }
        budget = self.spec.budget_usd
        committed = 0.0  # spent plus reserved for calls in flight
        total = len(ordered)
        progress = self.progress
        broken: list[Exception] = []

        def report(finished: bool = False) -> None:
            """Tell the callback (on the event loop's thread); one that fails is not called
            again, and its error is raised once every answer is stored."""
            nonlocal progress
            if progress is None:
                return
            try:
                progress(
                    Progress(label, summary.calls, total, summary.calls - summary.cached,
                             summary.tokens_in + summary.tokens_out, summary.cost_usd, finished)
                )  # fmt: skip
            except Exception as exc:
                progress = None
                broken.append(exc)

        async def ask(call: Call, request: ChatRequest) -> _Answer:
            """One request under its endpoint's limits, retry policy and the budget."""
            nonlocal committed
            policy, gate = policies[call.endpoint], limits[call.endpoint]
            tokens_in = estimated_tokens_in(request)
            async with gate.slots:
                estimate = call.price.cost(tokens_in, request.max_tokens)
                if budget is not None and committed + estimate > budget:
                    return None, _OVER_BUDGET, Cause.OTHER
                committed += estimate
                await gate.admit(tokens_in + request.max_tokens)
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
                summary.retries += tries - 1
            cost = 0.0
            if response is not None:
                summary.tokens_in += response.tokens_in or 0
                summary.tokens_out += response.tokens_out or 0
                cost = call.price.cost(response.tokens_in, response.tokens_out)
                summary.cost_usd += cost
            committed += cost - estimate
            return response, error, cause

        async def one(call: Call) -> None:
            response, error, cause = await ask(call, call.request)
            if error is _OVER_BUDGET:
                summary.not_started += 1 + len(twins.get(call.key, ()))
                return
            fresh = (call.key, response) if response is not None else None
            answers = [response] if response is not None else []
            earlier: list[tuple[str, str]] = []
            request = call.request
            while response is not None and call.check is not None:
                problem = call.check.problem(response.text)
                if problem is None or len(earlier) >= call.check.reasks:
                    break
                earlier.append((response.text, problem))
                request = request.follow_up(response.text, call.check.message(problem))
                key = call_key(call.model, request)
                summary.reasks += 1
                hit = (await asyncio.to_thread(_cached_answers, self.store, [key])).get(key)
                if hit is not None and _usable(call, hit):
                    response, fresh = hit, None
                else:
                    response, error, cause = await ask(call, request)
                    fresh = (key, response) if response is not None else None
                if response is not None:
                    answers.append(response)
                elif error is _OVER_BUDGET:
                    error = "the budget ran out before the refused answer could be asked again"
                    cause = Cause.BAD_OUTPUT
            if earlier and response is not None:
                response = _merged(answers, earlier)
            writer.put(call, response, error, fresh, cause)
            for twin in twins.get(call.key, ()):  # the same request asked twice in one run
                twin_response = response and response.model_copy(update={"cached": True})
                writer.put(twin, twin_response, error, cause=cause)

        report()
        writer = _Writer(self.store, summary, lambda _: report())
        fresh: dict[str, Call] = {}
        twins: dict[str, list[Call]] = {}
        try:
            for call in ordered:
                hit = cached.get(call.key)
                if hit is not None and _usable(call, hit):
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
        total -= summary.not_started
        report(finished=True)
        if broken:
            raise broken[0]
        return summary


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
