"""Calls through provider batch APIs (the fake server speaks OpenAI's and Anthropic's): billed
at the batch price, recorded before they are submitted, resumed by polling, never sent twice;
failed, expired and unreadable requests go back to the queue; refused answers are asked again."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from heart.config import BatchSettings, EngineSpec, ModelSpec, Price, ProviderSettings
from heart.engine import Call, Check, Engine, RunSummary, stored_batches
from heart.models import ChatModel, ChatRequest, ChatResponse, Message, make_chat_model
from heart.store import BatchCallRow, CallRow, Store

from ..fakes.fault_server import FaultServer

PRICE = Price(input_per_mtok=2.0, output_per_mtok=8.0)
PROVIDERS = ("openai", "anthropic")


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(batch_polls=2) as fault_server:
        yield fault_server


@pytest.fixture(autouse=True)
def _keys(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local-batch")
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-local-batch")


def _model(server: FaultServer, provider: str, **options: Any) -> ChatModel:
    url = server.openai_base_url if provider == "openai" else server.anthropic_base_url
    return make_chat_model(
        ModelSpec(provider=provider, base_url=url, model=f"{provider}-m", price=PRICE, **options)  # type: ignore[arg-type]
    )


def _spec(**batch: Any) -> EngineSpec:
    fast = ProviderSettings(max_retries=2, backoff_base_s=0.0, timeout_s=10)
    return EngineSpec(
        providers={"openai": fast, "anthropic": fast},
        batch=BatchSettings(enabled=True, poll_s=0.01, **batch),
    )


def _calls(
    model: ChatModel, n: int, got: dict[str, str | None], check: Check | None = None
) -> list[Call]:
    def record(i: int) -> Any:
        def on_result(_s: Session, response: ChatResponse | None, error: str | None) -> str | None:
            got[f"q{i}"] = response.text if response is not None else None
            return error

        return on_result

    return [
        Call(
            model=model,
            request=ChatRequest(
                messages=(Message(role="user", content=f"question {i} about my week"),)
            ),
            group=f"{i:03d}",
            on_result=record(i),
            price=PRICE,
            check=check,
        )
        for i in range(n)
    ]


def _run(store: Store, calls: list[Call], spec: EngineSpec) -> RunSummary:
    return asyncio.run(Engine(store, spec).run(calls, label="ask"))


def _live_paths(server: FaultServer) -> list[str]:
    return [r.path for r in server.requests if r.path.endswith(("/chat/completions", "/messages"))]


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_batch_run_answers_every_call_at_the_batch_price_and_a_rerun_sends_nothing(
    store: Store, server: FaultServer, provider: str
) -> None:
    got: dict[str, str | None] = {}
    summary = _run(store, _calls(_model(server, provider), 5, got), _spec())
    assert (summary.calls, summary.failed, summary.cached) == (5, 0, 0)
    assert got == {
        f"q{i}": f"I hear how hard this is. question {i} about my week" for i in range(5)
    }
    assert _live_paths(server) == []  # nothing went live
    assert len(server.batches) == 1
    # billed at half the list price of the tokens the server reported
    tokens_in, tokens_out = summary.tokens_in, summary.tokens_out
    assert summary.cost_usd == pytest.approx(0.5 * (2 * tokens_in + 8 * tokens_out) / 1e6)
    with store.session() as session:
        answers = list(session.scalars(select(CallRow)))
        states = set(session.scalars(select(BatchCallRow.state)))
    assert len(answers) == 5 and states == {"used"}
    assert {a.response["batch_id"] for a in answers} == {server.batches[0].id}
    [batch] = stored_batches(store, everything=True)
    assert (batch.state, batch.total, batch.succeeded, batch.remote_id) == (
        "ended", 5, 5, server.batches[0].id)  # fmt: skip
    assert stored_batches(store) == []  # none open

    again: dict[str, str | None] = {}
    rerun = _run(store, _calls(_model(server, provider), 5, again), _spec())
    assert (rerun.cached, len(server.batches)) == (5, 1)
    assert again == got


@pytest.mark.parametrize("fault", ["expire", "fail-half", "malformed-line"])
@pytest.mark.parametrize("provider", PROVIDERS)
def test_unanswered_and_failed_requests_go_to_the_next_batch(
    store: Store, server: FaultServer, provider: str, fault: str
) -> None:
    server.fault_next_batch(fault)
    got: dict[str, str | None] = {}
    summary = _run(store, _calls(_model(server, provider), 6, got), _spec())
    assert (summary.calls, summary.failed) == (6, 0)
    assert all(text and text.startswith("I hear") for text in got.values())
    _, second = server.batches
    again = len(second.requests)
    assert again == (1 if fault == "malformed-line" else 3)  # half expired or failed
    assert summary.retries == again
    assert _live_paths(server) == []


@pytest.mark.parametrize("provider", PROVIDERS)
def test_failed_requests_go_live_when_set(store: Store, server: FaultServer, provider: str) -> None:
    server.fault_next_batch("expire")
    got: dict[str, str | None] = {}
    summary = _run(store, _calls(_model(server, provider), 4, got), _spec(failed_calls="live"))
    assert (summary.calls, summary.failed) == (4, 0)
    assert len(server.batches) == 1 and len(_live_paths(server)) == 2
    with store.session() as session:
        billed = {r.hash: r.response["batch_id"] for r in session.scalars(select(CallRow))}
    assert sorted(v is None for v in billed.values()) == [False, False, True, True]


def test_a_refused_batch_fails_its_calls_with_the_reason_and_keeps_nothing_open(
    store: Store, server: FaultServer
) -> None:
    server.fault_next_batch("refuse:400")
    got: dict[str, str | None] = {}
    summary = _run(store, _calls(_model(server, "openai"), 3, got), _spec())
    assert (summary.calls, summary.failed) == (3, 3)
    assert all("the provider refused the batch: HTTP 400" in r for r in summary.errors)
    [batch] = stored_batches(store, everything=True)
    assert batch.state == "failed" and "HTTP 400" in batch.detail
    # the next run sends them again, in a new batch
    summary = _run(store, _calls(_model(server, "openai"), 3, got), _spec())
    assert (summary.calls, summary.failed) == (3, 0)


def test_an_endpoint_without_a_batch_api_says_how_to_run_it_live(
    store: Store, server: FaultServer
) -> None:
    server.fault_next_batch("refuse:404")
    summary = _run(store, _calls(_model(server, "openai"), 2, {}), _spec())
    assert summary.failed == 2
    assert all(
        r.endswith(f"if {server.openai_base_url} has no batch API, set its engine.endpoints "
                   "entry to batch: false (or run without --batch)")
        for r in summary.errors
    ), summary.errors  # fmt: skip


def test_a_refused_answer_is_asked_again_in_the_next_batch(
    store: Store, server: FaultServer
) -> None:
    server.set_plan("question 1 ", "prose")  # the first answer is not what the check wants
    check = Check(
        problem=lambda text: None if text.startswith("I hear") else "start with 'I hear'",
        message=lambda problem: f"Please fix this: {problem}",
        reasks=1,
    )
    got: dict[str, str | None] = {}
    summary = _run(store, _calls(_model(server, "anthropic"), 3, got, check), _spec())
    assert (summary.calls, summary.failed, summary.reasks) == (3, 0, 1)
    first, second = server.batches
    assert len(first.requests) == 3 and len(second.requests) == 1
    assert got["q1"] is not None and got["q1"].startswith("I hear")


def test_the_budget_prices_batch_calls_at_the_batch_price(
    store: Store, server: FaultServer
) -> None:
    """Each call is held at most (estimate, 128 tokens out) x 8 $/Mtok x 0.5: four fit in a
    budget a live run could fit only two in."""
    calls = _calls(_model(server, "openai"), 6, {})
    held = calls[0].price.cost(calls[0].estimated_tokens_in, 128)
    spec = _spec().model_copy(update={"budget_usd": 2.2 * held})
    summary = _run(store, calls, spec)
    assert (summary.calls, summary.not_started) == (4, 2)


def test_a_run_stopped_after_submitting_resumes_by_polling_and_submits_nothing_again(
    store: Store, server: FaultServer
) -> None:
    server.fault_next_batch("slow:1000")
    got: dict[str, str | None] = {}

    async def stop_once_open() -> None:
        task = asyncio.create_task(
            Engine(store, _spec()).run(_calls(_model(server, "openai"), 4, got), label="ask")
        )
        while not stored_batches(store) or stored_batches(store)[0].state != "open":
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(stop_once_open())
    assert got == {} and len(server.batches) == 1
    [held] = stored_batches(store)
    assert (held.state, held.remote_id) == ("open", server.batches[0].id)

    server.batches[0].polls_to_end = server.batches[0].polls + 1  # the provider finishes it
    summary = _run(store, _calls(_model(server, "openai"), 4, got), _spec())
    assert (summary.calls, summary.failed, summary.cached) == (4, 0, 0)
    assert len(server.batches) == 1  # polled, never sent again
    assert len(got) == 4 and stored_batches(store) == []


class _Killed(BaseException):
    """The process dying at one exact point."""


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_submission_cut_off_before_its_id_was_kept_is_found_and_not_sent_again(
    store: Store, server: FaultServer, provider: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    from heart.engine import _batch_store

    kept = _batch_store.record_open

    def die(*_args: object) -> None:
        raise _Killed

    monkeypatch.setattr(_batch_store, "record_open", die)
    with pytest.raises(_Killed):
        _run(store, _calls(_model(server, provider), 3, {}), _spec())
    [cut] = stored_batches(store)
    assert (cut.state, cut.remote_id, len(server.batches)) == ("submitting", None, 1)

    monkeypatch.setattr(_batch_store, "record_open", kept)
    got: dict[str, str | None] = {}
    summary = _run(store, _calls(_model(server, provider), 3, got), _spec())
    assert (summary.calls, summary.failed, len(server.batches)) == (3, 0, 1)
    [found] = stored_batches(store, everything=True)
    assert (found.id, found.remote_id, found.state) == (cut.id, server.batches[0].id, "ended")


def test_a_cut_off_submission_is_told_apart_from_the_studys_other_batches_of_its_size(
    store: Store, server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Anthropic keeps no label: the batch found is the one of that size the store does not
    hold already, even when another of the same size was sent a moment before."""
    from heart.engine import _batch_store

    model = _model(server, "anthropic")
    assert _run(store, _calls(model, 2, {}), _spec()).failed == 0  # a batch of 2, recorded
    kept = _batch_store.record_open

    def die(*_args: object) -> None:
        raise _Killed

    other = [
        Call(model=c.model, request=c.request.model_copy(update={"max_tokens": 64}),
             group=c.group, on_result=c.on_result, price=c.price)
        for c in _calls(model, 2, {})
    ]  # fmt: skip
    monkeypatch.setattr(_batch_store, "record_open", die)
    with pytest.raises(_Killed):
        _run(store, other, _spec())
    monkeypatch.setattr(_batch_store, "record_open", kept)
    summary = _run(store, other, _spec())
    assert (summary.calls, summary.failed, len(server.batches)) == (2, 0, 2)  # none sent twice


