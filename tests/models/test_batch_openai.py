"""OpenAI's Batch API through the real `openai` SDK against the fake server: a batch's answers
are the live answers, and each way a batch goes wrong reaches the engine as it should."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from heart.models import BatchResult, BatchStatus
from heart.models._errors import Cause, ModelCallError
from tests.fakes.fault_server import PROSE_TEXT, FaultServer
from tests.models.wire import IDS, SINCE, ask, drive, openai_model, run

pytest.importorskip("openai")


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer() as fault_server:
        yield fault_server


def _drive(server: FaultServer, texts: list[str], **options: Any) -> Any:
    return drive(openai_model(server), server, texts, **options)


def test_a_batch_answers_as_live_calls_do_and_is_billed_as_a_batch(server: FaultServer) -> None:
    texts = ["I lost my job today", "my sister is ill", "I cannot sleep"]
    model = openai_model(server)

    async def live() -> list[str]:
        return [(await model.complete(ask(t))).text for t in texts]

    answers = run(model, live)
    remote, seen, results = _drive(server, texts)
    assert [s.state for s in seen] == ["open", "ended"]
    assert seen[0] == BatchStatus(remote, "open", total=3, succeeded=2, errored=0)
    assert seen[1] == BatchStatus(remote, "ended", total=3, succeeded=3, errored=0)
    by_id = {r.custom_id: r for r in results}
    assert sorted(by_id) == IDS[:3]
    for i, text in enumerate(answers):
        response = by_id[IDS[i]].response
        assert response is not None and by_id[IDS[i]].error is None
        assert response.text == text
        assert response.batch_id == remote and response.latency_ms == 0
        assert response.tokens_in == len(f"Be kind. {texts[i]}".split())
        assert response.tokens_out == len(text.split())
    # each request counted as one attempt of its own, marked with the batch
    batch_records = [r for r in server.requests if r.batch_id == remote]
    assert [r.attempt for r in batch_records] == [2, 2, 2]
    (fake,) = server.batches
    assert fake.metadata == {"heart_batch": "b1"}
    sent = server.batch_desk.file_content(fake.input_file_id).decode().splitlines()
    assert [json.loads(line) for line in sent] == [
        {
            "custom_id": IDS[i],
            "method": "POST",
            "url": "/v1/chat/completions",
            "body": model.arguments(ask(t)),
        }
        for i, t in enumerate(texts)
    ]


def test_each_request_fault_becomes_the_error_a_live_call_would_give(
    server: FaultServer,
) -> None:
    texts = ["a [[faults: 500]]", "b [[faults: 400]]", "c [[faults: hang]]", "d [[faults: prose]]"]
    _, seen, results = _drive(server, texts)
    assert seen[-1].succeeded == 1 and seen[-1].errored == 3
    by_id = {r.custom_id: r for r in results}
    errors = [by_id[IDS[i]].error for i in range(3)]
    assert [(e.status, e.retryable) for e in errors if e is not None] == [
        (500, True),
        (400, False),
        (500, True),
    ]
    assert errors[1] is not None and errors[1].cause is Cause.BAD_REQUEST
    prose = by_id[IDS[3]].response
    assert prose is not None and prose.text == PROSE_TEXT


def test_an_expired_batch_keeps_its_first_half_and_leaves_the_rest_out(
    server: FaultServer,
) -> None:
    _, seen, results = _drive(server, ["a", "b", "c", "d", "e"], fault="expire")
    assert seen[-1].state == "expired"
    assert sorted(r.custom_id for r in results) == IDS[:2]
    assert all(r.response is not None for r in results)


def test_a_batch_that_fails_halfway_gives_retryable_errors_for_its_second_half(
    server: FaultServer,
) -> None:
    _, seen, results = _drive(server, ["a", "b", "c", "d"], fault="fail-half")
    assert seen[-1] == BatchStatus(seen[-1].remote_id, "ended", 4, succeeded=2, errored=2)
    by_id = {r.custom_id: r for r in results}
    assert [by_id[i].response is not None for i in IDS[:4]] == [True, True, False, False]
    assert all(by_id[i].error is not None and by_id[i].error.retryable for i in IDS[2:4])


def test_a_malformed_line_loses_only_its_own_request(server: FaultServer) -> None:
    _, _, results = _drive(server, ["a", "b", "c"], fault="malformed-line")
    by_id = {r.custom_id: r for r in results}
    assert sorted(by_id) == IDS[:3]
    broken = by_id[IDS[0]].error
    assert broken is not None and broken.retryable and broken.cause is Cause.SERVER
    assert all(by_id[i].response is not None for i in IDS[1:3])


def test_a_refused_batch_fails_with_the_reason(server: FaultServer) -> None:
    _, seen, results = _drive(server, ["a", "b"], polls=1, fault="refuse")
    assert seen[0].state == "failed" and "scripted refusal" in seen[0].detail
    assert results == []
    assert server.attempts("a") == 0  # nothing was answered


def test_a_batch_refused_at_creation_raises_a_model_call_error(server: FaultServer) -> None:
    with pytest.raises(ModelCallError) as caught:
        _drive(server, ["a"], fault="refuse:429")
    assert caught.value.status == 429 and caught.value.retryable


def test_a_slow_batch_stays_open_until_its_last_poll(server: FaultServer) -> None:
    _, seen, results = _drive(server, ["a", "b", "c", "d"], polls=4, fault="slow:4")
    assert [s.state for s in seen] == ["open", "open", "open", "ended"]
    assert [s.succeeded for s in seen] == [1, 2, 3, 4]
    assert len(results) == 4


def test_cancel_keeps_what_was_answered(server: FaultServer) -> None:
    model = openai_model(server)
    server.fault_next_batch("slow:4")

    async def work() -> tuple[BatchStatus, BatchStatus, list[BatchResult], BatchStatus]:
        assert model.batches is not None
        remote = await model.batches.submit([(IDS[i], ask(t)) for i, t in enumerate("abcd")], "c")
        await model.batches.status(remote)  # one of four answered
        cancelling = await model.batches.cancel(remote)
        cancelled = await model.batches.status(remote)
        again = await model.batches.cancel(remote)  # already over: its status, no error
        return cancelling, cancelled, await model.batches.results(remote), again

    cancelling, cancelled, results, again = run(model, work)
    assert cancelling.state == "open" and cancelled.state == "cancelled" == again.state
    assert [r.custom_id for r in results] == IDS[:1]


def test_find_adopts_the_batch_submitted_under_a_label(server: FaultServer) -> None:
    model = openai_model(server)

    async def work() -> list[str | None]:
        assert model.batches is not None
        other = await model.batches.submit([(IDS[0], ask("x"))], "other")
        remote = await model.batches.submit([(IDS[0], ask("x")), (IDS[1], ask("y"))], "mine")
        # while OpenAI validates a batch it counts no requests: the label alone finds it
        validating = await model.batches.find("mine", 2, SINCE)
        await model.batches.status(remote)
        await model.batches.status(other)
        return [
            remote,
            other,
            validating,
            await model.batches.find("mine", 2, SINCE),
            await model.batches.find("other", 1, SINCE),
            await model.batches.find("mine", 3, SINCE),
            await model.batches.find("nobody", 2, SINCE),
            await model.batches.find("mine", 2, "2999-01-01T00:00:00Z"),
        ]

    remote, other, validating, mine, theirs, wrong_size, nobody, later = run(model, work)
    assert (validating, mine, theirs) == (remote, remote, other)
    assert wrong_size is None and nobody is None and later is None


def test_an_unknown_batch_is_a_not_found_error(server: FaultServer) -> None:
    model = openai_model(server)

    async def work() -> BatchStatus:
        assert model.batches is not None
        return await model.batches.status("batch_nope")

    with pytest.raises(ModelCallError) as caught:
        run(model, work)
    assert caught.value.status == 404 and not caught.value.retryable


def test_a_server_that_is_down_is_a_retryable_connection_error() -> None:
    with FaultServer() as gone:
        model = openai_model(gone)
    # the server has stopped: its port refuses connections

    async def work() -> BatchStatus:
        assert model.batches is not None
        return await model.batches.status("batch_x")

    with pytest.raises(ModelCallError) as caught:
        run(model, work)
    assert caught.value.retryable and caught.value.cause is Cause.CONNECTION
