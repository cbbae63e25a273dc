"""Judging throughput with the embedded judge, in one run, on the same verdict prompts:

* heart: the judging stage's calls through the engine (fresh store, nothing cached), in heart's
  dispatch order, which keeps one item's prompts together and, within the item, those showing
  the same reply first;
* bare: a plain llama-cpp-python loop (its own ``Llama``, opened with heart's settings) over
  the same prompts in the same order;
* mixed: heart again, on the same prompts interleaved across items, so consecutive prompts never
  share more than the rubric; the prefix llama.cpp could reuse is lost.

Every llama.cpp call, on every side, runs on heart's one llama.cpp worker thread, as heart's own
calls always do: llama.cpp keeps a team of compute threads per calling thread, and calls
alternating between two calling threads leave two teams competing for the cores.

Each item's original reply and four other replies give the ten pairs of an all-pairs design
with five systems, shown in heart's seeded A/B order. Items come from ESConv (``--esconv``, by
default ../shared/data/esconv/hf_splits when it is there) or else from the bundled demo corpus.

    .venv/bin/python bench/judge_throughput.py [--items 3] [--rounds 3] [--esconv PATH]

Targets: heart/bare at least 0.95; heart ordered/mixed at least 2. Each round measures both
ratios; the last two lines print their medians over the rounds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from importlib.resources import files
from pathlib import Path
from typing import Any, TypeVar

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from heart.config import EngineSpec, JudgeSpec, JudgingSpec, ModelSpec  # noqa: E402
from heart.models import ChatRequest  # noqa: E402

REPLIES = [
    "I'm really sorry you're going through this. That sounds so hard.",
    "That sounds like a lot to carry. What part of it weighs on you most right now?",
    "You have been holding this on your own for a while. Who else knows how you feel?",
    "It makes sense to feel worn down. What would a small step this week look like?",
]
T = TypeVar("T")
SHARED_ESCONV = ROOT.parent / "shared" / "data" / "esconv" / "hf_splits"


def load_items(n_items: int, esconv: Path | None) -> tuple[str, list[Any]]:
    """``n_items`` regular items from ESConv if given, else from the demo corpus."""
    from heart.corpus import load_corpus
    from heart.items import select_regular_items

    if esconv is not None:
        corpus = load_corpus(esconv)
        source = f"ESConv ({esconv})"
    else:
        with tempfile.TemporaryDirectory() as folder:
            path = Path(folder) / "demo.jsonl"
            path.write_text(files("heart.demo").joinpath("esconv_demo.jsonl").read_text())
            corpus = load_corpus(path)
        source = "the demo corpus"
    return source, select_regular_items(corpus.conversations, n_items=n_items, seed=0).items


def verdict_requests(items: list[Any]) -> tuple[JudgeSpec, list[list[ChatRequest]]]:
    """Per item, the judge's requests for all ten pairs of five replies (the original and four
    others) in heart's seeded A/B order, sorted as heart dispatches them: pairs showing the same
    reply first back to back."""
    import itertools

    from heart.ids import seeded_order
    from heart.judging import judge_request
    from heart.prompts import load_prompt

    spec = JudgeSpec(
        name="embedded-judge",
        family="huggingface",
        model=ModelSpec(provider="embedded", max_tokens=200),
    )
    prompt = load_prompt("judge-heart", JudgingSpec().prompt_version)
    groups = []
    for item in items:
        replies = [item.reference, *REPLIES]
        pairs = itertools.combinations([str(i) for i in range(len(replies))], 2)
        shown = sorted(seeded_order(0, item.id, a, b) for a, b in pairs)
        groups.append(
            [judge_request(item, replies[int(a)], replies[int(b)], prompt, spec) for a, b in shown]
        )
    return spec, groups


def _bare_kwargs(request: ChatRequest) -> dict[str, Any]:
    return {
        "messages": [m.model_dump() for m in request.messages],
        "max_tokens": request.max_tokens,
        "temperature": request.temperature,
        "top_p": request.top_p,
        "response_format": {"type": "json_object", "schema": request.json_schema},
    }


def on_worker(work: Callable[[], T]) -> T:
    """Run ``work`` on heart's llama.cpp worker thread and wait for it."""
    from heart.models.embedded import _WORKER

    return _WORKER.submit(work).result()


def bare(llm: Any, requests: list[ChatRequest]) -> float:
    """Seconds a plain loop over ``requests`` takes."""

    def loop() -> float:
        start = time.perf_counter()
        for request in requests:
            llm.create_chat_completion(**_bare_kwargs(request))
        return time.perf_counter() - start

    return on_worker(loop)


