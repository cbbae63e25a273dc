"""The engine's progress reports: on the caller's thread, never going back, finished once; a
callback that fails costs no answer."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator

import pytest
from sqlalchemy import func, select

from heart.config import EngineSpec, ModelSpec, ProviderSettings
from heart.engine import Call, Engine, Progress
from heart.models import ChatRequest, Message
from heart.models.openai_compat import OpenAICompatibleModel
from heart.store import CallRow, Store

from ..fakes.fault_server import FaultServer

N_CALLS = 12


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer() as fault_server:
        fault_server.default_plan = "hang:0.02"
        yield fault_server


def _calls(server: FaultServer, monkeypatch: pytest.MonkeyPatch) -> list[Call]:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-local")
    model = OpenAICompatibleModel(
        ModelSpec(provider="openai", base_url=server.openai_base_url, model="local")
    )
    return [
        Call(
            model=model,
            request=ChatRequest(messages=(Message(role="user", content=f"question {i}"),)),
            group=f"{i:03d}",
            on_result=lambda _session, _response, error: error,
        )
        for i in range(N_CALLS)
    ]


def _engine(store: Store, report: object) -> Engine:
    spec = EngineSpec(providers={"openai": ProviderSettings(concurrency=3)})
    return Engine(store, spec, report)  # type: ignore[arg-type]


def test_progress_is_reported_on_the_callers_thread_and_finishes_once(
    store: Store, server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    seen: list[tuple[int, Progress]] = []
    calls = _calls(server, monkeypatch)
    engine = _engine(store, lambda p: seen.append((threading.get_ident(), p)))
    summary = asyncio.run(engine.run(calls, label="ask"))
    assert summary.calls == N_CALLS and summary.failed == 0
    assert {thread for thread, _ in seen} == {threading.get_ident()}
    reports = [p for _, p in seen]
    assert reports[0] == Progress("ask", 0, N_CALLS)
    assert [p.done for p in reports] == sorted(p.done for p in reports)
    assert [p.finished for p in reports].count(True) == 1 and reports[-1].finished
    assert (reports[-1].done, reports[-1].total, reports[-1].fresh) == (N_CALLS,) * 3
    assert reports[-1].tokens > 0

    again: list[Progress] = []  # a rerun: every answer from the cache, none fresh
    asyncio.run(_engine(store, again.append).run(_calls(server, monkeypatch), label="ask"))
    assert (again[-1].done, again[-1].fresh) == (N_CALLS, 0)


def test_a_failing_callback_costs_no_answer_and_its_error_comes_after(
    store: Store, server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(report: Progress) -> None:
        if report.done:
            raise RuntimeError("the display went away")

    with pytest.raises(RuntimeError, match="the display went away"):
        asyncio.run(_engine(store, broken).run(_calls(server, monkeypatch), label="ask"))
    with store.session() as s:
        assert s.scalar(select(func.count()).select_from(CallRow)) == N_CALLS
