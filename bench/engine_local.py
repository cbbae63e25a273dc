"""Engine throughput against a real local server: judge prompts through heart's engine vs a bare
asyncio loop over the same OpenAI SDK, both against `python -m llama_cpp.server` running the
embedded model, with the same prompts in the same (prefix-sharing) order.

    .venv/bin/python bench/engine_local.py [--items 6] [--rounds 3]

Prints the ratio (engine rate / bare rate) last; the target is at least 0.95.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from importlib.resources import files
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heart.config import (  # noqa: E402
    EngineSpec,
    JudgeSpec,
    JudgingSpec,
    ModelSpec,
    ProviderSettings,
)
from heart.models import ChatRequest  # noqa: E402

GENERIC = "I'm really sorry you're going through this. That sounds so hard."


def judge_requests(base_url: str, n_items: int) -> tuple[JudgeSpec, list[ChatRequest]]:
    """Verdict requests over demo items: each item's original reply against generic warmth,
    in both orders (consecutive requests share the item's prompt prefix)."""
    from heart.corpus import load_corpus
    from heart.items import select_regular_items
    from heart.judging import judge_request
    from heart.prompts import load_prompt

    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "demo.jsonl"
        path.write_text(files("heart.demo").joinpath("esconv_demo.jsonl").read_text())
        corpus = load_corpus(path)
    items = select_regular_items(corpus.conversations, n_items=n_items, seed=0).items
    spec = JudgeSpec(
        name="served-judge",
        family="huggingface",
        model=ModelSpec(
            provider="openai", base_url=base_url, model="smollm2", max_tokens=200,
            structured_output="json_object_schema",
        ),
    )  # fmt: skip
    prompt = load_prompt("judge-heart", JudgingSpec().prompt_version)
    requests = []
    for item in items:
        requests.append(judge_request(item, item.reference, GENERIC, prompt, spec))
        requests.append(judge_request(item, GENERIC, item.reference, prompt, spec))
    return spec, requests


async def clear_prefix(base_url: str) -> None:
    """One unrelated prompt, so the next side starts with nothing useful in the server's cache."""
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    await client.chat.completions.create(
        model="smollm2", messages=[{"role": "user", "content": "Name a colour."}], max_tokens=4
    )
    await client.close()


async def bare(base_url: str, requests: list[ChatRequest]) -> float:
    import openai

    client = openai.AsyncOpenAI(base_url=base_url, api_key="bench", max_retries=0)
    start = time.perf_counter()
    for request in requests:
        kwargs: dict[str, Any] = {
            "messages": [m.model_dump() for m in request.messages],
            "response_format": {"type": "json_object", "schema": request.json_schema},
        }
        await client.chat.completions.create(
            model="smollm2",
            max_tokens=request.max_tokens,
            temperature=request.temperature,
            top_p=request.top_p,
            **kwargs,
        )
    elapsed = time.perf_counter() - start
    await client.close()
    return len(requests) / elapsed * 60


def through_engine(spec: JudgeSpec, requests: list[ChatRequest]) -> float:

    from heart.engine import Call, Engine
    from heart.models.openai_compat import OpenAICompatibleModel
    from heart.store import open_store

    model = OpenAICompatibleModel(spec.model)
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(f"sqlite:///{folder}/bench.db")
        calls = [
            Call(model=model, request=r, group=f"{i:04d}", on_result=lambda _s, _r, e: e)
            for i, r in enumerate(requests)
        ]
        engine = Engine(
            store, EngineSpec(providers={"openai": ProviderSettings(concurrency=1)}),
            None,
        )  # fmt: skip
        start = time.perf_counter()
        summary = asyncio.run(engine.run(calls, label="bench"))
        elapsed = time.perf_counter() - start
        store.close()
    assert summary.failed == 0, summary.errors
    return len(requests) / elapsed * 60


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=6)
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args()
    from tests.servers import llama_server

    with llama_server() as base_url:
        spec, requests = judge_requests(base_url, args.items)
        asyncio.run(bare(base_url, requests[:2]))  # warm-up
        bare_rates, engine_rates = [], []
        for r in range(args.rounds):
            asyncio.run(clear_prefix(base_url))
            bare_rates.append(asyncio.run(bare(base_url, requests)))
            asyncio.run(clear_prefix(base_url))
            engine_rates.append(through_engine(spec, requests))
            print(f"round {r + 1}: bare {bare_rates[-1]:.1f}/min, "
                  f"engine {engine_rates[-1]:.1f}/min")  # fmt: skip
    bare_rate, engine_rate = statistics.median(bare_rates), statistics.median(engine_rates)
    print(f"{len(requests)} judge prompts per side, llama.cpp server with {spec.model.model}")
    print(f"bare asyncio loop: {bare_rate:.1f} judgments/min")
    print(f"heart engine:      {engine_rate:.1f} judgments/min")
    print(f"{engine_rate / bare_rate:.3f} ratio engine/bare")


if __name__ == "__main__":
    main()
