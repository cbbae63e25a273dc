"""What cached prompt tokens cost: the engine bills every answer at its own mix of plain,
cache-read and cache-write tokens, at the batch price for batch answers, and keeps both the
billed and the list price (hand computations over the fake server's usage reports)."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from sqlalchemy import select
from sqlalchemy.orm import Session

from heart.config import BatchSettings, EngineSpec, ModelSpec, Price, ProviderSettings
from heart.engine import Call, Engine
from heart.models import ChatRequest, ChatResponse, Message, make_chat_model, usage_columns
from heart.store import CallRow, Store

from ..fakes.fault_server import FaultServer

PRICE = Price(input_per_mtok=3.0, output_per_mtok=15.0, cached_input_per_mtok=0.3,
              cache_write_per_mtok=3.75, cache_write_1h_per_mtok=6.0)  # fmt: skip
RUBRIC = " ".join(f"rubric{i}" for i in range(150))
CONTEXT = " ".join(f"context{i}" for i in range(60)) + "\n\n"


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(cache_min_tokens=100) as fault_server:
        yield fault_server


def _hand(r: ChatResponse, batch: bool) -> float:
    plain = (r.tokens_in or 0) - r.cached_tokens_in - r.cache_write_tokens - r.cache_write_1h_tokens
    dollars = (
        plain * 3.0
        + r.cached_tokens_in * 0.3
        + r.cache_write_tokens * 3.75
        + r.cache_write_1h_tokens * 6.0
        + (r.tokens_out or 0) * 15.0
    ) / 1e6
    return dollars * (0.5 if batch else 1.0)


@pytest.mark.parametrize("ttl", ["5m", "1h"])
@pytest.mark.parametrize("batch", [False, True])
def test_cached_and_written_tokens_are_billed_at_their_own_prices(
    store: Store, server: FaultServer, monkeypatch: pytest.MonkeyPatch, batch: bool, ttl: str
) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-local")
    model = make_chat_model(
        ModelSpec(provider="anthropic", base_url=server.anthropic_base_url, model="claude-m",
                  price=PRICE, prompt_cache=ttl)  # type: ignore[arg-type]
    )  # fmt: skip
    answers: list[ChatResponse] = []

    def keep(_s: Session, response: ChatResponse | None, error: str | None) -> str | None:
        assert response is not None
        answers.append(response)
        return error

    calls = [
        Call(
            model=model,
            request=ChatRequest(
                messages=(
                    Message(role="system", content=RUBRIC),
                    Message(role="user", content=f"{CONTEXT}reply {i} is warm"),
                ),
                shared_chars=len(CONTEXT),
            ),
            group=f"{i}",
            on_result=keep,
            price=PRICE,
        )
        for i in range(3)
    ]
    one = ProviderSettings(concurrency=1)
    spec = EngineSpec(providers={"anthropic": one},
                      batch=BatchSettings(enabled=batch, poll_s=0.01, size=1))  # fmt: skip
    summary = asyncio.run(Engine(store, spec).run(calls, label="judge"))
    assert summary.failed == 0 and len(answers) == 3
    # the first call writes the rubric and the transcript; the next two read both
    written = [a.cache_write_tokens + a.cache_write_1h_tokens for a in answers]
    assert written[0] == 150 + 60 and written[1:] == [0, 0]
    assert [a.cached_tokens_in for a in answers] == [0, 210, 210]
    assert (answers[0].cache_write_1h_tokens > 0) == (ttl == "1h")
    assert all((a.batch_id is not None) == batch for a in answers)
    assert summary.cost_usd == pytest.approx(sum(_hand(a, batch) for a in answers))
    listed = sum(usage_columns(PRICE, a)["list_cost_usd"] or 0.0 for a in answers)
    assert listed == pytest.approx(
        sum(((a.tokens_in or 0) * 3.0 + (a.tokens_out or 0) * 15.0) / 1e6 for a in answers)
    )
    assert summary.cost_usd < listed
    with store.session() as session:
        stored = [r.response for r in session.scalars(select(CallRow))]
    assert sorted(r["cached_tokens_in"] for r in stored) == [0, 210, 210]
