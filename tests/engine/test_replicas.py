"""Replicas of one model: calls spread over real local servers, least outstanding first, each
under its own concurrency; a server killed mid-run has its calls redone on the others, every
call answered once in all; keys are the model's, whichever replicas serve it."""

from __future__ import annotations

import asyncio
import threading
import time
from collections import Counter
from collections.abc import Iterator

import pytest

from heart.config import EndpointSettings, EngineSpec, ModelSpec, ProviderSettings
from heart.engine import Call, Engine, Progress, ReplicaLoad, RunSummary, replica_lines
from heart.models import ChatRequest, Message
from heart.models.openai_compat import OpenAICompatibleModel
from heart.store import Store

from ..fakes.fault_server import FaultServer, RequestRecord
from ..servers import free_port


@pytest.fixture
def servers() -> Iterator[list[FaultServer]]:
    with FaultServer() as a, FaultServer() as b, FaultServer() as c:
        for server in (a, b, c):
            server.default_plan = "hang:0.02"
        yield [a, b, c]


def _model(*urls: str) -> OpenAICompatibleModel:
    base_url: str | list[str] = urls[0] if len(urls) == 1 else list(urls)
    return OpenAICompatibleModel(ModelSpec(provider="openai", base_url=base_url, model="local"))


def _calls(model: OpenAICompatibleModel, n: int) -> list[Call]:
    return [
        Call(
            model=model,
            request=ChatRequest(messages=(Message(role="user", content=f"question {i}"),)),
            group=f"{i:03d}",
            on_result=lambda _session, _response, error: error,
        )
        for i in range(n)
    ]


def _spec(concurrency: int = 2, **endpoints: EndpointSettings) -> EngineSpec:
    provider = ProviderSettings(concurrency=concurrency, backoff_base_s=0.05, max_retries=3)
    return EngineSpec(providers={"openai": provider}, endpoints=endpoints)


def _run(
    store: Store, calls: list[Call], spec: EngineSpec, reports: list[Progress] | None = None
) -> RunSummary:
    engine = Engine(store, spec, None if reports is None else reports.append)
    return asyncio.run(engine.run(calls, label="ask"))


def _answered(server: FaultServer) -> list[RequestRecord]:
    return [r for r in server.requests if r.call_key is not None and r.status == 200]


def test_calls_go_to_the_least_busy_replica_so_a_faster_one_answers_more(
    store: Store, servers: list[FaultServer]
) -> None:
    _, middle, slow = servers
    middle.default_plan, slow.default_plan = "hang:0.06", "hang:0.18"
    model = _model(*(s.openai_base_url for s in servers))
    reports: list[Progress] = []
    summary = _run(store, _calls(model, 60), _spec(concurrency=2), reports)
    assert summary.calls == 60 and summary.failed == 0 and summary.retries == 0
    counts = [len(_answered(s)) for s in servers]
    assert sum(counts) == 60
    # each replica holds two calls; the next call goes to whichever frees a slot first
    assert counts[0] > counts[1] > counts[2] >= 2
    assert counts[0] >= 3 * counts[2]
    loads = [(r.replica, r.answered, r.rested) for r in summary.replicas]
    assert loads == [(s.openai_base_url, n, 0) for s, n in zip(servers, counts, strict=True)]
    assert list(reports[-1].replicas) == summary.replicas  # the progress says the same


def test_each_replica_keeps_its_own_concurrency(store: Store, servers: list[FaultServer]) -> None:
    a, b, c = servers
    # the model's endpoint (its first URL) sets 3 for every replica; the third's own entry, 1
    spec = _spec(
        concurrency=8,
        **{a.openai_base_url: EndpointSettings(concurrency=3)},
        **{c.openai_base_url: EndpointSettings(concurrency=1)},
    )
    summary = _run(
        store, _calls(_model(a.openai_base_url, b.openai_base_url, c.openai_base_url), 45), spec
    )
    assert summary.failed == 0
    assert [s.max_in_flight for s in servers] == [3, 3, 1]


