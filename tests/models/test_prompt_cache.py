"""Prompt caching on the wire: what each provider is asked to cache, and the cached tokens its
usage reports, read from plain, streamed and batched answers (through the real SDKs)."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from heart.models import ChatResponse
from tests.fakes.fault_server import FaultServer
from tests.fakes.prompt_cache import CacheMark
from tests.models.wire import anthropic_model, ask, openai_model, run

SYSTEM = " ".join(f"rubric{i}" for i in range(300))  # 300 words
CONTEXT = " ".join(f"context{i}" for i in range(50)) + " "  # 50 words, shared by an item
OTHER = " ".join(f"other{i}" for i in range(50)) + " "
MARK = {"type": "ephemeral", "ttl": "5m"}


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(cache_min_tokens=100, openai_cache_writes=True) as fault_server:
        yield fault_server


def _pair(context: str, tail: str, **options: Any) -> Any:
    return ask(context + tail, system=SYSTEM, shared_chars=len(context), **options)


def _usage(r: ChatResponse) -> tuple[int | None, int, int, int]:
    return (r.tokens_in, r.cached_tokens_in, r.cache_write_tokens, r.cache_write_1h_tokens)


@pytest.mark.parametrize("stream", [False, True])
def test_openai_reads_cached_tokens_from_plain_and_streamed_answers(
    server: FaultServer, stream: bool
) -> None:
    model = openai_model(server)

    async def work() -> list[ChatResponse]:
        tails = ["reply A is kind", "reply B is cold too"]
        return [await model.complete(_pair(CONTEXT, t, stream=stream)) for t in tails]

    first, second = run(model, work)
    # 354 prompt words: prefixes of 100 and 228 tokens are cached (100 + k*128 <= 354)
    assert _usage(first) == (354, 0, 228, 0)
    assert _usage(second) == (355, 228, 0, 0)


def test_openai_sends_the_item_cache_key_unless_caching_is_off(server: FaultServer) -> None:
    def sent(model: Any, request: Any) -> dict[str, Any]:
        run(model, lambda: model.complete(request))
        return server.requests[-1].body  # type: ignore[no-any-return]

    on, off = openai_model(server), openai_model(server, prompt_cache="off")
    assert sent(on, ask("hi", cache_key="item-7"))["prompt_cache_key"] == "item-7"
    assert server.requests[-1].cache is not None
    assert server.requests[-1].cache.prompt_cache_key == "item-7"
    assert "prompt_cache_key" not in sent(on, ask("hi"))
    assert "prompt_cache_key" not in sent(off, ask("hi", cache_key="item-7"))


@pytest.mark.parametrize("stream", [False, True])
def test_anthropic_marks_the_shared_prefix_and_reads_cache_usage(
    server: FaultServer, stream: bool
) -> None:
    model = anthropic_model(server)

    async def work() -> list[ChatResponse]:
        return [
            await model.complete(_pair(CONTEXT, "reply A is kind", stream=stream)),
            await model.complete(_pair(CONTEXT, "reply B is cold too", stream=stream)),
            await model.complete(_pair(OTHER, "reply A is kind", stream=stream)),
        ]

    first, second, other_item = run(model, work)
    # breakpoints after the system prompt (300 tokens) and after the item's context (350)
    assert _usage(first) == (354, 0, 350, 0)
    assert _usage(second) == (355, 350, 0, 0)
    assert _usage(other_item) == (354, 300, 50, 0)
    body = server.requests[0].body
    assert body["system"] == [{"type": "text", "text": SYSTEM, "cache_control": MARK}]
    assert body["messages"] == [
        {
            "role": "user",
            "content": [
                {"type": "text", "text": CONTEXT, "cache_control": MARK},
                {"type": "text", "text": "reply A is kind"},
            ],
        }
    ]
    assert server.requests[0].cache is not None
    assert server.requests[0].cache.marks == (
        CacheMark("system[0]", "5m", 300),
        CacheMark("messages[0].content[0]", "5m", 350),
    )


def test_anthropic_hour_long_writes_are_counted_apart(server: FaultServer) -> None:
    model = anthropic_model(server, prompt_cache="1h")
    response = run(model, lambda: model.complete(_pair(CONTEXT, "reply A")))
    assert _usage(response) == (352, 0, 0, 350)
    assert server.requests[-1].body["system"][0]["cache_control"] == {
        "type": "ephemeral",
        "ttl": "1h",
    }


def test_anthropic_without_a_shared_prefix_marks_only_the_system_prompt(
    server: FaultServer,
) -> None:
    model = anthropic_model(server)
    run(model, lambda: model.complete(ask("how are you", system=SYSTEM)))
    body = server.requests[-1].body
    assert body["messages"] == [{"role": "user", "content": "how are you"}]
    assert body["system"][0]["cache_control"] == MARK


def test_anthropic_with_caching_off_sends_the_request_as_before(server: FaultServer) -> None:
    model = anthropic_model(server, prompt_cache="off")

    async def work() -> list[ChatResponse]:
        return [await model.complete(_pair(CONTEXT, t)) for t in ("reply A", "reply B")]

    first, second = run(model, work)
    expected: dict[str, Any] = {
        "model": "m",
        "messages": [{"role": "user", "content": CONTEXT + "reply A"}],
        "max_tokens": 32,
        "system": SYSTEM,
    }
    if "temperature" in model._sampling:
        expected["temperature"] = 0.0
    assert server.requests[0].body == expected
    assert _usage(first) == _usage(second) == (352, 0, 0, 0)


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_batched_answers_carry_cached_tokens(server: FaultServer, provider: str) -> None:
    model = openai_model(server) if provider == "openai" else anthropic_model(server)
    ids = [f"{i:064x}" for i in range(2)]

    async def work() -> dict[str, ChatResponse | None]:
        assert model.batches is not None
        requests = [(ids[0], _pair(CONTEXT, "reply A")), (ids[1], _pair(CONTEXT, "reply B"))]
        remote = await model.batches.submit(requests, "cached")
        for _ in range(2):
            await model.batches.status(remote)
        return {r.custom_id: r.response for r in await model.batches.results(remote)}

    answers = run(model, work)
    first, second = answers[ids[0]], answers[ids[1]]
    assert first is not None and second is not None
    cached = 228 if provider == "openai" else 350
    assert first.cached_tokens_in == 0 and second.cached_tokens_in == cached
    assert second.batch_id is not None and second.tokens_in == 352


SCHEMA = {"type": "object", "properties": {"winner": {"type": "string", "enum": ["A", "B"]}},
          "required": ["winner"]}  # fmt: skip


@pytest.mark.parametrize("counted", [False, True])
def test_an_output_schema_counts_in_the_cached_prefix_when_the_server_bills_it(
    counted: bool,
) -> None:
    """A forced tool (Anthropic) and a response_format schema (OpenAI) are prompt tokens ahead
    of the system prompt: a rubric shorter than the cache minimum is cached with them."""
    rubric = "rubric " * 1010  # 1,010 words: below the minimum of 1,024 alone
    with FaultServer(schema_tokens=counted) as server:
        for model in (anthropic_model(server), openai_model(server)):

            async def work(model: Any = model) -> list[ChatResponse]:
                asks = [ask(f"reply {i}", system=rubric, json_schema=SCHEMA) for i in range(2)]
                return [await model.complete(a) for a in asks]

            first, second = run(model, work)
            assert first.cached_tokens_in == 0
            if counted:
                assert (first.tokens_in or 0) > 1012 + 313 * (model.provider == "anthropic")
                assert second.cached_tokens_in >= 1024
            else:
                assert (first.tokens_in, second.cached_tokens_in) == (1012, 0)
