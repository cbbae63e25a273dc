"""Two servers that serve the same model name give two systems' and two judges' answers: every
stored completion and verdict comes from its own server, on the first run and on a rerun, and
each server sees only its own calls; two endpoints never share a concurrency slot."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select, update

from heart import pipeline
from heart.generate import plan_generation
from heart.store import CallRow, CompletionRow, JudgmentRow
from heart.study import create_study, open_study
from heart.types import Status, canonical_json, sha256_hex

from ..fakes.fault_server import FaultServer, RequestRecord, last_user_text
from ..helpers import rewrite_study

SERVERS = ("one", "two")
N_ITEMS = 6


def _reply(name: str, winner: str) -> Any:
    """A server whose replies and verdicts say which server gave them."""

    def reply(body: dict[str, Any]) -> str:
        if "response_format" in body:  # a judge call: a valid verdict naming this server
            axes = dict.fromkeys("HEART", "none")
            return json.dumps(
                {"winner": winner, "strength": 2, "axes": axes, "rationale": f"server {name}"}
            )
        return f"Reply from server {name}: {last_user_text(body).split()[-1]}"

    return reply


@pytest.fixture
def servers() -> Iterator[dict[str, FaultServer]]:
    with (
        FaultServer(_reply("one", "A")) as one,
        FaultServer(_reply("two", "B")) as two,
    ):
        yield {"one": one, "two": two}


def _model(server: FaultServer) -> str:
    # both servers serve "local": only the endpoint tells them apart
    return f"{{provider: openai, base_url: '{server.openai_base_url}', model: local}}"


def _study(root: Path, servers: dict[str, FaultServer], engine: str = "") -> Path:
    create_study(root, demo=True)
    rewrite_study(
        root,
        [
            f"{{name: sys-{n}, kind: model, family: fam-{n}, model: {_model(s)}}}"
            for n, s in servers.items()
        ]
        + ["{name: esconv-original, kind: dataset, family: dataset}"],
        [
            f"{{name: judge-{n}, family: judges-{n}, model: {_model(s)}}}"
            for n, s in servers.items()
        ],
        "pairs: {design: all}\n" + engine,
        items=N_ITEMS,
    )
    return root


def _calls(server: FaultServer) -> list[RequestRecord]:
    return [r for r in server.requests if r.path.endswith("/chat/completions")]


def _stored(root: Path) -> tuple[dict[str, tuple[str, str]], list[tuple[str, str, str, str]]]:
    """Completions (id → system, text) and verdicts (judge, winner, rationale, expected winner:
    judge-one always picks the reply shown first, judge-two the second, and a pair's a is
    shown first when the order is ab)."""
    with open_study(root) as study, study.store.session() as s:
        texts = {r.id: (r.system, r.text) for r in s.scalars(select(CompletionRow))}
        verdicts = []
        for j in s.scalars(select(JudgmentRow)):
            first = "a" if j.order == "ab" else "b"
            expected = first if j.judge == "judge-one" else {"a": "b", "b": "a"}[first]
            verdicts.append((j.judge, j.winner or "", j.rationale, expected))
    return texts, verdicts


def _check_each_from_its_own_server(root: Path) -> None:
    texts, verdicts = _stored(root)
    for system, text in texts.values():
        if system.startswith("sys-"):
            assert text.startswith(f"Reply from server {system.removeprefix('sys-')}:")
    assert len(verdicts) == 2 * 3 * N_ITEMS  # every pair of three systems, by both judges
    for judge, winner, rationale, expected in verdicts:
        assert rationale == f"server {judge.removeprefix('judge-')}"
        assert winner == expected


def test_two_servers_of_one_model_name_answer_for_their_own_systems_and_judges(
    servers: dict[str, FaultServer], tmp_path: Path
) -> None:
    root = _study(tmp_path / "s", servers)
    with open_study(root) as study:
        pipeline.run(study)
    _check_each_from_its_own_server(root)
    for server in servers.values():
        calls = _calls(server)
        # its own system's 6 completions and its own judge's 18 verdicts (every pair of 3
        # systems on 6 items), nothing of the other's
        verdicts = [r for r in calls if "response_format" in r.body]
        assert (len(calls) - len(verdicts), len(verdicts)) == (N_ITEMS, 3 * N_ITEMS)
        assert all(r.status == 200 for r in calls)

    # a rerun that must answer everything again from the cache: the same answers, per server,
    # and no server is asked anything
    with open_study(root) as study, study.store.session() as s:
        s.execute(update(CompletionRow).values(status=Status.FAILED, text=""))
        s.execute(update(JudgmentRow).values(status=Status.FAILED, winner=None, rationale=""))
    before = {name: len(_calls(server)) for name, server in servers.items()}
    with open_study(root) as study:
        again = pipeline.run(study)
    assert again.generation.model_calls.cached == 2 * N_ITEMS
    assert again.judging.model_calls.cached == 2 * 3 * N_ITEMS
    assert {name: len(_calls(server)) for name, server in servers.items()} == before
    _check_each_from_its_own_server(root)


def _overlaps(records: list[RequestRecord], slack: float = 0.05) -> int:
    """How many pairs of requests were in flight together for longer than ``slack`` seconds
    (each answer takes 0.3 s, so calls one after another never count)."""
    spans = sorted((r.start, r.end or r.start) for r in records)
    return sum(1 for i, a in enumerate(spans) for b in spans[i + 1 :] if b[0] < a[1] - slack)


def test_endpoints_have_their_own_slots_and_their_own_limits(
    servers: dict[str, FaultServer], tmp_path: Path
) -> None:
    one, two = servers["one"], servers["two"]
    for server in servers.values():
        server.default_plan = "hang:0.3"  # each answer takes 0.3 s
    engine = (
        "engine:\n"
        "  providers: {openai: {concurrency: 1}}\n"
        f"  endpoints: {{'HTTP://127.0.0.1:{one.port}/v1/': {{concurrency: 3}}}}\n"
    )
    root = _study(tmp_path / "s", servers, engine)
    with open_study(root) as study:
        pipeline.build_items(study)
        (stage,) = pipeline.dry_run(study, ("generate",)).stages
        pipeline.generate(study)
    # the dry run counts the calls per endpoint
    assert {(m.endpoint, m.model, m.calls, m.cached) for m in stage.models} == {
        (one.openai_base_url, "local", N_ITEMS, 0),
        (two.openai_base_url, "local", N_ITEMS, 0),
    }
    # server one's own setting (its URL spelt another way) lets 3 calls run at once; server two
    # keeps the provider's single slot, and runs beside server one rather than after it
    assert _overlaps(_calls(one)) > 0
    assert _overlaps(_calls(two)) == 0
    both = sorted([*_calls(one), *_calls(two)], key=lambda r: r.start)
    assert _overlaps(both) > _overlaps(_calls(one))


def test_answers_cached_under_a_key_of_the_previous_version_are_never_served(
    servers: dict[str, FaultServer], tmp_path: Path
) -> None:
    root = _study(tmp_path / "s", {"one": servers["one"]})
    with open_study(root) as study:
        pipeline.build_items(study)
        pipeline.generate(study)
        with study.store.session() as s:
            s.execute(
                update(CompletionRow)
                .where(CompletionRow.system == "sys-one")
                .values(status=Status.FAILED, text="")
            )
        calls = plan_generation(study).calls
        assert len(calls) == N_ITEMS
        with study.store.session() as s:  # each answer as a release before version 2 keyed it
            for call in calls:
                request = call.request.model_dump(mode="json", exclude={"stream"})
                old = {"provider": "openai", "model": "local", "request": request}
                s.execute(
                    update(CallRow)
                    .where(CallRow.hash == call.key)
                    .values(hash=sha256_hex(canonical_json(old)), endpoint=None)
                )
    asked = len(_calls(servers["one"]))
    with open_study(root) as study:  # the study opens and reruns; nothing old is served
        again = pipeline.generate(study)
    assert again.model_calls.cached == 0 and again.model_calls.calls == N_ITEMS
    assert len(_calls(servers["one"])) == asked + N_ITEMS
    texts, _ = _stored(root)
    assert all(t.startswith("Reply from server one:") for s, t in texts.values() if s == "sys-one")
