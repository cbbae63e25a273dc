"""The judge ensemble end to end, through a local OpenAI-compatible server: family exclusion,
coverage, balanced loads, re-asks of invalid verdicts, and reruns that call only for new work."""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from heart.analyses import load_comparisons
from heart.generate import generate
from heart.judging import build_pairs, judge_pairs, parse_verdict, plan_judging, schedule_for
from heart.store import CompletionRow, ItemRow, JudgmentRow, PairRow, SystemRow
from heart.study import Study, open_study

from ..fakes.fault_server import FaultServer, RequestRecord, conversation, last_user_text
from ..helpers import heart, rewrite_study, set_items

# each model's replies carry its own word, so a judge request shows whose replies it holds
WORDS = {"m-amber": "amber", "m-birch": "birch", "m-cedar": "cedar", "m-delta": "delta"}
FAMILIES = {"m-amber": "openai", "m-birch": "anthropic", "m-cedar": "google", "m-delta": "meta"}
RANK = ["amber", "birch", "cedar", "delta", "elm"]  # the fake judges prefer earlier words
JUDGES = {"judge-o": "openai", "judge-a": "anthropic"}
ITEMS = 8
STILL_BROKEN = "this is still not a verdict"
STUBBORN: list[str] = []  # seeker texts whose judge keeps answering badly when asked again


def _word_of(reply: str) -> str:
    return next(w for w in RANK if w in reply)


def _verdict(body: dict[str, Any]) -> str:
    text = last_user_text(body)
    if "cannot be used" in text:  # a re-ask: answer properly unless the item is the broken one
        if any(t in json.dumps(body, ensure_ascii=False) for t in STUBBORN):
            return STILL_BROKEN
        text = next(t for r, t in conversation(body) if r == "user" and "Reply A:" in t)
    a = re.search(r"Reply A: (.*)", text)
    b = re.search(r"Reply B: (.*)", text)
    assert a and b
    a_rank, b_rank = RANK.index(_word_of(a[1])), RANK.index(_word_of(b[1]))
    winner = "A" if a_rank < b_rank else "B"
    axis = f"{winner}2"
    return json.dumps(
        {
            "winner": winner,
            "strength": 1 + abs(a_rank - b_rank),
            "axes": {k: axis for k in "HEART"},
            "rationale": "One reply follows the seeker more closely.",
        }
    )


def _reply(body: dict[str, Any]) -> str:
    if body["model"].startswith("judge-"):
        return _verdict(body)
    return f"That sounds heavy; {WORDS.get(body['model'], 'elm')} is here to listen."


@pytest.fixture
def server() -> Iterator[FaultServer]:
    STUBBORN.clear()
    with FaultServer(reply_fn=_reply, key_includes_model=True) as fault_server:
        yield fault_server


def _model(server: FaultServer, name: str) -> str:
    return (
        f"{{provider: openai, base_url: {server.openai_base_url}, model: {name}, "
        "api_key_env: HEART_TEST_KEY, structured_output: json_schema}"
    )


def _write_study(
    root: Path, server: FaultServer, extra_system: bool = False, **judging: Any
) -> None:
    models = {**FAMILIES, **({"m-elm": "mistral"} if extra_system else {})}
    settings = ", ".join(f"{k}: {v}" for k, v in judging.items())
    rewrite_study(
        root,
        [
            f"{{name: {name}, kind: model, family: {family}, model: {_model(server, name)}}}"
            for name, family in models.items()
        ],
        [
            f"{{name: {name}, family: {family}, model: {_model(server, name)}}}"
            for name, family in JUDGES.items()
        ],
        f"judging: {{{settings}}}\n"
        "engine: {providers: {openai: {concurrency: 8, max_retries: 2, timeout_s: 5}}}\n",
        items=ITEMS,
    )


