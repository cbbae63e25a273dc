"""The fake LLM server, driven through the real `openai` and `anthropic` SDKs over TCP.

Besides checking the fake, these tests pin down how the installed SDKs surface each fault, which
is what the project's providers must handle (see the module doc of tests/fakes/fault_server.py).
"""

from __future__ import annotations

import asyncio
import importlib
import importlib.util
import json
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

from tests.fakes.fault_server import (  # noqa: E402
    BADJSON_TEXT,
    PROSE_TEXT,
    FaultServer,
    call_key,
    parse_fault,
    parse_plan,
)

REPO = Path(__file__).resolve().parents[2]

# The SDKs' HTTP clients: httpx, or httpx2 in the newer generations of both SDKs.
HTTP_CLIENTS = [
    importlib.import_module(name) for name in ("httpx", "httpx2") if importlib.util.find_spec(name)
]
REMOTE_PROTOCOL_ERRORS = tuple(http.RemoteProtocolError for http in HTTP_CLIENTS)
# anthropic's AsyncStream does not wrap transport errors raised while iterating a stream (its
# request phase does): a cut/reset/stalled stream surfaces as a raw HTTP client error there.
ANTHROPIC_STREAM_CONNECTION_ERRORS = (
    anthropic.APIConnectionError,
    *(http.TransportError for http in HTTP_CLIENTS),
)
ANTHROPIC_STREAM_TIMEOUT_ERRORS = (
    anthropic.APITimeoutError,
    *(http.TimeoutException for http in HTTP_CLIENTS),
)


@pytest.fixture(scope="module")
def server() -> Iterator[FaultServer]:
    with FaultServer() as srv:
        yield srv


def run(coro: Any) -> Any:
    return asyncio.run(coro)


def oai(server: FaultServer, **kw: Any) -> Any:
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 5.0)
    return openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="sk-test", **kw)


def ant(server: FaultServer, **kw: Any) -> Any:
    kw.setdefault("max_retries", 0)
    kw.setdefault("timeout", 5.0)
    return anthropic.AsyncAnthropic(base_url=server.anthropic_base_url, api_key="test", **kw)


async def call(
    server: FaultServer,
    api: str,
    text: str,
    *,
    stream: bool = False,
    system: str | None = None,
    chunks: list[str] | None = None,
    **client_kw: Any,
) -> dict[str, Any]:
    """One chat call; returns text, finish reason and usage (in/out). ``chunks`` collects
    streamed pieces as they arrive, so a test can see what came before a failure."""
    pieces = chunks if chunks is not None else []
    if api == "openai":
        messages = [{"role": "user", "content": text}]
        if system is not None:
            messages.insert(0, {"role": "system", "content": system})
        async with oai(server, **client_kw) as client:
            if not stream:
                r = await client.chat.completions.create(
                    model="fake-model", messages=messages, max_tokens=64
                )
                u = r.usage
                return {
                    "text": r.choices[0].message.content,
                    "finish": r.choices[0].finish_reason,
                    "usage": (u.prompt_tokens, u.completion_tokens, u.total_tokens),
                }
            s = await client.chat.completions.create(
                model="fake-model",
                messages=messages,
                max_tokens=64,
                stream=True,
                stream_options={"include_usage": True},
            )
            finish = usage = None
            async for chunk in s:
                if chunk.choices:
                    delta = chunk.choices[0].delta
                    if delta.content:
                        pieces.append(delta.content)
                    finish = chunk.choices[0].finish_reason or finish
                if chunk.usage is not None:
                    u = chunk.usage
                    usage = (u.prompt_tokens, u.completion_tokens, u.total_tokens)
            return {"text": "".join(pieces), "finish": finish, "usage": usage}

    kwargs: dict[str, Any] = {
        "model": "fake-model",
        "max_tokens": 64,
        "messages": [{"role": "user", "content": text}],
    }
    if system is not None:
        kwargs["system"] = system
    async with ant(server, **client_kw) as client:
        if not stream:
            m = await client.messages.create(**kwargs)
            return {
                "text": "".join(b.text for b in m.content),
                "finish": m.stop_reason,
                "usage": (m.usage.input_tokens, m.usage.output_tokens),
            }
        s = await client.messages.create(**kwargs, stream=True)
        n_in = n_out = finish = None
        types = []
        async for event in s:
            types.append(event.type)
            if event.type == "message_start":
                n_in = event.message.usage.input_tokens
            elif event.type == "content_block_delta":
                pieces.append(event.delta.text)
            elif event.type == "message_delta":
                finish = event.delta.stop_reason
                n_out = event.usage.output_tokens
        return {"text": "".join(pieces), "finish": finish, "usage": (n_in, n_out), "types": types}


