"""The fake server's batch APIs, driven through the real `openai` and `anthropic` SDKs: the
objects, files and result lines they return are the shapes the providers document."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import pytest

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

from tests.fakes.fake_batches import BatchFault, parse_batch_fault  # noqa: E402
from tests.fakes.fault_server import FaultServer  # noqa: E402


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv


def oai(server: FaultServer) -> Any:
    return openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="sk-test", max_retries=0)


def ant(server: FaultServer) -> Any:
    return anthropic.AsyncAnthropic(
        base_url=server.anthropic_base_url, api_key="test", max_retries=0
    )


def line(custom_id: str, text: str, **extra: Any) -> dict[str, Any]:
    body = {"model": "m", "messages": [{"role": "user", "content": text}]}
    item = {"custom_id": custom_id, "method": "POST", "url": "/v1/chat/completions", "body": body}
    return item | extra


async def openai_batch(client: Any, lines: list[dict[str, Any]] | bytes, **kw: Any) -> Any:
    data = lines if isinstance(lines, bytes) else "\n".join(map(json.dumps, lines)).encode()
    upload = await client.files.create(file=("in.jsonl", data), purpose="batch")
    return await client.batches.create(
        input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h", **kw
    )


def params(text: str) -> dict[str, Any]:
    return {"model": "m", "max_tokens": 16, "messages": [{"role": "user", "content": text}]}


def test_openai_file_upload_round_trip(server: FaultServer) -> None:
    async def go() -> tuple[Any, Any, bytes]:
        c = oai(server)
        upload = await c.files.create(file=("in.jsonl", b'{"a": 1}\n'), purpose="batch")
        return upload, await c.files.retrieve(upload.id), (await c.files.content(upload.id)).content

    upload, again, content = asyncio.run(go())
    assert upload.purpose == "batch" and upload.bytes == 9 and upload.filename == "in.jsonl"
    assert again.id == upload.id and content == b'{"a": 1}\n'


def test_openai_batch_lifecycle_and_files(server: FaultServer) -> None:
    async def go() -> tuple[list[Any], str, str]:
        c = oai(server)
        batch = await openai_batch(
            c, [line("a", "hello there"), line("b", "x [[faults: 429]]")], metadata={"k": "v"}
        )
        seen = [batch] + [await c.batches.retrieve(batch.id) for _ in range(3)]
        out = (await c.files.content(seen[-1].output_file_id)).text
        err = (await c.files.content(seen[-1].error_file_id)).text
        return seen, out, err

    seen, out, err = asyncio.run(go())
    assert [b.status for b in seen] == ["validating", "in_progress", "completed", "completed"]
    assert seen[0].request_counts.total == 0  # nothing counted while validating
    assert seen[-1].request_counts.model_dump() == {"total": 2, "completed": 1, "failed": 1}
    assert seen[-1].metadata == {"k": "v"} and seen[-1].completed_at is not None
    (ok,) = map(json.loads, out.splitlines())
    assert ok["custom_id"] == "a" and ok["error"] is None
    assert ok["response"]["status_code"] == 200
    completion = openai.types.chat.ChatCompletion.model_validate(ok["response"]["body"])
    assert completion.choices[0].message.content == "I hear how hard this is. hello there"
    (failed,) = map(json.loads, err.splitlines())
    assert failed["custom_id"] == "b" and failed["response"]["status_code"] == 429
    assert failed["response"]["body"]["error"]["code"] == "rate_limit_exceeded"
    assert [r.batch_id for r in server.requests if r.batch_id] == [seen[0].id] * 2


GOOD = json.dumps(line("a", "x"))
NO_ID = json.dumps({k: v for k, v in line("a", "x").items() if k != "custom_id"})
BAD_INPUTS = [
    (f"{GOOD}\n{{broken\n", "invalid_json_line", 2),
    (json.dumps(line("a", "x", url="/v1/embeddings")), "invalid_url", 1),
    (NO_ID, "missing_required_parameter", 1),
    (f"{GOOD}\n{json.dumps(line('a', 'y'))}", "duplicate_custom_id", 2),
]


@pytest.mark.parametrize(("data", "code", "line_no"), BAD_INPUTS)
def test_an_invalid_input_file_fails_the_batch_naming_the_line(
    server: FaultServer, data: str, code: str, line_no: int
) -> None:
    async def go() -> Any:
        c = oai(server)
        batch = await openai_batch(c, data.encode())
        return await c.batches.retrieve(batch.id)

    batch = asyncio.run(go())
    assert batch.status == "failed" and batch.output_file_id is None
    error = batch.errors.data[0]
    assert (error.code, error.line) == (code, line_no) and str(line_no) in error.message


def test_openai_list_pages_newest_first(server: FaultServer) -> None:
    async def go() -> tuple[list[str], list[str], Any]:
        c = oai(server)
        made = [(await openai_batch(c, [line("a", str(i))])).id for i in range(3)]
        page = await c.batches.list(limit=2)
        listed = [b.id async for b in c.batches.list(limit=1)]
        return made, listed, page

    made, listed, page = asyncio.run(go())
    assert listed == made[::-1]
    assert [b.id for b in page.data] == made[:0:-1] and page.has_more


def test_openai_cancel_and_expiry_write_unanswered_lines(server: FaultServer) -> None:
    async def go() -> tuple[list[str], str, list[str], str]:
        c = oai(server)
        server.fault_next_batch("slow:4")
        batch = await openai_batch(c, [line(x, x) for x in "abcd"])
        await c.batches.retrieve(batch.id)
        statuses = [(await c.batches.cancel(batch.id)).status]
        statuses.append((await c.batches.retrieve(batch.id)).status)
        with pytest.raises(openai.ConflictError):
            await c.batches.cancel(batch.id)
        cancelled = (await c.files.content((await c.batches.retrieve(batch.id)).error_file_id)).text
        server.fault_next_batch("expire")
        batch = await openai_batch(c, [line(x, x) for x in "abcd"])
        expired = [(await c.batches.retrieve(batch.id)).status for _ in range(2)]
        err = (await c.files.content((await c.batches.retrieve(batch.id)).error_file_id)).text
        return statuses, cancelled, expired, err

    statuses, cancelled, expired, err = asyncio.run(go())
    assert statuses == ["cancelling", "cancelled"]
    codes = [(x["custom_id"], x["error"]["code"]) for x in map(json.loads, cancelled.splitlines())]
    assert codes == [("b", "batch_cancelled"), ("c", "batch_cancelled"), ("d", "batch_cancelled")]
    assert expired == ["in_progress", "expired"]
    assert [json.loads(x)["error"]["code"] for x in err.splitlines()] == ["batch_expired"] * 2


def test_anthropic_batch_lifecycle_results_and_list(server: FaultServer) -> None:
    async def go() -> tuple[list[Any], list[Any], list[str]]:
        c = ant(server)
        batch = await c.messages.batches.create(
            requests=[
                {"custom_id": "a", "params": params("hello there")},
                {"custom_id": "b", "params": params("x [[faults: 500]]")},
                {"custom_id": "c", "params": params("y [[faults: drop]]")},
            ]
        )
        seen = [batch] + [await c.messages.batches.retrieve(batch.id) for _ in range(2)]
        results = [r async for r in await c.messages.batches.results(batch.id)]
        other = await c.messages.batches.create(
            requests=[{"custom_id": "z", "params": params("z")}]
        )
        listed = [b.id async for b in c.messages.batches.list(limit=1)]
        assert listed[0] == other.id
        return seen, results, listed

    seen, results, listed = asyncio.run(go())
    assert [b.processing_status for b in seen] == ["in_progress", "in_progress", "ended"]
    assert seen[0].request_counts.processing == 3 and seen[0].results_url is None
    assert seen[-1].request_counts.model_dump() == {
        "processing": 0, "succeeded": 1, "errored": 2, "canceled": 0, "expired": 0,
    }  # fmt: skip
    assert seen[-1].results_url.endswith(f"/v1/messages/batches/{seen[0].id}/results")
    by_id = {r.custom_id: r.result for r in results}
    assert by_id["a"].type == "succeeded"
    assert by_id["a"].message.content[0].text == "I hear how hard this is. hello there"
    assert by_id["b"].type == by_id["c"].type == "errored"
    assert by_id["b"].error.error.type == by_id["c"].error.error.type == "api_error"
    assert len(listed) == 2


def test_anthropic_refuses_bad_custom_ids_and_scripted_batches(server: FaultServer) -> None:
    async def go() -> list[int]:
        c = ant(server)
        statuses = []
        for requests in (
            [{"custom_id": "has space", "params": params("x")}],
            [{"custom_id": "x" * 65, "params": params("x")}],
            [{"custom_id": "a", "params": params("x")}, {"custom_id": "a", "params": params("y")}],
            [{"custom_id": "a", "params": params("x [[batch: refuse:413]]")}],
        ):
            with pytest.raises(anthropic.APIStatusError) as caught:
                await c.messages.batches.create(requests=requests)
            statuses.append(caught.value.status_code)
        return statuses

    assert asyncio.run(go()) == [400, 400, 400, 413]
    assert server.batches == []


def test_anthropic_cancel_and_expiry(server: FaultServer) -> None:
    async def go() -> tuple[Any, Any, list[Any], Any]:
        c = ant(server)
        server.fault_next_batch("slow:4")
        batch = await c.messages.batches.create(
            requests=[{"custom_id": x, "params": params(x)} for x in "abcd"]
        )
        await c.messages.batches.retrieve(batch.id)
        canceling = await c.messages.batches.cancel(batch.id)
        ended = await c.messages.batches.retrieve(batch.id)
        results = [r async for r in await c.messages.batches.results(batch.id)]
        server.fault_next_batch("expire")
        batch = await c.messages.batches.create(
            requests=[{"custom_id": x, "params": params(x)} for x in "ab"]
        )
        for _ in range(2):
            expired = await c.messages.batches.retrieve(batch.id)
        return canceling, ended, results, expired

    canceling, ended, results, expired = asyncio.run(go())
    assert canceling.processing_status == "canceling" and canceling.cancel_initiated_at
    assert ended.processing_status == "ended"
    assert (ended.request_counts.succeeded, ended.request_counts.canceled) == (1, 3)
    assert [r.result.type for r in results] == ["succeeded", "canceled", "canceled", "canceled"]
    assert (expired.request_counts.succeeded, expired.request_counts.expired) == (1, 1)


def test_batch_markers_and_queued_faults_add_up(server: FaultServer) -> None:
    server.fault_next_batch("slow:3")

    async def go() -> list[str]:
        c = oai(server)
        batch = await openai_batch(c, [line("a", "a [[batch: expire]]"), line("b", "b")])
        return [(await c.batches.retrieve(batch.id)).status for _ in range(3)]

    assert asyncio.run(go()) == ["in_progress", "in_progress", "expired"]
    assert server.batches[0].fault == BatchFault(expire=True, polls=3)
    answer = server.batches[0].outcomes[0][1].body
    assert answer["choices"][0]["message"]["content"] == "I hear how hard this is. a"


@pytest.mark.parametrize("delay", ["hang:0", "hang:0.05"])
def test_a_slow_answer_in_a_batch_is_answered_at_once(delay: str) -> None:
    """``hang:S`` delays a live answer by S seconds, zero included; a batch answers it."""
    with FaultServer() as server:
        server.default_plan = delay

        async def go() -> str:
            c = oai(server)
            batch = await openai_batch(c, [line("a", "a"), line("b", "b")])
            for _ in range(2):
                done = await c.batches.retrieve(batch.id)
            return str(done.status)

        assert asyncio.run(go()) == "completed"
        outcomes = [outcome for _, outcome in server.batches[0].outcomes]
    assert [o.kind for o in outcomes] == ["ok", "ok"]


def test_batch_answers_tick_the_virtual_clock() -> None:
    with FaultServer(seconds_per_request=10) as server:

        async def go() -> None:
            c = oai(server)
            batch = await openai_batch(c, [line("a", "a"), line("b", "b"), line("c", "c")])
            for _ in range(2):
                await c.batches.retrieve(batch.id)

        asyncio.run(go())
        assert server.clock.now() == 30


def test_parse_batch_fault() -> None:
    assert parse_batch_fault("expire, fail-half, malformed-line") == BatchFault(True, True, True)
    assert parse_batch_fault("refuse") == BatchFault(refuse=0)
    assert parse_batch_fault("refuse:429, slow:5") == BatchFault(refuse=429, polls=5)
    for bad in ("explode", "slow", "slow:0", "refuse:200", "expire:1"):
        with pytest.raises(ValueError, match="batch fault"):
            parse_batch_fault(bad)