def through_heart(spec: JudgeSpec, requests: list[ChatRequest]) -> float:
    """Seconds heart's engine takes for ``requests``, with heart's verdict check (the store is
    made before the clock starts)."""

    from heart.engine import Call, Engine
    from heart.judging import verdict_check
    from heart.models import make_chat_model
    from heart.store import open_store

    model = make_chat_model(spec.model)
    check = verdict_check(JudgingSpec().reasks)
    with tempfile.TemporaryDirectory() as folder:
        store = open_store(f"sqlite:///{folder}/bench.db")
        calls = [
            Call(
                model=model, request=r, group=f"{i:04d}", on_result=lambda _s, _r, e: e, check=check
            )
            for i, r in enumerate(requests)
        ]
        engine = Engine(store, EngineSpec(), None)
        start = time.perf_counter()
        summary = asyncio.run(engine.run(calls, label="bench"))
        elapsed = time.perf_counter() - start
        store.close()
    assert summary.failed == 0 and summary.reasks == 0, summary
    return elapsed


def prime(llm: Any, primer: ChatRequest) -> None:
    """Leave llama.cpp's cache holding the rubric and an unrelated conversation, as it is when a
    run moves on to a new item."""
    kwargs = _bare_kwargs(primer) | {"max_tokens": 1}
    kwargs.pop("response_format")
    on_worker(lambda: llm.create_chat_completion(**kwargs))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=3)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--esconv", type=Path, default=None, help="ESConv file or folder")
    args = parser.parse_args()
    from llama_cpp import Llama

    from heart.models.embedded import _load, embedded_model_path, llama_settings

    esconv = args.esconv or (SHARED_ESCONV if SHARED_ESCONV.is_dir() else None)
    source, items = load_items(args.items + 1, esconv)
    spec, groups = verdict_requests(items)
    primer, groups = groups[-1][0], groups[:-1]
    mixed = [group[k] for k in range(len(groups[0])) for group in groups]
    size = len(groups[0])
    chunks = [mixed[i * size : (i + 1) * size] for i in range(len(groups))]
    path, n_ctx = embedded_model_path(), spec.model.n_ctx
    plain = on_worker(lambda: Llama(**llama_settings(path, n_ctx)))
    heart_llm = _load(path, n_ctx).llama  # heart's own instance
    n = sum(len(g) for g in groups)
    sides = ["bare", "heart", "mixed"]
    rates: dict[str, list[float]] = {side: [] for side in sides}
    ratios: dict[str, list[float]] = {"heart ordered/mixed": [], "heart/bare": []}
    for r in range(args.rounds):
        # step by step, the three sides take turns (who goes first rotates), each on one item's
        # prompts or on as many mixed ones and from the same cache state, so drift in the
        # machine's speed (a shared virtual machine drifts) hits all three alike
        seconds = dict.fromkeys(sides, 0.0)
        for i, (group, chunk) in enumerate(zip(groups, chunks, strict=True)):
            for side in sides[(i + r) % 3 :] + sides[: (i + r) % 3]:
                if side == "bare":
                    prime(plain, primer)
                    seconds[side] += bare(plain, group)
                else:
                    prime(heart_llm, primer)
                    seconds[side] += through_heart(spec, group if side == "heart" else chunk)
        for side, spent in seconds.items():
            rates[side].append(n / spent * 60)
        ratios["heart ordered/mixed"].append(seconds["mixed"] / seconds["heart"])
        ratios["heart/bare"].append(seconds["bare"] / seconds["heart"])
        print(f"round {r + 1}: " + ", ".join(f"{k} {v[-1]:.1f}/min" for k, v in rates.items())
              + "; " + ", ".join(f"{k} {v[-1]:.3f}" for k, v in ratios.items()),
              flush=True)  # fmt: skip
    bare_rate, heart_rate, mixed_rate = (statistics.median(v) for v in rates.values())
    print(f"{n} verdict prompts per side ({args.items} items from {source}, "
          "10 pairs each), embedded judge, median of the rounds")  # fmt: skip
    print(f"bare loop, items together:  {bare_rate:.1f} judgments/min")
    print(f"heart, items together:      {heart_rate:.1f} judgments/min")
    print(f"heart, items mixed:         {mixed_rate:.1f} judgments/min")
    print(f"{statistics.median(ratios['heart ordered/mixed']):.3f} ratio heart ordered/mixed")
    print(f"{statistics.median(ratios['heart/bare']):.3f} ratio heart/bare")
    on_worker(plain.close)


if __name__ == "__main__":
    main()