API_STREAM = [
    pytest.param(api, stream, id=f"{api}-{'stream' if stream else 'plain'}")
    for api in ("openai", "anthropic")
    for stream in (False, True)
]


# ------------------------------------------------------------------------------ happy paths


def test_openai_non_stream_happy_path(server: FaultServer) -> None:
    text = "my dog died last week and I feel empty inside"
    r = run(call(server, "openai", text, system="You are a kind listener."))
    assert r["text"] == "I hear how hard this is. my dog died last week and"
    assert r["finish"] == "stop"
    # input = words of system (5) + user (10); output = words of the reply (12)
    assert r["usage"] == (15, 12, 27)
    rec = [x for x in server.requests if x.last_user == text][-1]
    assert rec.path == "/v1/chat/completions"
    assert rec.api == "openai" and rec.attempt == 1 and rec.fault == "ok" and rec.status == 200
    assert rec.headers["authorization"] == "Bearer sk-test"
    assert rec.body["max_tokens"] == 64 and rec.body["model"] == "fake-model"
    assert rec.end is not None and rec.end >= rec.start


def test_openai_stream_happy_path(server: FaultServer) -> None:
    text = "streaming please, I cannot sleep at night anymore"
    chunks: list[str] = []
    r = run(call(server, "openai", text, stream=True, chunks=chunks))
    assert r["text"] == "I hear how hard this is. streaming please, I cannot sleep at"
    assert len(chunks) > 5  # word by word
    assert r["finish"] == "stop"
    assert r["usage"] == (8, 12, 20)


def test_openai_stream_without_usage_and_stream_helper(server: FaultServer) -> None:
    async def go() -> None:
        async with oai(server) as client:
            s = await client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "no usage please"}], stream=True
            )
            chunks = [c async for c in s]
            assert all(c.usage is None for c in chunks)
            assert chunks[-1].choices[0].finish_reason == "stop"
            # the SDK's accumulating helper parses the same stream
            async with client.chat.completions.stream(
                model="m",
                messages=[{"role": "user", "content": "helper please"}],
                stream_options={"include_usage": True},
            ) as st:
                async for _ in st:
                    pass
                final = await st.get_final_completion()
            assert final.choices[0].message.content == "I hear how hard this is. helper please"
            assert final.choices[0].finish_reason == "stop"
            assert final.usage.completion_tokens == 8

    run(go())


def test_anthropic_non_stream_happy_path(server: FaultServer) -> None:
    text = "my sister stopped talking to me"
    r = run(call(server, "anthropic", text, system="Be kind."))
    assert r["text"] == "I hear how hard this is. my sister stopped talking to me"
    assert r["finish"] == "end_turn"
    assert r["usage"] == (8, 12)
    rec = [x for x in server.requests if x.last_user == text][-1]
    assert rec.path == "/v1/messages" and rec.api == "anthropic"
    # anthropic 2.x sends the API key as "authorization: Bearer", older SDKs as x-api-key
    assert "test" in (rec.headers.get("x-api-key"), rec.headers.get("authorization", "")[7:])
    assert "anthropic-version" in rec.headers
    assert rec.body["system"] == "Be kind." and rec.body["max_tokens"] == 64


