"""The call cache: an answer cached but refused by a stage's check is asked again and replaced."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest
from sqlalchemy import select

from heart.config import EngineSpec, ModelSpec
from heart.engine import Call, Check, Engine
from heart.models import ChatRequest, Message
from heart.models.openai_compat import OpenAICompatibleModel
from heart.store import CallRow, Store

from ..fakes.fault_server import FaultServer


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(reply_fn=lambda _body: "not what was asked for") as fault_server:
        yield fault_server


def test_a_refused_cached_answer_is_asked_again_and_replaced(
    store: Store, server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    model = OpenAICompatibleModel(
        ModelSpec(provider="openai", base_url=server.openai_base_url, model="local")
    )
    check = Check(problem=lambda text: "refused" if "asked" in text else None, message=str)
    request = ChatRequest(messages=(Message(role="user", content="answer in JSON"),))

    def run() -> None:
        # the stage keeps the refused answer (on_result accepts it), so it is cached
        call = Call(model, request, group="g", on_result=lambda _s, _r, _e: None, check=check)
        asyncio.run(Engine(store, EngineSpec()).run([call], label="ask"))

    run()
    with store.session() as s:
        first = {row.hash: row.created_at for row in s.scalars(select(CallRow))}
    run()  # the cached answer fails the check: asked again, and stored over the old one
    with store.session() as s:
        second = {row.hash: row.created_at for row in s.scalars(select(CallRow))}
    assert first.keys() == second.keys() and len(first) == 1
    assert len(server.requests) == 4  # each run: the question, then its one re-ask