@pytest.fixture
def study_dir(tmp_path: Path, server: FaultServer, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HEART_TEST_KEY", "sk-test-ensemble")
    root = tmp_path / "ensemble"
    heart("init", root, "--demo")
    set_items(root, ITEMS)
    heart("items", "build", "--study", root)
    _write_study(root, server, judges_per_pair=1)
    return root


def _judge_requests(server: FaultServer) -> list[RequestRecord]:
    return [
        r
        for r in server.requests
        if r.path.endswith("/chat/completions") and r.body["model"].startswith("judge-")
    ]


def _run(root: Path) -> Study:
    study = open_study(root)
    generate(study)
    build_pairs(study.store, study.config.pairs, study.config.seed)
    judge_pairs(study)
    return study


def test_no_judge_sees_its_own_family_and_loads_stay_even(
    study_dir: Path, server: FaultServer
) -> None:
    study = _run(study_dir)
    requests = _judge_requests(server)
    assert requests
    for r in requests:
        seen = {_word_of(line) for line in r.last_user.splitlines() if line.startswith("Reply ")}
        families = {FAMILIES[f"m-{word}"] for word in seen}
        assert JUDGES[r.body["model"]] not in families, (r.body["model"], seen)

    with study.store.session() as s:
        system_of = dict(s.execute(select(CompletionRow.id, CompletionRow.system)).all())
        family = dict(s.execute(select(SystemRow.name, SystemRow.family)).all())
        pairs = list(s.scalars(select(PairRow)))
        judged = Counter(
            r.pair_id for r in s.scalars(select(JudgmentRow).where(JudgmentRow.status == "ok"))
        )
        loads = Counter(r.judge for r in s.scalars(select(JudgmentRow)))
    assert len(pairs) == ITEMS * 6
    for p in pairs:
        fams = {family[system_of[p.a_id]], family[system_of[p.b_id]]}
        eligible = [j for j, f in JUDGES.items() if f not in fams]
        # every pair with an eligible judge got exactly one; openai-vs-anthropic pairs got none
        assert judged[p.id] == min(1, len(eligible)), (fams, judged[p.id])
    assert sum(judged.values()) == ITEMS * 5
    low, high = min(loads.values()), max(loads.values())
    assert (high - low) / high <= 0.05, loads
    schedule, _ = schedule_for(study)
    assert len(schedule.unjudgeable) == ITEMS  # the openai-vs-anthropic pair of every item
    study.close()


def test_calls_sharing_a_prompt_prefix_run_back_to_back(
    study_dir: Path, server: FaultServer
) -> None:
    """Dispatch order keeps each judge's prompts for one item together and, within the item,
    those showing the same reply first: each such run shares its prompt up to reply B."""
    _write_study(study_dir, server)
    config = study_dir / "study.yaml"
    config.write_text(config.read_text() + "pairs: {design: all, both_orders: true}\n")
    study = open_study(study_dir)
    generate(study)
    build_pairs(study.store, study.config.pairs, study.config.seed)
    calls = sorted(plan_judging(study).calls, key=lambda c: c.group)
    study.close()
    assert len(calls) == ITEMS * 12  # per item 6 verdicts (google/meta by both judges), x2 orders

    def runs(keys: list[tuple[str, ...]]) -> int:
        return sum(1 for i, k in enumerate(keys) if i == 0 or keys[i - 1] != k)

    def prefix(call: Any, upto: str) -> tuple[str, ...]:
        text = call.request.messages[-1].content
        return (call.model.model, text.split(upto)[0])

    by_item = [prefix(c, "Reply A:") for c in calls]
    by_first = [prefix(c, "Reply B:") for c in calls]
    assert runs(by_item) == len(set(by_item)) == ITEMS * len(JUDGES)
    assert runs(by_first) == len(set(by_first))
    assert len(set(by_first)) < len(calls)  # some prompts do share reply A


def test_every_eligible_judge_rates_when_no_number_is_set(
    study_dir: Path, server: FaultServer
) -> None:
    _write_study(study_dir, server)
    study = _run(study_dir)
    with study.store.session() as s:
        per_pair = Counter(r.pair_id for r in s.scalars(select(JudgmentRow)))
    # 1 pair per item with both judges eligible (google vs meta), 4 with one, 1 with none
    assert sorted(Counter(per_pair.values()).items()) == [(1, ITEMS * 4), (2, ITEMS)]
    board = load_comparisons(study.store)
    assert len(board) == ITEMS * 6
    study.close()


def test_rerun_calls_nothing_and_a_new_system_is_judged_alone(
    study_dir: Path, server: FaultServer
) -> None:
    _run(study_dir).close()
    with open_study(study_dir).store.session() as s:
        before = {r.id: (r.winner, r.judge) for r in s.scalars(select(JudgmentRow))}
    server.reset()
    _run(study_dir).close()
    assert server.requests == []

    _write_study(study_dir, server, extra_system=True, judges_per_pair=1)
    study = _run(study_dir)
    requests = _judge_requests(server)
    # the new system meets the four others on every item; each new pair gets one judge
    assert len(requests) == ITEMS * 4
    assert all("elm" in r.last_user for r in requests)
    with study.store.session() as s:
        after = {r.id: (r.winner, r.judge) for r in s.scalars(select(JudgmentRow))}
    assert {k: after[k] for k in before} == before
    assert len(after) == len(before) + ITEMS * 4
    study.close()


def test_invalid_verdicts_are_reasked_or_recorded_failed_never_counted(
    study_dir: Path, server: FaultServer
) -> None:
    study = open_study(study_dir)
    generate(study)
    build_pairs(study.store, study.config.pairs, study.config.seed)
    with study.store.session() as s:
        seeker = {r.id: r.context[-1]["text"] for r in s.scalars(select(ItemRow))}
    items = sorted(seeker)
    for item, plan in zip(items, ["prose", "badjson", "outofrange", "prose"], strict=False):
        server.set_plan(seeker[item], plan)
    STUBBORN.append(seeker[items[3]])
    judge_pairs(study)

    with study.store.session() as s:
        judgments = list(s.scalars(select(JudgmentRow)))
        pair_item = {p.id: p.item_id for p in s.scalars(select(PairRow))}
    by_item: dict[str, list[JudgmentRow]] = {}
    for j in judgments:
        by_item.setdefault(pair_item[j.pair_id], []).append(j)
    for item in items[:3]:  # prose, broken JSON, out-of-range strength: valid after one re-ask
        for j in by_item[item]:
            assert j.status == "ok", j.error
            assert len(j.refused) == 1 and j.refused[0]["problem"]
            parse_verdict(j.raw or "")
    for j in by_item[items[3]]:  # still invalid after the re-ask: failed, with the raw text
        assert j.status == "failed"
        assert j.raw == STILL_BROKEN
        assert "invalid verdict after 2 asks" in (j.error or "")
        assert j.winner is None
    ok = [j for j in judgments if j.status == "ok"]
    assert len(load_comparisons(study.store)) == len(ok)
    failed = len(judgments) - len(ok)
    assert failed == len(by_item[items[3]]) > 0

    server.reset(plans=False)
    judge_pairs(study)  # only the failed ones are asked again (a first ask and one re-ask each)
    assert len(_judge_requests(server)) == 2 * failed
    study.close()