def test_anthropic_stream_happy_path(server: FaultServer) -> None:
    chunks: list[str] = []
    r = run(call(server, "anthropic", "one two three", stream=True, chunks=chunks, system="S s"))
    assert r["text"] == "I hear how hard this is. one two three"
    assert len(chunks) == 9
    assert r["finish"] == "end_turn"
    assert r["usage"] == (5, 9)
    # "ping" is sent on the wire but the SDK skips it
    assert r["types"][0] == "message_start" and r["types"][-1] == "message_stop"
    assert r["types"][1] == "content_block_start" and "message_delta" in r["types"]

    async def helper() -> None:
        async with (
            ant(server) as client,
            client.messages.stream(
                model="m", max_tokens=20, messages=[{"role": "user", "content": "helper"}]
            ) as st,
        ):
            streamed = "".join([t async for t in st.text_stream])
            final = await st.get_final_message()
        assert streamed == final.content[0].text == "I hear how hard this is. helper"
        assert final.stop_reason == "end_turn"
        assert (final.usage.input_tokens, final.usage.output_tokens) == (1, 7)

    run(helper())


def test_models_list(server: FaultServer) -> None:
    async def go() -> tuple[list[str], list[str]]:
        async with oai(server) as c, ant(server) as a:
            return [m.id async for m in await c.models.list()], [
                m.id async for m in await a.models.list()
            ]

    assert run(go()) == (["fake-model"], ["fake-model"])


def test_custom_reply_fn_for_judges() -> None:
    def verdict(body: dict[str, Any]) -> str:
        return json.dumps({"winner": "B", "strength": 2, "model": body["model"]})

    with FaultServer(reply_fn=verdict) as srv:
        for api, stream in (("openai", False), ("anthropic", True)):
            r = run(call(srv, api, "judge these", stream=stream))
            assert json.loads(r["text"]) == {"winner": "B", "strength": 2, "model": "fake-model"}
        r = run(call(srv, "openai", "judge [[faults: outofrange]]"))
        assert json.loads(r["text"]) == {"winner": "B", "strength": 9, "model": "fake-model"}


# ------------------------------------------------------------------------------ status faults

OPENAI_STATUS = {
    "429": openai.RateLimitError,
    "500": openai.InternalServerError,
    "502": openai.InternalServerError,
    "503": openai.InternalServerError,
    "529": openai.InternalServerError,
    "400": openai.BadRequestError,
    "401": openai.AuthenticationError,
    "404": openai.NotFoundError,
    "422": openai.UnprocessableEntityError,
}
ANTHROPIC_STATUS = {
    "429": (anthropic.RateLimitError, "rate_limit_error"),
    "500": (anthropic.InternalServerError, "api_error"),
    "502": (anthropic.InternalServerError, "api_error"),
    # 503 and 529 have classes of their own in newer SDKs and InternalServerError (or only
    # APIStatusError) in older ones: the providers read the status code, which is pinned below.
    "503": (anthropic.APIStatusError, "api_error"),
    "529": (anthropic.APIStatusError, "overloaded_error"),
    "400": (anthropic.BadRequestError, "invalid_request_error"),
    "401": (anthropic.AuthenticationError, "authentication_error"),
    "404": (anthropic.NotFoundError, "not_found_error"),
    "422": (anthropic.UnprocessableEntityError, "invalid_request_error"),
}


