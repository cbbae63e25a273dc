"""The fake server's prompt cache, through the real SDKs: cached tokens counted as each provider
counts them, by token unit, breakpoint and lifetime, on a real or virtual clock."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")

from tests.fakes.fault_server import FaultServer  # noqa: E402
from tests.fakes.prompt_cache import Clock, count_tokens  # noqa: E402

REPO = Path(__file__).resolve().parents[2]


def words(n: int, stem: str = "w") -> str:
    return " ".join(f"{stem}{i}" for i in range(n))


def openai_usage(server: FaultServer, prompts: list[tuple[str, str]], **kw: Any) -> list[Any]:
    async def go() -> list[Any]:
        c = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="x", max_retries=0)
        out = []
        for system, user in prompts:
            messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
            r = await c.chat.completions.create(model="m", messages=messages, **kw)
            out.append(r.usage)
        return out

    return asyncio.run(go())


def anthropic_usage(server: FaultServer, bodies: list[dict[str, Any]]) -> list[Any]:
    async def go() -> list[Any]:
        c = anthropic.AsyncAnthropic(base_url=server.anthropic_base_url, api_key="x", max_retries=0)
        return [(await c.messages.create(model="m", max_tokens=8, **b)).usage for b in bodies]

    return asyncio.run(go())


def marked(text: str, ttl: str = "5m") -> dict[str, Any]:
    return {"type": "text", "text": text, "cache_control": {"type": "ephemeral", "ttl": ttl}}


def test_openai_caches_prefixes_of_min_plus_128_tokens() -> None:
    with FaultServer(cache_min_tokens=100) as server:
        first, second, short, short_again, whole = openai_usage(
            server,
            [
                (words(300), "one two three four"),  # 304 tokens
                (words(300), "five six seven eight nine"),
                ("tiny", words(90)),  # 91 tokens: under the minimum
                ("tiny", words(90)),
                (words(300), words(56, "u")),  # 356 = 100 + 2*128, all seen below
            ],
        )
        again = openai_usage(server, [(words(300), words(56, "u"))])[0]
    assert (first.prompt_tokens, first.prompt_tokens_details.cached_tokens) == (304, 0)
    assert (second.prompt_tokens, second.prompt_tokens_details.cached_tokens) == (305, 228)
    assert (
        short.prompt_tokens_details.cached_tokens
        == short_again.prompt_tokens_details.cached_tokens
        == 0
    )
    assert whole.prompt_tokens_details.cached_tokens == 228
    assert again.prompt_tokens_details.cached_tokens == 356
    assert second.prompt_tokens_details.cache_write_tokens is None  # OpenAI reports none


def test_openai_streamed_usage_and_recorded_cache_key() -> None:
    with FaultServer(cache_min_tokens=100, openai_cache_writes=True) as server:

        async def go() -> list[Any]:
            c = openai.AsyncOpenAI(base_url=server.openai_base_url, api_key="x", max_retries=0)
            out = []
            for tail in ("a", "b"):
                stream = await c.chat.completions.create(
                    model="m",
                    messages=[{"role": "user", "content": words(200) + " " + tail}],
                    stream=True,
                    stream_options={"include_usage": True},
                    prompt_cache_key="item-1",
                    prompt_cache_retention="24h",
                )
                out += [chunk.usage async for chunk in stream if chunk.usage is not None]
            return out

        first, second = asyncio.run(go())
        asks = [r.cache for r in server.requests]
    assert first.prompt_tokens_details.cache_write_tokens == 100
    assert second.prompt_tokens_details.cached_tokens == 100
    assert all(a is not None and a.prompt_cache_key == "item-1" for a in asks)
    assert all(a is not None and a.retention == "24h" for a in asks)


def test_chars4_counts_a_token_per_four_characters() -> None:
    with FaultServer(token_unit="chars4") as server:
        (usage,) = openai_usage(server, [("abcdefghij", "hello")])
    assert usage.prompt_tokens == 3 + 2
    assert usage.completion_tokens == count_tokens("I hear how hard this is. hello", "chars4") == 8


def test_anthropic_reads_the_longest_breakpoint_and_writes_the_rest_by_ttl() -> None:
    system = [marked(words(300), "1h")]

    def split(tail: str) -> dict[str, Any]:
        content = [marked(words(50, "c") + " "), {"type": "text", "text": tail}]
        return {"system": system, "messages": [{"role": "user", "content": content}]}

    with FaultServer(cache_min_tokens=100) as server:
        first, second, third = anthropic_usage(
            server,
            [
                split("tail"),
                split("other end"),
                {"system": system, "messages": [{"role": "user", "content": words(60, "d")}]},
            ],
        )
    # 351 prompt tokens: the first writes 300 for an hour and 50 for five minutes
    assert (first.input_tokens, first.cache_read_input_tokens) == (1, 0)
    assert first.cache_creation_input_tokens == 350
    assert first.cache_creation.ephemeral_1h_input_tokens == 300
    assert first.cache_creation.ephemeral_5m_input_tokens == 50
    assert (second.input_tokens, second.cache_read_input_tokens) == (2, 350)
    assert second.cache_creation_input_tokens == 0
    assert (third.input_tokens, third.cache_read_input_tokens) == (60, 300)


def test_anthropic_caches_nothing_unmarked_or_too_short() -> None:
    with FaultServer(cache_min_tokens=100) as server:
        usages = anthropic_usage(
            server,
            [
                {"system": words(300), "messages": [{"role": "user", "content": "hi"}]},
                {"system": words(300), "messages": [{"role": "user", "content": "hi"}]},
                {"system": [marked(words(50))], "messages": [{"role": "user", "content": "hi"}]},
                {"system": [marked(words(50))], "messages": [{"role": "user", "content": "hi"}]},
            ],
        )
    for usage in usages:
        assert usage.cache_read_input_tokens == usage.cache_creation_input_tokens == 0


def test_tools_are_part_of_the_prefix() -> None:
    def body(tool: str) -> dict[str, Any]:
        schema = {"type": "object", "properties": {tool: {"type": "string"}}}
        return {
            "system": [marked(words(200))],
            "tools": [{"name": "answer", "input_schema": schema}],
            "messages": [{"role": "user", "content": "hi"}],
        }

    with FaultServer(cache_min_tokens=100) as server:
        usages = anthropic_usage(server, [body("x"), body("x"), body("y")])
    assert [u.cache_read_input_tokens for u in usages] == [0, 200, 0]


def test_entries_expire_after_their_ttl_and_hits_refresh_them() -> None:
    system = [marked(words(200))]
    request = {"system": system, "messages": [{"role": "user", "content": "hi"}]}
    with FaultServer(cache_min_tokens=100, seconds_per_request=200) as server:
        # answered at t = 0 (write), 200 (hit, kept until 500), 400 (hit, kept until 700)
        reads = [u.cache_read_input_tokens for u in anthropic_usage(server, [request] * 3)]
        server.clock.advance(100)  # t = 600 + 100: the entry kept until 700 has expired
        reads += [u.cache_read_input_tokens for u in anthropic_usage(server, [request])]
        assert server.clock.now() == 900  # four answers and the 100 s moved on
    assert reads == [0, 200, 200, 0]


def test_a_real_clock_cannot_be_moved() -> None:
    with pytest.raises(RuntimeError, match="seconds_per_request"):
        Clock().advance(1)


def test_process_form_takes_the_cache_and_batch_options() -> None:
    cmd = [
        sys.executable, "-m", "tests.fakes.fault_server", "--port", "0", "--print-port",
        "--token-unit", "chars4", "--cache-min-tokens", "4", "--seconds-per-request", "1",
        "--batch-polls", "1",
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    try:
        assert proc.stdout is not None
        port = int(proc.stdout.readline())
        client = openai.OpenAI(
            base_url=f"http://127.0.0.1:{port}/v1", api_key="x", max_retries=0, timeout=5
        )
        messages = [{"role": "user", "content": "x" * 40}]  # 10 tokens of 4 characters
        usages = [client.chat.completions.create(model="m", messages=messages).usage for _ in "ab"]
        upload = client.files.create(
            file=("in.jsonl", b'{"custom_id":"a","method":"POST","url":"/v1/chat/completions",'
                  b'"body":{"model":"m","messages":[{"role":"user","content":"hi"}]}}\n'),
            purpose="batch",
        )  # fmt: skip
        batch = client.batches.create(
            input_file_id=upload.id, endpoint="/v1/chat/completions", completion_window="24h"
        )
        status = client.batches.retrieve(batch.id).status
        client.close()
    finally:
        proc.terminate()
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert [u.prompt_tokens for u in usages] == [10, 10]
    assert [u.prompt_tokens_details.cached_tokens for u in usages] == [0, 4]
    assert status == "completed"
