"""Cost per verdict: heart's judging with batch mode on against a plain client sending the same
prompts live, both billed at list prices from the usage a protocol-faithful fake server reports.

The design is the paper's: 300 items, 20 systems, all 190 pairs per item, three LLM judges (one
Anthropic, two OpenAI) each rating every pair once, in the A/B order the study's seed gives. A
fixed sample of whole items is run: ``--items`` k of the 300 (all their pairs, all three judges),
chosen at evenly spaced quantiles of the length of the context the judges read, so the sample's
prompt lengths spread like the design's. Three sides send the same prompts, each alone to a
fresh fake server (tests/fakes/fault_server.py, run as a process on its own core: empty cache,
clock at 0), each with 4 calls in flight per provider (heart's default):

* plain live: a hand-written asyncio loop over the official SDKs, in random order, what a
  team's own script would send: the same system prompt, user message and output schema (OpenAI
  ``response_format``, Anthropic a forced tool), no ``cache_control``, no ``prompt_cache_key``;
* heart live: heart's judging stage with its defaults (batch off): prompts in heart's order,
  Anthropic prefixes marked with ``cache_control`` (5 minutes), OpenAI ``prompt_cache_key``;
* heart batch: the same with ``engine.batch.enabled`` (batches of 1,000, polled every 0.05 s
  instead of every minute), through the fake's OpenAI Batch API and Anthropic Message Batches.

Heart's sides go through its real code: a study store (SQLite in a temporary folder) with the
items heart selects from ESConv (``--esconv``, by default ../shared/data/esconv/hf_splits when it
is there, read in place; else the bundled demo corpus), the systems, their replies and the pairs
``build_pairs`` makes; then ``plan_judging`` and ``run_calls`` on the plan's calls, priced by
``heart.models.billed`` into the stored rows. One system is the ESConv supporter's own reply; the
other 19 replies to an item are synthetic (one to three sentences, distinct per system and item).

The fake server (``--token-unit chars4``: a token is 4 characters) reports usage as each
provider does, with a prompt cache of each provider's rules: OpenAI caches prompts of 1,024
tokens or more automatically, in 128-token steps; Anthropic caches a ``cache_control`` prefix
of 1,024 tokens or more; entries live 5 minutes from their last hit. The output schema is
billed as prompt tokens ahead of the system prompt (``--schema-tokens``), as the providers do:
Anthropic's forced tool (its JSON, after the 313 tokens of tool-use instructions Anthropic adds
for a forced tool), OpenAI's ``response_format`` schema (its JSON); every side sends it, and it
belongs to every prefix a cache can hold. Its judge
(tests/fakes/judge_verdicts.py) answers a valid verdict computed from the two replies shown and
the model asked (a one-sentence rationale, about 55 tokens), so every side must get the same
verdict for the same prompt; the benchmark checks that they do, prompt by prompt.

Time, as the cache sees it, is a virtual clock that moves on ``S`` seconds per answered request,
on every side, live or batched. ``S`` models the full design run live: three judges, each with 4
calls in flight taking about 3 s, answer 4 calls a second (``--live-rate``), and each request of
a k-item sample stands for 300/k requests of the full design, so ``S = 300 / k / 4`` seconds
(12.5 s for 6 items). In random order an item comes back to the same judge every 225 s on
average, inside the 5-minute lifetime, so the plain client gets cache hits too. The fake works
through a batch in the order it was submitted, at the same rate; real providers spread a batch
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
discount; heart's ``Price`` halves every price of a batched call, cached ones included). Both
sides are priced with the same ``Price`` objects: heart from its stored rows (checked against
the engine's own sum), the plain client with ``Price.cost`` over the usage its SDK answers carry
(cached tokens at the cached price where reported).

Wall clock: the cost runs are answered at once, so their seconds measure CPU (the SDKs alone
take a few milliseconds a call). The wall-clock pair is heart live against the plain client on
the prompts of the sample's middle item, each answer taking ``--latency`` seconds (fault plan
``hang:S``, default 0.2, so that both wait on the server as real clients do), at 4 calls in
flight per provider, in ``--slices`` alternating turns (each turn a share of every provider's
calls, so drift on a shared machine hits both alike). Heart's time is its engine runs (the plan
is made before the clock starts), with every answer and verdict written to its store.

    .venv/bin/python bench/judge_cost.py [--items 6] [--latency 0.2] [--slices 6] [--esconv PATH]

Targets: heart batch at least 3x cheaper per verdict than the plain client, with identical
verdicts; heart live / plain wall-clock ratio (plain seconds / heart seconds) at least 0.95. The
last line is the cost ratio, the line before it the wall-clock ratio.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import os
import random
import sqlite3
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from importlib.resources import files
from pathlib import Path
from typing import Any, TypeVar

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
from heart.engine import Call, run_calls  # noqa: E402
from heart.ids import completion_id, judgment_id  # noqa: E402
from heart.items import stored_items  # noqa: E402
from heart.judging import (  # noqa: E402
    JudgingPlan,
    Verdict,
    build_pairs,
    parse_verdict,
    plan_judging,
)
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
T = TypeVar("T")
CORES = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else []

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
         "--token-unit", "chars4", "--cache-min-tokens", "1024", "--schema-tokens",
         "--seconds-per-request", str(seconds_per_request), "--batch-polls", "2",
         "--default-plan", f"hang:{latency_s}", "--reply-fn", REPLY_FN],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    try:
        assert process.stdout is not None
        port = int(process.stdout.readline().strip())
        if len(CORES) >= 2:
            os.sched_setaffinity(process.pid, {CORES[0]})
            os.sched_setaffinity(0, set(CORES[1:]))
        yield f"http://127.0.0.1:{port}"
    finally:
        stop(process)


# --------------------------------------------------------------------------- the sides


@dataclass(frozen=True)
class Prompt:
    """One judge request: whom it asks and what, keyed by the judgment it gives."""

    key: str
    judge: str
    item: str
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
    paid: dict[tuple[str, str], list[float]] = field(default_factory=dict)  # (judge, item)

    def bill(self, prompt: Prompt, dollars: float) -> None:
        self.dollars += dollars
        self.paid.setdefault((prompt.judge, prompt.item), []).append(dollars)

    def per_thousand_of(self, *, judge: str | None = None, item: str | None = None) -> float:
        """Dollars per 1,000 verdicts of one judge, or on one item."""
        bills = [
            dollars
            for (by, on), paid in self.paid.items()
            if judge in (None, by) and item in (None, on)
            for dollars in paid
        ]
        return 1000 * sum(bills) / len(bills)

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


def prompts_of(plan: JudgingPlan) -> dict[str, Prompt]:
    """The judging plan's requests, as the plain client sends them, by the call's key."""
    out = {}
    for call, (pair, judge, shown) in zip(plan.calls, plan.asks, strict=True):
        system, user = (m.content for m in call.request.messages)
        assert call.request.json_schema is not None
        out[call.key] = Prompt(
            judgment_id(pair.id, judge.name, shown.order), judge.name, pair.item_id, system, user,
            call.request.max_tokens, call.request.json_schema,
        )  # fmt: skip
    return out


class PlainClient:
    """The plain client: each prompt once, ``concurrency`` calls in flight per provider,
    billed from the usage in each answer."""

    def __init__(self, base_url: str, concurrency: int) -> None:
        self.base_url = base_url
        self.concurrency = concurrency
        self.side = Side("plain live")

    def run(self, prompts: list[Prompt]) -> float:
        """Send ``prompts`` in the order given; returns the seconds they took."""
        return asyncio.run(self._run(prompts))

    async def _run(self, prompts: list[Prompt]) -> float:
        import anthropic
        import openai

        oai = openai.AsyncOpenAI(base_url=f"{self.base_url}/v1", api_key="bench", max_retries=0)
        claude = anthropic.AsyncAnthropic(base_url=self.base_url, api_key="bench", max_retries=0)
        slots = {p: asyncio.Semaphore(self.concurrency) for p in ("openai", "anthropic")}
        side = self.side

        async def ask_openai(p: Prompt, price: Price) -> tuple[str, float, int, int]:
            answer = await oai.chat.completions.create(
                model=p.judge,
                messages=[{"role": "system", "content": p.system},
                          {"role": "user", "content": p.user}],
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
            side.bill(p, cost)
            side.tokens_in += tokens_in
            side.cached_in += cached
            side.verdicts[p.key] = parse_verdict(text)

        start = time.perf_counter()
        await asyncio.gather(*(one(p) for p in prompts))
        seconds = time.perf_counter() - start
        side.seconds += seconds
        await oai.close()
        await claude.close()
        return seconds


class HeartJudging:
    """Heart's judging stage on a copy of the template store, its calls in heart's order (the
    engine's), billed from its stored rows."""

    def __init__(
        self, name: str, template: Path, folder: Path, config: StudyConfig, prompts: list[Prompt]
    ) -> None:
        same_prices(config)
        self.config = config
        self.study = copied_study(template, folder, config)
        plan = plan_judging(self.study)
        self.prompts = prompts_of(plan)
        assert list(self.prompts.values()) == prompts, "heart's prompts are not the plain's"
        self.calls = sorted(plan.calls, key=lambda c: c.group)
        self.side = Side(name, calls=len(self.calls))
        self.billed = 0.0

    @staticmethod
    def slices(calls: list[Call], parts: int) -> list[list[Call]]:
        """``calls`` in ``parts`` turns, each with its share of every endpoint's calls (the
        engine runs endpoints side by side), each endpoint's in heart's order."""
        endpoints: dict[tuple[str, str], list[Call]] = {}
        for call in calls:
            endpoints.setdefault(call.endpoint, []).append(call)
        cuts = [cut(calls, parts) for calls in endpoints.values()]
        return [[c for each in cuts for c in each[j]] for j in range(parts)]

    def run(self, calls: list[Call]) -> float:
        """Run ``calls`` through the engine; returns the seconds they took."""
        start = time.perf_counter()
        summary = asyncio.run(
            run_calls(calls, self.study.store, label="judge", spec=self.config.engine)
        )
        seconds = time.perf_counter() - start
        assert summary.failed == 0 and summary.cached == 0 and summary.reasks == 0, summary
        self.side.seconds += seconds
        self.billed += summary.cost_usd
        return seconds

    def finish(self) -> Side:
        """The side as its stored rows say, checked against the engine's own sums."""
        prices = {judge.name: judge.model.price for judge in self.config.judges}
        asked = {p.key: p for p in self.prompts.values()}
        side = self.side
        with self.study.store.session() as session:
            for row in session.scalars(select(JudgmentRow)):
                assert row.status == Status.OK and row.raw is not None, row.error
                side.verdicts[row.id] = parse_verdict(row.raw)
                side.tokens_in += row.tokens_in or 0
                side.cached_in += row.cached_tokens_in or 0
                side.bill(asked[row.id], row.cost_usd or 0.0)
                side.floor_dollars += (row.list_cost_usd or 0.0) * prices[row.judge].batch_share
        self.study.close()
        assert abs(side.dollars - self.billed) < 1e-9, (side.dollars, self.billed)
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


def cut(seq: list[T], parts: int) -> list[list[T]]:
    """``seq`` in ``parts`` consecutive slices of (nearly) equal length."""
    bounds = [round(j * len(seq) / parts) for j in range(parts + 1)]
    return [seq[a:b] for a, b in itertools.pairwise(bounds)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=6, help="items of the sample (whole)")
    parser.add_argument("--esconv", type=Path, default=None, help="ESConv file or folder")
    parser.add_argument(
        "--live-rate", type=float, default=4.0,
        help="calls a second of the full design run live (3 judges x 4 in flight / 3 s)",
    )  # fmt: skip
    parser.add_argument(
        "--latency", type=float, default=0.2, help="server seconds per answer, wall-clock pair"
    )
    parser.add_argument("--slices", type=int, default=6, help="turns of the wall-clock pair")
    args = parser.parse_args()
    concurrency = EngineSpec().settings("openai").concurrency
    assert concurrency == EngineSpec().settings("anthropic").concurrency

    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        given = args.esconv or (SHARED_ESCONV if SHARED_ESCONV.is_dir() else demo_corpus(folder))
        esconv = given.resolve()
        template, design_items, sample = build_template(folder, esconv, args.items)
        tick = DESIGN_ITEMS / len(sample) / args.live_rate
        offline = study_config(esconv, "http://127.0.0.1:9", batch=False)
        with copied_study(template, folder / "prompts", offline) as study:
            prompts = list(prompts_of(plan_judging(study)).values())
        print(f"{len(prompts)} verdict prompts: {len(sample)} of {design_items} items from "
              f"{esconv}, {SYSTEMS} systems, all pairs, {len(JUDGES)} judges; cache clock "
              f"{tick:g} s per request; prices read on {READ_ON}", flush=True)  # fmt: skip

        # cost: each side alone on a fresh server (empty cache, clock at 0), answered at once
        with fake_server(tick, 0.0) as url:
            plain = PlainClient(url, concurrency)
            plain.run(random.Random(SEED).sample(prompts, len(prompts)))
        sides = [plain.side]
        for name, batched in (("heart live", False), ("heart batch", True)):
            with fake_server(tick, 0.0) as url:
                config = study_config(esconv, url, batch=batched)
                heart = HeartJudging(name, template, folder / name, config, prompts)
                heart.run(heart.calls)
                sides.append(heart.finish())
        for side in sides:
            same_verdicts(sides[0], side)

        # wall-clock: heart live and the plain client on the middle item of the sample, in
        # alternating turns, against servers that take --latency seconds per answer
        middle = sample[len(sample) // 2].id
        with (
            fake_server(tick, args.latency) as plain_url,
            fake_server(tick, args.latency) as heart_url,
        ):
            timer = PlainClient(plain_url, concurrency)
            config = study_config(esconv, heart_url, batch=False)
            heart = HeartJudging("timed", template, folder / "timed", config, prompts)
            calls = [c for c in heart.calls if c.group.split("/")[1] == middle]
            asked = [heart.prompts[c.key] for c in calls]
            shuffled = random.Random(SEED).sample(asked, len(asked))
            ratios = []
            turns = zip(cut(shuffled, args.slices), heart.slices(calls, args.slices), strict=True)
            for j, (plain_part, heart_part) in enumerate(turns):
                if j % 2 == 0:  # who goes first alternates
                    plain_s, heart_s = timer.run(plain_part), heart.run(heart_part)
                else:
                    heart_s, plain_s = heart.run(heart_part), timer.run(plain_part)
                ratios.append(plain_s / heart_s)
            timed = heart.finish()
        for side in (timer.side, timed):
            assert all(side.verdicts[k] == plain.side.verdicts[k] for k in side.verdicts)
    print(HEADER)
    for side in sides:
        print(side.line())
    plain_side, live, batch = sides
    ref = plain_side.per_thousand()
    floor = batch.per_thousand(batch.floor_dollars)
    print(f"heart batch with no cache hit in any batch: ${floor:.4f} per 1,000 verdicts, "
          f"{ref / floor:.2f}x cheaper than plain live")  # fmt: skip
    print(f"heart live: {ref / live.per_thousand():.2f}x cheaper than plain live")
    print(f"{'$/1k verdicts by judge':<24}" + "".join(f"{j:>19}" for j in JUDGES))
    for side in sides:
        print(f"{side.name:<24}" + "".join(
            f"{side.per_thousand_of(judge=name):>19.4f}" for name in JUDGES
        ))  # fmt: skip
    print(f"{'by item (shared tokens)':<24}{'plain live':>12}{'heart batch':>12}{'ratio':>8}")
    for item in sample:
        shared = next(len(p.system) + p.user.index("Reply A: ") for p in prompts
                      if p.item == item.id) / 4  # fmt: skip
        cost = [side.per_thousand_of(item=item.id) for side in sides]
        print(f"{item.id[:14]:<16}{shared:>8.0f}{cost[0]:>12.4f}{cost[2]:>12.4f}"
              f"{cost[0] / cost[2]:>7.2f}x")  # fmt: skip
    print(f"verdicts identical on every side: {len(plain_side.verdicts)} prompts")
    print(f"wall-clock: {len(asked)} prompts of one item per side, {concurrency} in flight per "
          f"provider, {args.latency:g} s per answer: plain {timer.side.seconds:.1f} s, heart "
          f"live {timed.seconds:.1f} s; turns {min(ratios):.3f} to {max(ratios):.3f}")  # fmt: skip
    print(f"{timer.side.seconds / timed.seconds:.3f} wall-clock ratio heart live/plain live "
          "(plain s / heart s)")  # fmt: skip
    print(f"{ref / batch.per_thousand():.2f}x cheaper per verdict (heart batch vs plain live)")


if __name__ == "__main__":
    main()