@pytest.mark.parametrize("stream", [False, True], ids=["plain", "stream"])
def test_status_faults_map_to_sdk_exceptions(server: FaultServer, stream: bool) -> None:
    async def go() -> None:
        for kind, exc_type in OPENAI_STATUS.items():
            with pytest.raises(exc_type) as info:
                await call(
                    server, "openai", f"status {kind} {stream} [[faults: {kind}]]", stream=stream
                )
            err = info.value
            assert err.status_code == int(kind)
            assert err.body["type"] and "scripted" in err.body["message"]
            if kind == "429":
                assert err.response.headers["retry-after"] == "1"
                assert err.response.headers["retry-after-ms"] == "1000"
                assert err.code == "rate_limit_exceeded"
            else:
                assert "retry-after" not in err.response.headers
        for kind, (exc_type, etype) in ANTHROPIC_STATUS.items():
            with pytest.raises(exc_type) as info:
                await call(
                    server, "anthropic", f"status {kind} {stream} [[faults: {kind}]]", stream=stream
                )
            err = info.value
            assert err.status_code == int(kind)
            assert err.body["type"] == "error" and err.body["error"]["type"] == etype
            if kind == "429":
                assert err.response.headers["retry-after"] == "1"

    run(go())


def test_fractional_retry_after(server: FaultServer) -> None:
    async def go() -> None:
        with pytest.raises(openai.RateLimitError) as oinfo:
            await call(server, "openai", "frac [[faults: 429:0.3]]")
        assert oinfo.value.response.headers["retry-after"] == "0.3"
        assert oinfo.value.response.headers["retry-after-ms"] == "300"
        with pytest.raises(anthropic.RateLimitError) as ainfo:
            await call(server, "anthropic", "frac [[faults: 429:0.3]]")
        assert ainfo.value.response.headers["retry-after"] == "0.3"
        with pytest.raises(anthropic.APIStatusError) as info:
            await call(server, "anthropic", "overloaded with hint [[faults: 529:2]]")
        assert info.value.status_code == 529
        assert info.value.response.headers["retry-after"] == "2"

    run(go())


def test_sdk_retries_transient_faults_but_not_client_errors(server: FaultServer) -> None:
    async def go() -> None:
        # Retry-After on the 500/529 too, so the SDK's backoff is short
        text = "transient openai [[faults: 429:0.01, 500:0.01, ok]]"
        r = await call(server, "openai", text, max_retries=2)
        assert r["finish"] == "stop" and server.attempts("transient openai") == 3
        text = "transient anthropic [[faults: 529:0.01, 429:0.01, ok]]"
        r = await call(server, "anthropic", text, stream=True, max_retries=2)
        assert r["finish"] == "end_turn" and server.attempts("transient anthropic") == 3
        for kind in ("400", "401", "404", "422"):
            for api in ("openai", "anthropic"):
                needle = f"never retry {kind} {api}"
                with pytest.raises(Exception) as info:
                    await call(server, api, f"{needle} [[faults: {kind}, ok]]", max_retries=3)
                assert info.value.status_code == int(kind)
                assert server.attempts(needle) == 1

    run(go())


# ------------------------------------------------------------------------------ network faults


@pytest.mark.parametrize(("api", "stream"), API_STREAM)
def test_drop_is_a_connection_error(server: FaultServer, api: str, stream: bool) -> None:
    needle = f"drop {api} {stream}"
    expected = openai.APIConnectionError if api == "openai" else anthropic.APIConnectionError
    with pytest.raises(expected) as info:
        run(call(server, api, f"{needle} [[faults: drop]]", stream=stream))
    assert not isinstance(info.value, openai.APITimeoutError | anthropic.APITimeoutError)
    assert isinstance(info.value.__cause__, REMOTE_PROTOCOL_ERRORS)
    assert server.attempts(needle) == 1  # no silent transport-level retry
    rec = [r for r in server.requests if needle in r.last_user][-1]
    assert rec.fault == "drop" and rec.status is None


@pytest.mark.parametrize("kind", ["cut", "reset"])
@pytest.mark.parametrize(("api", "stream"), API_STREAM)
def test_cut_and_reset_abort_mid_response(
    server: FaultServer, api: str, stream: bool, kind: str
) -> None:
    chunks: list[str] = []
    text = f"abort me {kind} {api} {stream} [[faults: {kind}]]"
    if api == "anthropic" and stream:
        expected: Any = ANTHROPIC_STREAM_CONNECTION_ERRORS
    else:
        expected = openai.APIConnectionError if api == "openai" else anthropic.APIConnectionError
    with pytest.raises(expected):
        run(call(server, api, text, stream=stream, chunks=chunks))
    if stream:
        # the first two content chunks arrived before the abort, and nothing more
        assert chunks == ["I ", "hear "]


