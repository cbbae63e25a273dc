"""Cost per verdict: heart's judging with batch mode on against a plain client sending the same
prompts live, both billed at list prices from the usage a protocol-faithful fake server reports.

The design is the paper's: 300 items, 20 systems, all 190 pairs per item, three LLM judges (one
Anthropic, two OpenAI) each rating every pair once, in the A/B order the study's seed gives. A
fixed sample of whole items is run: ``--items`` k of the 300 (all their pairs, all three judges),
chosen at evenly spaced quantiles of the length of the context the judges read, so the sample's
prompt lengths spread like the design's. Three sides send the same prompts, each to a fresh fake
server (tests/fakes/fault_server.py, run as a process on its own core):

* plain: a hand-written asyncio loop over the official SDKs, in random order, what a team's own
  script would send: the same system prompt, user message and output schema (OpenAI
  ``response_format``, Anthropic a forced tool), no ``cache_control``, no ``prompt_cache_key``;
* heart live: heart's judging stage with its defaults (batch off): prompts in heart's order,
  Anthropic prefixes marked with ``cache_control`` (5 minutes), OpenAI ``prompt_cache_key``;
* heart batch: the same with ``engine.batch.enabled`` (batches of 1,000, polled every 0.05 s
  instead of every minute), through the fake's OpenAI Batch API and Anthropic Message Batches.

Heart's side goes through its real code: a study store (SQLite in a temporary folder) with the
items heart selects from ESConv (``--esconv``, by default ../shared/data/esconv/hf_splits when it
is there, read in place; else the bundled demo corpus), the systems, their replies and the pairs
``build_pairs`` makes; then ``plan_judging`` and ``run_calls`` on the plan's calls, priced by
``heart.models.billed`` into the stored rows. One system is the ESConv supporter's own reply; the
other 19 replies to an item are synthetic (one to three sentences, distinct per system and item).

The fake server (``--token-unit chars4``: a token is 4 characters) reports usage as each
provider does, with a prompt cache of each provider's rules: OpenAI caches prompts of 1,024
tokens or more automatically in 128-token steps; Anthropic caches a ``cache_control`` prefix of
1,024 tokens or more; entries live 5 minutes from their last hit. Its judge
(tests/fakes/judge_verdicts.py) answers a valid verdict computed from the two replies shown and
the model asked (a one-sentence rationale, about 55 tokens), so every side must get the same
verdict for the same prompt; the benchmark checks that they do, prompt by prompt.

Time, as the cache sees it, is a virtual clock that moves on ``S`` seconds per answered request,
on every side, live or batched. ``S`` models the full design run live: three judges, each with 4
calls in flight taking about 3 s, answer 4 calls a second (``--live-rate``), and each request of
a k-item sample stands for 300/k requests of the full design, so ``S = 300 / k / 4`` seconds
(12.5 s for 6 items). In random order an item comes back to the same judge every 225 s on
average, inside the 5-minute lifetime, so the plain client gets cache hits too. The fake works
through a batch in the order it was submitted at the same rate; real providers spread a batch
over many machines in no stated order, and both say batch cache hits are best effort, so the
benchmark also prints heart's batch cost with no cache hit in any batch (the batch discount
alone). OpenAI routes requests to caches by their first tokens; the fake finds any prefix it
holds, which favours the plain client, whose requests all start with the same rubric.

Prices (US dollars per million tokens) are list prices, read on 2026-11-26 from the providers'
pricing pages as copied by price trackers (https://platform.claude.com/docs/en/about-claude/
pricing, https://platform.openai.com/docs/pricing), unchanged since the models came out: Claude
Sonnet 4.6 $3 in, $15 out, cache reads $0.30, 5-minute cache writes $3.75, 1-hour writes $6;
GPT-4.1 $2 in, $0.50 cached, $8 out; GPT-4.1 mini $0.40 in, $0.10 cached, $1.60 out. Both
providers bill a batch at half price (Anthropic says its cache prices stack with the batch
discount; heart's ``Price`` halves every price of a batched call). Both sides are priced with
the same ``Price`` objects: heart from its stored rows, the plain client with ``Price.cost``
over the usage its SDK answers carry (cached tokens at the cached price where reported).

The wall-clock comparison is heart live against the plain client, each answer delayed 50 ms by
the server (fault plan ``hang:0.05``), both at heart's default concurrency (4 calls in flight per
provider); heart's time is its engine run (the plan is made before the clock starts), with
every answer and verdict written to its store. Rounds alternate which side goes first.

    .venv/bin/python bench/judge_cost.py [--items 6] [--rounds 3] [--esconv PATH]

Targets: heart batch at least 3x cheaper per verdict than the plain client, with identical
verdicts; heart live / plain wall-clock ratio (plain seconds / heart seconds) at least 0.95. The
last line is the cost ratio, the line before it the wall-clock ratio (median of the rounds).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any

from sqlalchemy import select

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers import stop  # noqa: E402

from heart.config import (  # noqa: E402
    BatchSettings,
    EngineSpec,
    ItemsSpec,
    JudgeSpec,
    ModelSpec,
    Price,
    StudyConfig,
    SystemSpec,
)
from heart.engine import run_calls  # noqa: E402
from heart.ids import completion_id, judgment_id  # noqa: E402
from heart.items import stored_items  # noqa: E402
from heart.judging import Verdict, build_pairs, parse_verdict, plan_judging  # noqa: E402
from heart.pipeline import build_items  # noqa: E402
from heart.store import CompletionRow, JudgmentRow, now_iso, open_store  # noqa: E402
from heart.study import Study, sync_roster  # noqa: E402
from heart.transcript import render_transcript  # noqa: E402
from heart.types import Item, Status  # noqa: E402

DESIGN_ITEMS = 300
SYSTEMS = 20
SEED = 2026
READ_ON = "2026-11-26"
SHARED_ESCONV = ROOT.parent / "shared" / "data" / "esconv" / "hf_splits"
REPLY_FN = "tests.fakes.judge_verdicts:verdict_reply"

SONNET_4_6 = Price(
    input_per_mtok=3.0,
    output_per_mtok=15.0,
    cached_input_per_mtok=0.30,
    cache_write_per_mtok=3.75,
    cache_write_1h_per_mtok=6.0,
)
GPT_4_1 = Price(input_per_mtok=2.0, output_per_mtok=8.0, cached_input_per_mtok=0.50)
GPT_4_1_MINI = Price(input_per_mtok=0.40, output_per_mtok=1.60, cached_input_per_mtok=0.10)
JUDGES: dict[str, tuple[str, str, Price]] = {
    # judge name: (provider, family, list price read on READ_ON)
    "claude-sonnet-4-6": ("anthropic", "anthropic", SONNET_4_6),
    "gpt-4.1": ("openai", "openai", GPT_4_1),
    "gpt-4.1-mini": ("openai", "openai", GPT_4_1_MINI),
}
# none of the judges' families, so every judge rates every pair
FAMILIES = ["google", "meta", "mistral", "deepseek", "alibaba", "microsoft", "cohere", "xai"]

OPENINGS = [
    "That sounds really hard.",
    "I'm so sorry you're dealing with this.",
    "It makes sense that you feel this way.",
    "Thank you for telling me about this.",
    "That is a lot to carry on your own.",
    "I can hear how much this has been weighing on you.",
    "You've been through so much lately.",
    "It sounds like you're exhausted by all of it.",
    "What you're describing would shake anyone.",
    "I'm glad you reached out about this.",
]
MIDDLES = [
    "Feeling {emotion} after everything with {problem} is completely understandable.",
    "When {problem} takes over like this, it can leave you feeling {emotion} most of the day.",
    "A lot of people in your place would feel {emotion} too, so please go easy on yourself.",
    "It seems like {problem} has touched almost every part of your life right now.",
    "Being {emotion} doesn't mean you're failing; it means this matters to you.",
    "You don't have to sort out all of {problem} tonight.",
]
QUESTIONS = [
    "What has been the hardest part for you this week?",
    "Is there someone you trust that you could talk to about it?",
    "What would help you feel a little steadier tomorrow?",
    "Have you had any moments where it felt lighter?",
    "What do you think you need most right now?",
    "Would it help to think through one small step together?",
    "How have you been sleeping with all of this going on?",
]


# --------------------------------------------------------------------------- the design


def synthetic_reply(system: str, item: Item, taken: set[str]) -> str:
    """A one to three sentence reply of ``system`` to ``item``, unlike the replies in
    ``taken``."""
    words = {"emotion": item.emotion_type or "upset", "problem": item.problem_type or "this"}
    for attempt in range(100):
        rng = random.Random(f"{system}/{item.id}/{attempt}")
        parts = [rng.choice(OPENINGS)]
        shape = rng.choice(("question", "middle", "both", "both"))
        if shape in ("middle", "both"):
            parts.append(rng.choice(MIDDLES).format(**words))
        if shape in ("question", "both"):
            parts.append(rng.choice(QUESTIONS))
        reply = " ".join(parts)
        if reply not in taken:
            taken.add(reply)
            return reply
    raise RuntimeError(f"no distinct reply left for {system} on {item.id}")


def judge_specs(base_url: str) -> list[JudgeSpec]:
    """The three judges at the fake server ``base_url`` (http://127.0.0.1:PORT)."""
    specs = []
    for name, (provider, family, price) in JUDGES.items():
        url = base_url if provider == "anthropic" else f"{base_url}/v1"
        model = ModelSpec(provider=provider, base_url=url, model=name, max_tokens=200, price=price)
        specs.append(JudgeSpec(name=name, family=family, model=model))
    return specs


def study_config(esconv: Path, base_url: str, *, batch: bool) -> StudyConfig:
    """The paper-sized study: 300 items, 20 systems, all pairs, three judges."""
    systems = [SystemSpec(name="esconv-original", kind="dataset", family="dataset")]
    systems += [
        SystemSpec(
            name=f"model-{i:02d}",
            kind="model",
            family=FAMILIES[i % len(FAMILIES)],
            model=ModelSpec(provider="openai", base_url=f"{base_url}/v1", model=f"model-{i:02d}"),
        )
        for i in range(1, SYSTEMS)
    ]
    engine = EngineSpec(batch=BatchSettings(enabled=True, poll_s=0.05)) if batch else EngineSpec()
    return StudyConfig(
        name="judge-cost",
        seed=SEED,
        items=ItemsSpec(esconv=str(esconv), regular=DESIGN_ITEMS),
        systems=systems,
        judges=judge_specs(base_url),
        engine=engine,
    )


def sampled(items: list[Item], k: int) -> list[Item]:
    """``k`` items at evenly spaced quantiles of their context's length."""
    ranked = sorted(items, key=lambda i: (len(render_transcript(i.context)), i.id))
    return [ranked[int((j + 0.5) * len(ranked) / k)] for j in range(k)]


def build_template(folder: Path, esconv: Path, k: int) -> tuple[Path, int, list[Item]]:
    """A study store holding the design's items, the sample's replies and their pairs; returns
    its path, how many items the design has, and the sample."""
    path = folder / "template.db"
    config = study_config(esconv, "http://127.0.0.1:9", batch=False)
    study = Study(root=folder, config=config, store=open_store(f"sqlite:///{path}"))
    sync_roster(study)
    build_items(study)
    items = stored_items(study.store)
    sample = sampled(items, k)
    with study.store.session() as session:
        for item in sample:
            taken: set[str] = {item.reference}
            for spec in config.systems:
                text = item.reference if spec.kind == "dataset" else None
                session.add(
                    CompletionRow(
                        id=completion_id(item.id, spec.name), item_id=item.id, system=spec.name,
                        status=Status.OK, created_at=now_iso(),
                        text=text or synthetic_reply(spec.name, item, taken),
                    )
                )  # fmt: skip
    build_pairs(study.store, config.pairs, config.seed)
    study.close()
    return path, len(items), sample


def copied_study(template: Path, folder: Path, config: StudyConfig) -> Study:
    """A fresh study over a copy of the template store, its roster set to ``config``."""
    folder.mkdir()
    target = folder / "heart.db"
    with sqlite3.connect(template) as source, sqlite3.connect(target) as copy:
        source.backup(copy)
    study = Study(root=folder, config=config, store=open_store(f"sqlite:///{target}"))
    sync_roster(study)
    return study


# --------------------------------------------------------------------------- the fake server


@contextmanager
def fake_server(seconds_per_request: float, latency_s: float) -> Iterator[str]:
    """A fresh fault server process on its own core (cache empty, clock at 0); yields its base
    URL, http://127.0.0.1:PORT."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.fault_server", "--port", "0", "--print-port",
         "--token-unit", "chars4", "--cache-min-tokens", "1024",
         "--seconds-per-request", str(seconds_per_request), "--batch-polls", "2",
         "--default-plan", f"hang:{latency_s}", "--reply-fn", REPLY_FN],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline().strip())
        cores = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []
        if len(cores) >= 2:
            os.sched_setaffinity(process.pid, {cores[0]})
            os.sched_setaffinity(0, set(cores[1:]))
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


# --------------------------------------------------------------------------- the sides


@dataclass(frozen=True)
class Prompt:
    """One judge request: whom it asks and what, keyed by the judgment it gives."""

    key: str
    judge: str
    system: str
    user: str
    max_tokens: int
    schema: dict[str, Any]


@dataclass
class Side:
    """What one side sent, got and paid."""

    name: str
    calls: int = 0
    tokens_in: int = 0
    cached_in: int = 0
    dollars: float = 0.0
    seconds: float = 0.0
    verdicts: dict[str, Verdict] = field(default_factory=dict)
    floor_dollars: float = 0.0  # heart batch billed as if no batched prompt hit a cache

    def per_thousand(self, dollars: float | None = None) -> float:
        return 1000 * (self.dollars if dollars is None else dollars) / len(self.verdicts)

    def line(self) -> str:
        cached = self.cached_in / self.tokens_in if self.tokens_in else 0.0
        return (
            f"{self.name:<12}{self.calls:>7}{len(self.verdicts):>9}{self.tokens_in:>12,}"
            f"{self.cached_in:>12,} ({cached:4.0%}){self.dollars:>10.4f}"
            f"{self.per_thousand():>10.4f}{self.seconds:>9.1f}"
        )


HEADER = (
    f"{'side':<12}{'calls':>7}{'verdicts':>9}{'tokens in':>12}{'cached in':>19}"
    f"{'billed $':>10}{'$/1k':>10}{'seconds':>9}"
)


def prompts_of(study: Study) -> list[Prompt]:
    """The judging plan's requests, as the plain client sends them."""
    plan = plan_judging(study)
    out = []
    for call, (pair, judge, shown) in zip(plan.calls, plan.asks, strict=True):
        system, user = (m.content for m in call.request.messages)
        assert call.request.json_schema is not None
        out.append(
            Prompt(
                judgment_id(pair.id, judge.name, shown.order), judge.name, system, user,
                call.request.max_tokens, call.request.json_schema,
            )
        )  # fmt: skip
    return out


async def plain_live(prompts: list[Prompt], base_url: str, concurrency: int, seed: int) -> Side:
    """The plain client: every prompt once, in random order, ``concurrency`` calls in flight per
    provider, billed from the usage in each answer."""
    import anthropic
    import openai

    side = Side("plain live")
    oai = openai.AsyncOpenAI(base_url=f"{base_url}/v1", api_key="bench", max_retries=0)
    claude = anthropic.AsyncAnthropic(base_url=base_url, api_key="bench", max_retries=0)
    slots = {"openai": asyncio.Semaphore(concurrency), "anthropic": asyncio.Semaphore(concurrency)}
    order = list(prompts)
    random.Random(seed).shuffle(order)

    async def ask_openai(p: Prompt, price: Price) -> tuple[str, float, int, int]:
        answer = await oai.chat.completions.create(
            model=p.judge,
            messages=[{"role": "system", "content": p.system}, {"role": "user", "content": p.user}],
            max_tokens=p.max_tokens, temperature=0,
            response_format={"type": "json_schema",
                             "json_schema": {"name": "verdict", "schema": p.schema}},
        )  # fmt: skip
        usage = answer.usage
        assert usage is not None
        details = usage.prompt_tokens_details
        cached = (details.cached_tokens or 0) if details is not None else 0
        cost = price.cost(usage.prompt_tokens, usage.completion_tokens, cache_read=cached)
        return answer.choices[0].message.content or "", cost, usage.prompt_tokens, cached

    async def ask_anthropic(p: Prompt, price: Price) -> tuple[str, float, int, int]:
        answer = await claude.messages.create(
            model=p.judge, system=p.system, max_tokens=p.max_tokens,
            messages=[{"role": "user", "content": p.user}],
            tools=[{"name": "verdict", "description": "Give the verdict.",
                    "input_schema": p.schema}],
            tool_choice={"type": "tool", "name": "verdict"},
        )  # fmt: skip
        text = ""
        for block in answer.content:
            if block.type == "tool_use":
                text = json.dumps(block.input)
                break
            if block.type == "text":
                text += block.text
        usage = answer.usage
        read = usage.cache_read_input_tokens or 0
        written = usage.cache_creation_input_tokens or 0
        tokens_in = usage.input_tokens + read + written
        cost = price.cost(tokens_in, usage.output_tokens, cache_read=read, cache_write=written)
        return text, cost, tokens_in, read

    async def one(p: Prompt) -> None:
        provider, _, price = JUDGES[p.judge]
        async with slots[provider]:
            ask = ask_anthropic if provider == "anthropic" else ask_openai
            text, cost, tokens_in, cached = await ask(p, price)
        side.calls += 1
        side.dollars += cost
        side.tokens_in += tokens_in
        side.cached_in += cached
        side.verdicts[p.key] = parse_verdict(text)

    start = time.perf_counter()
    await asyncio.gather(*(one(p) for p in order))
    side.seconds = time.perf_counter() - start
    await oai.close()
    await claude.close()
    return side


def through_heart(
    name: str, template: Path, folder: Path, config: StudyConfig, prompts: list[Prompt]
) -> Side:
    """Heart's judging stage on a copy of the template store, billed from its stored rows;
    its requests must be ``prompts``."""
    same_prices(config)
    study = copied_study(template, folder, config)
    plan = plan_judging(study)
    assert prompts_of(study) == prompts
    start = time.perf_counter()
    summary = asyncio.run(run_calls(plan.calls, study.store, label="judge", spec=config.engine))
    seconds = time.perf_counter() - start
    assert summary.failed == 0 and summary.cached == 0 and summary.reasks == 0, summary
    prices = {judge.name: judge.model.price for judge in config.judges}
    side = Side(name, calls=len(plan.calls), seconds=seconds)
    with study.store.session() as session:
        for row in session.scalars(select(JudgmentRow)):
            assert row.status == Status.OK and row.raw is not None, row.error
            side.verdicts[row.id] = parse_verdict(row.raw)
            side.tokens_in += row.tokens_in or 0
            side.cached_in += row.cached_tokens_in or 0
            side.dollars += row.cost_usd or 0.0
            side.floor_dollars += (row.list_cost_usd or 0.0) * prices[row.judge].batch_share
    study.close()
    assert abs(side.dollars - summary.cost_usd) < 1e-9, (side.dollars, summary.cost_usd)
    return side


# --------------------------------------------------------------------------- the run


def same_prices(config: StudyConfig) -> None:
    """Heart's judges are priced with the very prices the plain client uses."""
    for judge in config.judges:
        assert judge.model.price == JUDGES[judge.name][2], judge.name


def same_verdicts(reference: Side, other: Side) -> None:
    """Every prompt got the same verdict on both sides."""
    assert reference.verdicts.keys() == other.verdicts.keys(), (reference.name, other.name)
    differ = [k for k, v in reference.verdicts.items() if other.verdicts[k] != v]
    assert not differ, f"{len(differ)} verdicts differ between {reference.name} and {other.name}"


def demo_corpus(folder: Path) -> Path:
    path = folder / "esconv_demo.jsonl"
    path.write_text(files("heart.demo").joinpath("esconv_demo.jsonl").read_text())
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=6, help="items of the sample (whole)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds of the wall-clock pair")
    parser.add_argument("--esconv", type=Path, default=None, help="ESConv file or folder")
    parser.add_argument(
        "--live-rate", type=float, default=4.0,
        help="calls a second of the full design run live (3 judges x 4 in flight / 3 s)",
    )  # fmt: skip
    parser.add_argument("--latency", type=float, default=0.05, help="server seconds per answer")
    args = parser.parse_args()
    import anthropic  # noqa: F401  (both SDKs loaded before any clock starts)
    import openai  # noqa: F401

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        esconv = args.esconv or (SHARED_ESCONV if SHARED_ESCONV.is_dir() else demo_corpus(folder))
        template, design_items, sample = build_template(folder, esconv, args.items)
        tick = DESIGN_ITEMS / len(sample) / args.live_rate
        config = study_config(esconv, "http://127.0.0.1:9", batch=False)
        prompts = prompts_of(copied_study(template, folder / "prompts", config))
        print(f"{len(prompts)} verdict prompts: {len(sample)} of {design_items} items from "
              f"{esconv}, {SYSTEMS} systems, all pairs, {len(JUDGES)} judges; cache clock "
              f"{tick:g} s per request; prices read on {READ_ON}", flush=True)  # fmt: skip
        concurrency = EngineSpec().settings("openai").concurrency
        plain_runs: list[Side] = []
        heart_runs: list[Side] = []
        for r in range(args.rounds):
            for who in ("plain", "heart") if r % 2 == 0 else ("heart", "plain"):
                with fake_server(tick, args.latency) as url:
                    if who == "plain":
                        plain_runs.append(asyncio.run(plain_live(prompts, url, concurrency, SEED)))
                    else:
                        config = study_config(esconv, url, batch=False)
                        live = through_heart(
                            "heart live", template, folder / f"live{r}", config, prompts
                        )
                        heart_runs.append(live)
            print(f"round {r + 1}: plain {plain_runs[-1].seconds:.2f} s, heart live "
                  f"{heart_runs[-1].seconds:.2f} s", flush=True)  # fmt: skip
        with fake_server(tick, args.latency) as url:
            config = study_config(esconv, url, batch=True)
            batch = through_heart("heart batch", template, folder / "batch", config, prompts)
    plain, live = plain_runs[0], heart_runs[0]
    for other in (*plain_runs[1:], *heart_runs, batch):
        same_verdicts(plain, other)
    assert {p.key for p in prompts} == plain.verdicts.keys()
    print(HEADER)
    for side in (plain, live, batch):
        print(side.line())
    floor = batch.per_thousand(batch.floor_dollars)
    print(f"heart batch with no cache hit in any batch: ${floor:.4f} per 1,000 verdicts, "
          f"{plain.per_thousand() / floor:.2f}x cheaper than plain live")  # fmt: skip
    print(f"heart live: {plain.per_thousand() / live.per_thousand():.2f}x cheaper than plain "
          "live")  # fmt: skip
    print(f"verdicts identical on every side and round: {len(plain.verdicts)} prompts")
    wall = statistics.median(p.seconds for p in plain_runs) / statistics.median(
        h.seconds for h in heart_runs
    )
    print(
        f"{wall:.3f} wall-clock ratio heart live/plain live (plain s / heart s, median of "
        f"{args.rounds}, {concurrency} in flight per provider, {args.latency:g} s per answer)"
    )
    print(f"{plain.per_thousand() / batch.per_thousand():.2f}x cheaper per verdict "
          "(heart batch vs plain live)")  # fmt: skip


if __name__ == "__main__":
    main()