def test_a_replica_killed_mid_run_has_its_calls_redone_on_the_others_each_answered_once(
    store: Store, servers: list[FaultServer]
) -> None:
    n = 90
    doomed = servers[2]

    def kill_after_five() -> None:
        while len(_answered(doomed)) < 5:
            time.sleep(0.002)
        # what it holds now never gets an answer out: it is killed while they wait, so no
        # answer is half sent (one the client never read would be answered twice, rightly)
        doomed.default_plan = "hang"
        time.sleep(0.1)
        doomed.stop()

    killer = threading.Thread(target=kill_after_five)
    killer.start()
    model = _model(*(s.openai_base_url for s in servers))
    reports: list[Progress] = []
    summary = _run(store, _calls(model, n), _spec(concurrency=2), reports)
    killer.join()
    assert summary.calls == n and summary.failed == 0

    answered = Counter(r.call_key for s in servers for r in _answered(s))
    assert len(answered) == n and set(answered.values()) == {1}  # n prompts, once each
    cut_off = {r.call_key for r in doomed.requests if r.call_key and r.status != 200}
    assert cut_off  # it died holding calls, and the others answered every one of them
    assert cut_off <= {r.call_key for s in servers[:2] for r in _answered(s)}
    assert summary.retries >= len(cut_off)  # each was sent again, once at least

    loads = {r.replica: r for r in summary.replicas}
    dead = loads[model.replicas[2].endpoint]
    assert dead.answered == len(_answered(doomed)) >= 5 and dead.rested >= 1
    assert sum(r.answered for r in summary.replicas) == n
    assert reports[-1].replicas == tuple(summary.replicas)
    (line,) = replica_lines(summary.replicas)
    ports = [m.endpoint.split(":")[2].removesuffix("/v1") for m in model.replicas]
    shown = [
        f"{loads[m.endpoint].answered} on :{p}" for m, p in zip(model.replicas, ports, strict=True)
    ]
    assert line == f"local: {shown[0]}, {shown[1]}, {shown[2]} (rested {dead.rested}x)"


def test_when_every_replica_is_down_calls_wait_then_fail_as_with_one_endpoint(
    store: Store,
) -> None:
    urls = [f"http://127.0.0.1:{free_port()}/v1" for _ in range(2)]  # nothing listens there
    start = time.monotonic()
    summary = _run(store, _calls(_model(*urls), 3), _spec())
    assert summary.failed == 3
    # four tries each (max_retries 3), a try going on to the other replica when it is awake:
    # 4 to 8 sends a call, each call failing with the connection's reason and its count
    assert 3 * 3 <= summary.retries <= 3 * 7
    for error in summary.errors:
        assert "Connection error" in error
        assert int(error.rsplit("(after ", 1)[1].split()[0]) in range(4, 9)
    # the calls waited for rests of 0.1, 0.2 and 0.4 s at least before they gave up
    assert 0.6 < time.monotonic() - start < 5


def test_a_call_key_is_the_models_whichever_replicas_serve_it(
    store: Store, servers: list[FaultServer]
) -> None:
    a, b, c = servers
    alone = _model(a.openai_base_url)
    listed = _model(a.openai_base_url, b.openai_base_url, c.openai_base_url)
    assert [c.key for c in _calls(alone, 5)] == [c.key for c in _calls(listed, 5)]
    assert listed.endpoint == alone.endpoint

    first = _run(store, _calls(alone, 12), _spec())
    assert first.cached == 0 and len(_answered(a)) == 12
    # reruns with a list of replicas (the same first URL) are answered from the cache
    for other in (listed, _model(a.openai_base_url, c.openai_base_url)):
        again = _run(store, _calls(other, 12), _spec())
        assert (again.calls, again.cached) == (12, 12)
    assert [len(_answered(s)) for s in servers] == [12, 0, 0]
    more = _run(store, _calls(listed, 18), _spec())  # six new calls, spread over the three
    assert (more.cached, sum(len(_answered(s)) for s in servers)) == (12, 18)
    assert min(len(_answered(s)) for s in servers[1:]) >= 1


def test_replica_lines_say_what_each_replica_did() -> None:
    loads = [
        ReplicaLoad("judge-x", "http://127.0.0.1:8001/v1", 412),
        ReplicaLoad("judge-x", "http://127.0.0.1:8002/v1", 398),
        ReplicaLoad("judge-x", "http://127.0.0.1:8003/v1", 12, rested=2),
        ReplicaLoad("gen", "http://gpu-1:8000/v1", 5),
        ReplicaLoad("gen", "http://gpu-2:8000/v1", 6),
    ]
    assert replica_lines(loads) == [
        "judge-x: 412 on :8001, 398 on :8002, 12 on :8003 (rested 2x)",
        "gen: 5 on gpu-1:8000, 6 on gpu-2:8000",
    ]