@pytest.mark.parametrize(("api", "stream"), API_STREAM)
def test_hang_times_out_and_server_sees_the_disconnect(
    server: FaultServer, api: str, stream: bool
) -> None:
    needle = f"hang forever {api} {stream}"
    expected = openai.APITimeoutError if api == "openai" else anthropic.APITimeoutError
    t0 = time.monotonic()
    with pytest.raises(expected):
        run(call(server, api, f"{needle} [[faults: hang]]", stream=stream, timeout=0.3))
    assert time.monotonic() - t0 < 3
    deadline = time.monotonic() + 3
    rec = [r for r in server.requests if needle in r.last_user][-1]
    while rec.end is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert rec.end is not None, "the server did not notice the client going away"
    assert rec.status is None


def test_slow_answer_and_timeout(server: FaultServer) -> None:
    async def go() -> None:
        t0 = time.monotonic()
        r = await call(server, "openai", "slow ok [[faults: hang:0.4]]", stream=True)
        assert r["finish"] == "stop" and time.monotonic() - t0 >= 0.4
        r = await call(server, "anthropic", "slow ok [[faults: hang:0.4]]")
        assert r["finish"] == "end_turn"
        with pytest.raises(openai.APITimeoutError):
            await call(server, "openai", "too slow [[faults: hang:2]]", timeout=0.3)
        with pytest.raises(anthropic.APITimeoutError):
            await call(server, "anthropic", "too slow [[faults: hang:2]]", timeout=0.3)

    run(go())


@pytest.mark.parametrize("api", ["openai", "anthropic"])
def test_stall_is_a_mid_stream_read_timeout(server: FaultServer, api: str) -> None:
    chunks: list[str] = []
    expected: Any = openai.APITimeoutError if api == "openai" else ANTHROPIC_STREAM_TIMEOUT_ERRORS
    with pytest.raises(expected):
        run(call(server, api, "stall [[faults: stall]]", stream=True, chunks=chunks, timeout=0.3))
    assert chunks == ["I ", "hear "]


@pytest.mark.parametrize(("api", "stream"), API_STREAM)
def test_malformed_body_fails_to_parse(server: FaultServer, api: str, stream: bool) -> None:
    # Both SDKs let json.JSONDecodeError (a ValueError) escape: it is not an APIError.
    sdk_error = openai.APIError if api == "openai" else anthropic.APIError
    with pytest.raises((ValueError, sdk_error)):
        run(call(server, api, f"malformed {stream} [[faults: malformed]]", stream=stream))


@pytest.mark.parametrize(("api", "stream"), API_STREAM)
def test_content_faults(server: FaultServer, api: str, stream: bool) -> None:
    async def go() -> None:
        r = await call(server, api, "content [[faults: prose]]", stream=stream)
        assert r["text"] == PROSE_TEXT
        r = await call(server, api, "content [[faults: badjson]]", stream=stream)
        assert r["text"] == BADJSON_TEXT
        r = await call(server, api, "content [[faults: outofrange]]", stream=stream)
        assert json.loads(r["text"]) == {"winner": "A", "strength": 9}
        r = await call(server, api, "content [[faults: length]]", stream=stream)
        assert r["text"] == "I hear how"  # half of the 7 words of the normal reply
        assert r["finish"] == ("length" if api == "openai" else "max_tokens")

    run(go())


# ------------------------------------------------------------------------------ plans, attempts


