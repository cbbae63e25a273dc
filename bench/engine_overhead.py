"""Engine overhead: calls per second through heart's engine vs a bare asyncio loop over the same
OpenAI SDK, against a loopback server that answers instantly, both at 64 calls in flight.

The engine's run includes everything it does for real: the cache lookup, limits, retries,
progress, and writing every answer (and a completion-like row) to a SQLite store.

    .venv/bin/python bench/engine_overhead.py [--calls 3000] [--rounds 3]

Prints the ratio (engine rate / bare rate) last; the target is at least 0.90.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers import stop  # noqa: E402

CONCURRENCY = 64


def start_server() -> tuple[subprocess.Popen[str], str]:
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.fault_server", "--port", "0", "--print-port",
         "--instant"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    port = int(process.stdout.readline().strip())
    pin_cores(process.pid)
    return process, f"http://127.0.0.1:{port}/v1"


def pin_cores(server_pid: int) -> None:
    """Server on one core, this process on the others, so they do not preempt each other."""
    cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
    if len(cores) >= 2:
        os.sched_setaffinity(server_pid, {cores[0]})
        os.sched_setaffinity(0, set(cores[1:]))


def prompts(n: int, tag: str) -> list[str]:
    return [f"{tag} call {i}: I feel stuck at work and I don't know what to do." for i in range(n)]


async def bare(base_url: str, texts: list[str]) -> float:
    """The usual hand-written loop: a semaphore and gather over the SDK."""
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    slots = asyncio.Semaphore(CONCURRENCY)

    async def one(text: str) -> str:
        async with slots:
            answer = await client.chat.completions.create(
                model="bench", messages=[{"role": "user", "content": text}], max_tokens=32,
                temperature=0, top_p=1,
            )  # fmt: skip
            return answer.choices[0].message.content or ""

    start = time.perf_counter()
    await asyncio.gather(*(one(t) for t in texts))
    elapsed = time.perf_counter() - start
    await client.close()
    return len(texts) / elapsed


def through_engine(base_url: str, texts: list[str]) -> float:

    from heart.config import EngineSpec, ModelSpec, ProviderSettings
    from heart.engine import Call, Engine
    from heart.models import ChatRequest, Message
    from heart.models.openai_compat import OpenAICompatibleModel
    from heart.store import open_store

    with tempfile.TemporaryDirectory() as folder:
        store = open_store(f"sqlite:///{folder}/bench.db")
        spec = ModelSpec(provider="openai", base_url=base_url, model="bench", max_tokens=32)
        model = OpenAICompatibleModel(spec)
        kept: list[str] = []

        def record(_session: object, response: object, error: str | None) -> str | None:
            kept.append(getattr(response, "text", "") if response else "")
            return error

        calls = [
            Call(
                model=model,
                request=ChatRequest(messages=(Message(role="user", content=t),), max_tokens=32),
                group=f"{i:06d}",
                on_result=record,
            )
            for i, t in enumerate(texts)
        ]
        engine_spec = EngineSpec(
            providers={"openai": ProviderSettings(concurrency=CONCURRENCY, max_retries=0)}
        )
        engine = Engine(store, engine_spec, None)
        start = time.perf_counter()
        summary = asyncio.run(engine.run(calls, label="bench"))
        elapsed = time.perf_counter() - start
        store.close()
    assert summary.failed == 0, summary
    return len(texts) / elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--calls", type=int, default=3000)
    parser.add_argument("--rounds", type=int, default=7)
    args = parser.parse_args()
    process, base_url = start_server()
    try:
        asyncio.run(bare(base_url, prompts(300, "warm-up")))  # both sides warm up first
        through_engine(base_url, prompts(300, "warm-up-engine"))
        bare_rates, engine_rates = [], []
        for r in range(args.rounds):  # interleaved, so drift affects both alike
            bare_rates.append(asyncio.run(bare(base_url, prompts(args.calls, f"bare{r}"))))
            engine_rates.append(through_engine(base_url, prompts(args.calls, f"engine{r}")))
            print(f"round {r + 1}: bare {bare_rates[-1]:.0f} calls/s, "
                  f"engine {engine_rates[-1]:.0f} calls/s")  # fmt: skip
    finally:
        stop(process)
    bare_rate, engine_rate = statistics.median(bare_rates), statistics.median(engine_rates)
    print(f"bare asyncio loop: {bare_rate:.0f} calls/s (median of {args.rounds})")
    print(f"heart engine:      {engine_rate:.0f} calls/s (median of {args.rounds})")
    print(f"{engine_rate / bare_rate:.3f} ratio engine/bare at {CONCURRENCY} concurrent calls")


if __name__ == "__main__":
    main()