@pytest.mark.parametrize("provider", PROVIDERS)
def test_a_submission_whose_answer_was_lost_is_found_not_sent_again(
    store: Store, server: FaultServer, provider: str
) -> None:
    """The provider made the batch, but its answer never came: the batch is looked for, found
    and polled; a blind retry would have paid for every call twice."""
    from heart.models._errors import ModelCallError

    model = _model(server, provider)
    api = model.batches
    assert api is not None
    made = api.submit

    async def lost(*args: Any, **kwargs: Any) -> str:
        await made(*args, **kwargs)
        raise ModelCallError("the connection dropped", retryable=True)

    api.submit = lost  # type: ignore[method-assign]
    got: dict[str, str | None] = {}
    summary = _run(store, _calls(model, 3, got), _spec())
    assert (summary.calls, summary.failed, len(server.batches)) == (3, 0, 1)
    assert len(got) == 3 and all(got.values())


def test_a_run_without_batches_collects_what_a_stopped_batch_run_submitted(
    store: Store, server: FaultServer
) -> None:
    server.fault_next_batch("slow:1000")

    async def stop_once_open() -> None:
        calls = _calls(_model(server, "openai"), 3, {})
        task = asyncio.create_task(Engine(store, _spec()).run(calls, label="ask"))
        while not stored_batches(store) or stored_batches(store)[0].state != "open":
            await asyncio.sleep(0.01)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task

    asyncio.run(stop_once_open())
    server.batches[0].polls_to_end = server.batches[0].polls + 1
    live = _spec().model_copy(update={"batch": BatchSettings(enabled=False, poll_s=0.01)})
    got: dict[str, str | None] = {}
    summary = _run(store, _calls(_model(server, "openai"), 3, got), live)
    assert (summary.calls, summary.failed, len(got)) == (3, 0, 3)
    assert _live_paths(server) == [] and len(server.batches) == 1  # nothing asked twice


def test_a_batch_its_provider_no_longer_knows_is_sent_again(
    store: Store, server: FaultServer
) -> None:
    from heart.models._errors import ModelCallError

    model = _model(server, "anthropic")
    api = model.batches
    assert api is not None
    status = api.status
    lost: list[str] = []

    async def forgetful(remote_id: str) -> Any:
        if not lost:
            lost.append(remote_id)
            raise ModelCallError("HTTP 404: no such batch", retryable=False, status=404)
        return await status(remote_id)

    api.status = forgetful  # type: ignore[method-assign]
    got: dict[str, str | None] = {}
    summary = _run(store, _calls(model, 2, got), _spec())
    assert (summary.calls, summary.failed, len(server.batches)) == (2, 0, 2)
    first = next(b for b in stored_batches(store, everything=True) if b.remote_id == lost[0])
    assert first.state == "failed" and "the provider lost it" in first.detail