def test_marker_plan_fails_once_then_succeeds(server: FaultServer) -> None:
    text = "please help [[faults: 429, ok]]"
    messages = [{"role": "user", "content": text}]

    async def go() -> None:
        with pytest.raises(openai.RateLimitError):
            await call(server, "openai", text)
        r = await call(server, "openai", text)
        assert r["text"] == "I hear how hard this is. please help"
        await call(server, "openai", text)

    run(go())
    key = call_key(messages)
    assert server.attempts(key) == 3 == server.attempts("please help")
    recs = [r for r in server.requests if r.call_key == key]
    assert [(r.attempt, r.fault, r.status) for r in recs] == [
        (1, "429", 429),
        (2, "ok", 200),
        (3, "ok", 200),
    ]
    assert {r.plan_source for r in recs} == {"marker"}


def test_call_key_is_shared_across_wire_formats(server: FaultServer) -> None:
    text = "same conversation on both wires [[faults: 500, ok]]"

    async def go() -> None:
        with pytest.raises(openai.InternalServerError):
            await call(server, "openai", text, system="sys prompt")
        r = await call(server, "anthropic", text, system="sys prompt")
        assert r["finish"] == "end_turn"

    run(go())
    key = call_key([{"role": "user", "content": text}], system="sys prompt")
    assert server.attempts(key) == 2
    # a different system prompt is a different call
    assert call_key([{"role": "user", "content": text}], system="other") != key


def test_set_plan_default_plan_and_reset() -> None:
    with FaultServer() as srv:
        srv.set_plan("flaky item", ["503", "ok"])
        with pytest.raises(ValueError, match="unknown fault"):
            srv.default_plan = ["429", "nope"]
        srv.default_plan = "429:0.01, ok"

        async def go() -> None:
            with pytest.raises(openai.InternalServerError):
                await call(srv, "openai", "a flaky item here")
            assert (await call(srv, "openai", "a flaky item here"))["finish"] == "stop"
            with pytest.raises(openai.RateLimitError):
                await call(srv, "openai", "anything else")
            # a marker beats set_plan
            with pytest.raises(openai.NotFoundError):
                await call(srv, "openai", "flaky item [[faults: 404]]")

        run(go())
        assert [r.plan_source for r in srv.requests] == [
            "set_plan:flaky item",
            "set_plan:flaky item",
            "default",
            "marker",
        ]
        srv.reset()
        assert srv.requests == [] and srv.attempts("flaky item") == 0
        assert run(call(srv, "openai", "a flaky item here"))["finish"] == "stop"


def test_invalid_marker_is_a_400_that_names_the_problem(server: FaultServer) -> None:
    with pytest.raises(openai.BadRequestError) as info:
        run(call(server, "openai", "typo [[faults: 429, hnag]]", max_retries=2))
    assert "hnag" in info.value.message
    assert server.attempts("typo") == 1


def test_parse_fault_and_plan() -> None:
    assert parse_fault(" 429:0.3 ").seconds == 0.3
    assert parse_fault("hang").seconds is None and parse_fault("hang:2.5").seconds == 2.5
    assert [f.spec for f in parse_plan("429, 500 ,ok")] == ["429", "500", "ok"]
    for bad in ("hnag", "200", "600", "cut:1", "429:x", "hang:-1"):
        with pytest.raises(ValueError):
            parse_fault(bad)
    with pytest.raises(ValueError):
        parse_plan([])


def test_reply_fn_errors_are_reported_not_swallowed() -> None:
    def broken(body: dict[str, Any]) -> str:
        raise KeyError("oops")

    srv = FaultServer(reply_fn=broken)
    with (
        pytest.raises(RuntimeError, match="handler raised"),
        srv,
        pytest.raises(openai.InternalServerError),
    ):
        run(call(srv, "openai", "boom"))
    assert isinstance(srv.errors[0], KeyError)


# ------------------------------------------------------------------------------ concurrency


