"""Anthropic's Message Batches through the real `anthropic` SDK against the fake server: a
batch's answers are the live answers, and each way a batch goes wrong reaches the engine as it
should."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from heart.models import BatchResult, BatchStatus
from heart.models._errors import Cause, ModelCallError
from tests.fakes.fault_server import FaultServer
from tests.models.wire import IDS, SINCE, anthropic_model, ask, drive, run

pytest.importorskip("anthropic")


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer() as fault_server:
        yield fault_server


def _drive(server: FaultServer, texts: list[str], **options: Any) -> Any:
    return drive(anthropic_model(server), server, texts, **options)


def test_a_batch_answers_as_live_calls_do_and_is_billed_as_a_batch(server: FaultServer) -> None:
    texts = ["I lost my job today", "my sister is ill", "I cannot sleep"]
    model = anthropic_model(server)

    async def live() -> list[str]:
        return [(await model.complete(ask(t))).text for t in texts]

    answers = run(model, live)
    remote, seen, results = _drive(server, texts)
    # Anthropic counts requests by outcome only once the batch has ended
    assert seen[0] == BatchStatus(remote, "open", total=3)
    assert seen[1] == BatchStatus(remote, "ended", total=3, succeeded=3)
    by_id = {r.custom_id: r for r in results}
    assert sorted(by_id) == IDS[:3]
    for i, text in enumerate(answers):
        response = by_id[IDS[i]].response
        assert response is not None and response.text == text
        assert response.batch_id == remote and response.latency_ms == 0
        assert response.tokens_in == len(f"Be kind. {texts[i]}".split())
    assert [r.attempt for r in server.requests if r.batch_id == remote] == [2, 2, 2]
    (fake,) = server.batches
    assert [body for _, body in fake.requests] == [model.arguments(ask(t)) for t in texts]


def test_each_request_fault_becomes_the_error_a_live_call_would_give(
    server: FaultServer,
) -> None:
    texts = ["a [[faults: 529]]", "b [[faults: 400]]", "c [[faults: cut]]", "d"]
    _, seen, results = _drive(server, texts)
    assert (seen[-1].succeeded, seen[-1].errored) == (1, 3)
    by_id = {r.custom_id: r for r in results}
    errors = [by_id[IDS[i]].error for i in range(3)]
    assert [(e.status, e.retryable) for e in errors if e is not None] == [
        (529, True),
        (400, False),
        (500, True),
    ]
    assert by_id[IDS[3]].response is not None


def test_an_expired_batch_keeps_its_first_half_and_leaves_the_rest_out(
    server: FaultServer,
) -> None:
    _, seen, results = _drive(server, ["a", "b", "c", "d"], fault="expire")
    assert seen[-1].state == "ended" and seen[-1].succeeded == 2
    assert sorted(r.custom_id for r in results) == IDS[:2]


def test_a_batch_where_every_request_expired_is_expired(server: FaultServer) -> None:
    _, seen, results = _drive(server, ["a"], fault="expire")
    assert seen[-1].state == "expired" and results == []


def test_a_batch_that_fails_halfway_gives_retryable_errors_for_its_second_half(
    server: FaultServer,
) -> None:
    _, seen, results = _drive(server, ["a", "b", "c", "d"], fault="fail-half")
    assert (seen[-1].succeeded, seen[-1].errored) == (2, 2)
    by_id = {r.custom_id: r for r in results}
    assert all(by_id[i].error is not None and by_id[i].error.status == 500 for i in IDS[2:4])
    assert all(by_id[i].error is not None and by_id[i].error.retryable for i in IDS[2:4])


def test_a_malformed_line_loses_only_its_own_request(server: FaultServer) -> None:
    # the SDK's own results reader raises at the bad line and loses every line after it
    _, _, results = _drive(server, ["a", "b", "c"], fault="malformed-line")
    by_id = {r.custom_id: r for r in results}
    assert sorted(by_id) == IDS[:3]
    broken = by_id[IDS[0]].error
    assert broken is not None and broken.retryable and broken.cause is Cause.SERVER
    assert all(by_id[i].response is not None for i in IDS[1:3])


def test_a_refused_batch_raises_a_model_call_error(server: FaultServer) -> None:
    with pytest.raises(ModelCallError) as caught:
        _drive(server, ["a"], fault="refuse")
    assert caught.value.status == 400 and not caught.value.retryable
    with pytest.raises(ModelCallError) as caught:
        _drive(server, ["a"], fault="refuse:529")
    assert caught.value.status == 529 and caught.value.retryable


def test_a_slow_batch_stays_open_until_its_last_poll(server: FaultServer) -> None:
    _, seen, results = _drive(server, ["a", "b", "c"], polls=3, fault="slow:3")
    assert [s.state for s in seen] == ["open", "open", "ended"]
    assert len(results) == 3


def test_cancel_keeps_what_was_answered(server: FaultServer) -> None:
    model = anthropic_model(server)
    server.fault_next_batch("slow:4")

    async def work() -> tuple[BatchStatus, BatchStatus, list[BatchResult]]:
        assert model.batches is not None
        remote = await model.batches.submit([(IDS[i], ask(t)) for i, t in enumerate("abcd")], "c")
        await model.batches.status(remote)  # one of four answered
        await model.batches.status(remote)  # two of four
        cancelling = await model.batches.cancel(remote)
        cancelled = await model.batches.status(remote)
        return cancelling, cancelled, await model.batches.results(remote)

    cancelling, cancelled, results = run(model, work)
    assert cancelling.state == "open"
    assert cancelled == BatchStatus(cancelled.remote_id, "cancelled", total=4, succeeded=2)
    assert sorted(r.custom_id for r in results) == IDS[:2]


def test_find_adopts_the_one_batch_of_that_size(server: FaultServer) -> None:
    model = anthropic_model(server)

    async def work() -> list[str | None]:
        assert model.batches is not None
        two = await model.batches.submit([(IDS[0], ask("x")), (IDS[1], ask("y"))], "two")
        found = await model.batches.find("two", 2, SINCE)
        none = await model.batches.find("three", 3, SINCE)
        later = await model.batches.find("two", 2, "2999-01-01T00:00:00Z")
        await model.batches.submit([(IDS[2], ask("z")), (IDS[3], ask("w"))], "again")
        ambiguous = await model.batches.find("two", 2, SINCE)
        return [two, found, none, later, ambiguous]

    two, found, none, later, ambiguous = run(model, work)
    assert found == two
    assert none is None and later is None
    assert ambiguous is None  # two batches of two: which one is ours cannot be told


def test_a_custom_id_the_api_refuses_is_a_bad_request(server: FaultServer) -> None:
    model = anthropic_model(server)

    async def work() -> str:
        assert model.batches is not None
        return await model.batches.submit([("not a valid id!", ask("x"))], "bad")

    with pytest.raises(ModelCallError) as caught:
        run(model, work)
    assert caught.value.status == 400 and "custom_id" in str(caught.value)


def test_batch_errors_never_show_the_api_key(
    server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = "sk-ant-secret-0123456789"
    monkeypatch.setenv("HEART_TEST_KEY", secret)
    model = anthropic_model(server, api_key_env="HEART_TEST_KEY")

    async def work() -> str:
        assert model.batches is not None
        # the server's message quotes the repeated custom_id, here the key itself
        return await model.batches.submit([(secret, ask("x")), (secret, ask("y"))], "leak")

    with pytest.raises(ModelCallError) as caught:
        run(model, work)
    assert caught.value.status == 400
    assert secret not in str(caught.value) and "[redacted]" in str(caught.value)