def test_64_concurrent_slow_requests_run_in_parallel(server: FaultServer) -> None:
    async def go() -> float:
        async with oai(server) as client:
            forever = asyncio.create_task(
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "blocker [[faults: hang]]"}]
                )
            )
            t0 = time.monotonic()
            results = await asyncio.gather(
                *(
                    client.chat.completions.create(
                        model="m",
                        messages=[
                            {"role": "user", "content": f"parallel {i} [[faults: hang:0.2]]"}
                        ],
                    )
                    for i in range(64)
                )
            )
            elapsed = time.monotonic() - t0
            forever.cancel()
            assert all(r.choices[0].message.content.startswith("I hear") for r in results)
            return elapsed

    elapsed = run(go())
    assert elapsed < 3.0, f"64 x hang:0.2 took {elapsed:.2f}s: requests are serialised"


def test_attempt_counting_is_exact_under_concurrency(server: FaultServer) -> None:
    text = "same call many times [[faults: 500, 500, ok]]"

    async def go() -> list[Any]:
        async with oai(server) as client:
            return await asyncio.gather(
                *(
                    client.chat.completions.create(
                        model="m", messages=[{"role": "user", "content": text}]
                    )
                    for _ in range(20)
                ),
                return_exceptions=True,
            )

    results = run(go())
    failures = [r for r in results if isinstance(r, openai.InternalServerError)]
    assert len(failures) == 2 and len(results) - len(failures) == 18
    recs = [r for r in server.requests if r.last_user == text]
    assert sorted(r.attempt for r in recs) == list(range(1, 21))
    assert sorted((r.attempt, r.status) for r in recs)[:3] == [(1, 500), (2, 500), (3, 200)]


def test_stop_releases_hanging_clients_promptly() -> None:
    srv = FaultServer().start()

    async def go() -> None:
        async with oai(srv, timeout=30) as client:
            pending = asyncio.create_task(
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "[[faults: hang]]"}]
                )
            )
            await asyncio.sleep(0.2)
            t0 = time.monotonic()
            await asyncio.to_thread(srv.stop)
            assert time.monotonic() - t0 < 2
            with pytest.raises(openai.APIConnectionError):
                await pending

    run(go())


# ------------------------------------------------------------------------------ process mode


@pytest.mark.parametrize("instant", [False, True], ids=["scripted", "instant"])
def test_subprocess_mode_prints_port_and_serves(instant: bool) -> None:
    cmd = [sys.executable, "-m", "tests.fakes.fault_server", "--port", "0", "--print-port"]
    proc = subprocess.Popen(
        [*cmd, *(["--instant"] if instant else [])],
        cwd=REPO,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0, timeout=5
        )
        # in instant mode the marker is ignored: everything is answered ok
        r = client.chat.completions.create(
            model="m", messages=[{"role": "user", "content": "hello [[faults: ok]]"}]
        )
        assert r.choices[0].message.content.startswith("I hear how hard this is. hello")
        if not instant:
            with pytest.raises(openai.RateLimitError):
                client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "x [[faults: 429]]"}]
                )
        client.close()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert "Traceback" not in err


def test_raw_http_keep_alive_and_unknown_route(server: FaultServer) -> None:
    """Two requests on one connection (keep-alive), then a 404 in the OpenAI error shape."""
    body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "raw"}]}).encode()
    request = (
        b"POST /v1/chat/completions HTTP/1.1\r\nhost: x\r\ncontent-type: application/json\r\n"
        + f"content-length: {len(body)}\r\n\r\n".encode()
        + body
    )
    with socket.create_connection(("127.0.0.1", server.port), timeout=5) as sock:
        f = sock.makefile("rb")
        for _ in range(2):
            sock.sendall(request)
            assert f.readline().startswith(b"HTTP/1.1 200")
            headers = {}
            while (line := f.readline()) != b"\r\n":
                k, _, v = line.decode().partition(":")
                headers[k.lower()] = v.strip()
            payload = json.loads(f.read(int(headers["content-length"])))
            assert payload["object"] == "chat.completion"
        sock.sendall(b"GET /nope HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n")
        rest = f.read()
    assert rest.startswith(b"HTTP/1.1 404")
    assert json.loads(rest.split(b"\r\n\r\n", 1)[1])["error"]["type"] == "invalid_request_error"
