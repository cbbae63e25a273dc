"""The adaptive pair design in a real study: a SQLite store, LLM judges served by a local
OpenAI-compatible server, judging in rounds within the budget, and a killed run resumed."""

from __future__ import annotations

import asyncio
import itertools
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import select

from heart import pipeline
from heart.config import ConfigError, PeopleSpec, parse_study
from heart.engine import run_calls
from heart.judging import add_round, judge_pairs, next_round, plan_judging, round_of
from heart.judging._adaptive import RoundInputs, _ranking, widest_interval
from heart.people import JUDGE, claim, invite, submit_judgment, sync_tasks
from heart.store import JudgmentRow, PairRow
from heart.study import create_study, open_study
from heart.types import Status

from ..fakes.fault_server import FaultServer
from ..fakes.judge_verdicts import verdict_reply
from ..helpers import rewrite_study

ITEMS = 6
SYSTEMS = 4  # 6 pairs of systems, 36 pairs in all
ROUND_SIZE = 8
BUDGET = 20  # verdicts per judge: two judges on every pair, one order, so 20 pairs


def reply(body: dict[str, object]) -> str:
    """A verdict for a judge's request; for a system's, a reply that tells the systems apart."""
    if "response_format" in body:
        return verdict_reply(body)  # type: ignore[arg-type]
    return f"That sounds hard ({body.get('max_tokens')} tokens at most). What happened next?"


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(reply) as s:
        yield s


def _study(root: Path, server: FaultServer, pairs: str) -> Path:
    model = f"provider: openai, model: local, base_url: '{server.openai_base_url}'"
    create_study(root, demo=True)
    rewrite_study(
        root,
        [
            f"{{name: sys-{i}, kind: model, family: fam, model: {{{model}, max_tokens: {n}}}}}"
            for i, n in enumerate(range(100, 100 + SYSTEMS - 1))
        ]
        + ["{name: esconv-original, kind: dataset, family: dataset}"],
        [f"{{name: judge-{j}, family: judges-{j}, model: {{{model}}}}}" for j in range(2)],
        f"pairs: {pairs}\n",
        items=ITEMS,
    )
    return root


def _stored(root: Path) -> tuple[list[tuple[str, str]], Counter[str]]:
    with open_study(root) as study, study.store.session() as session:
        pairs = [(p.id, p.design) for p in session.scalars(select(PairRow).order_by(PairRow.id))]
        loads = Counter(
            session.scalars(select(JudgmentRow.judge).where(JudgmentRow.status == Status.OK))
        )
    return pairs, loads


def test_judging_runs_in_rounds_within_the_budget_and_a_killed_run_resumes_on_the_same_pairs(
    server: FaultServer, tmp_path: Path
) -> None:
    pairs = f"{{design: adaptive, budget: {BUDGET}, round_size: {ROUND_SIZE}}}"
    whole = _study(tmp_path / "whole", server, pairs)
    with open_study(whole) as study:
        pipeline.build_items(study)
        pipeline.generate(study)
        (stage,) = pipeline.dry_run(study, ("judge",)).stages
        assert stage.judging is not None
        assert stage.judging.loads == {"judge-0": BUDGET, "judge-1": BUDGET}  # the budget, counted
        summary = pipeline.judge(study)
    assert summary.model_calls.complete and summary.rounds == 3 and summary.new_pairs == BUDGET
    stored, loads = _stored(whole)
    rounds = Counter(round_of(design) for _, design in stored)
    assert rounds == {1: ROUND_SIZE, 2: ROUND_SIZE, 3: BUDGET - 2 * ROUND_SIZE}
    assert loads == {"judge-0": BUDGET, "judge-1": BUDGET}  # every judge at the budget exactly
    with open_study(whole) as study:  # the exported verdicts name their round
        exported = Counter(row.design for row in pipeline.verdicts(study))
    assert exported == {f"adaptive-{n}": 2 * count for n, count in rounds.items()}
    with open_study(whole) as study:  # a rerun adds nothing: the budget is spent
        again = pipeline.judge(study)
    assert again.new_pairs == 0 and again.model_calls.calls == 0

    # the same study killed in its second round: its round-2 pairs stored, a few judged
    killed = _study(tmp_path / "killed", server, pairs)
    with open_study(killed) as study:
        pipeline.build_items(study)
        pipeline.generate(study)
        with study.store.session() as session:
            session.add_all(next_round(study))  # round 1, judged in full
        judge_pairs(study)
        with study.store.session() as session:
            session.add_all(next_round(study))  # round 2, killed after three verdicts
    with open_study(killed) as study:
        plan = plan_judging(study)
    with open_study(killed) as study:
        asyncio.run(run_calls(plan.calls[:3], study.store, label="judge"))
    half, _ = _stored(killed)
    assert Counter(round_of(d) for _, d in half) == {1: ROUND_SIZE, 2: ROUND_SIZE}
    with open_study(killed) as study:
        resumed = pipeline.judge(study)
    assert resumed.model_calls.complete and resumed.rounds == 1  # round 3 only
    assert _stored(killed) == (stored, loads)  # the same pairs, rounds and verdicts


@pytest.mark.parametrize(
    ("pairs", "field", "says"),
    [
        ("{design: all, budget: 10}", "pairs.budget", "is a setting of pairs.design 'adaptive'"),
        ("{design: sampled, per_item: 2, round_size: 5}", "pairs.round_size", "'adaptive'"),
        ("{design: adaptive}", "pairs.design", "needs pairs.budget (verdicts per judge)"),
        ("{design: adaptive, stop: 0}", "pairs.stop", "must be a positive width in Elo"),
        ("{design: adaptive, stop: soon}", "pairs.stop", "'stable'"),
    ],
)
def test_adaptive_settings_are_refused_outside_their_design_in_one_line(
    pairs: str, field: str, says: str
) -> None:
    system = "{name: original, kind: dataset, family: dataset}"
    text = f"name: x\nsystems:\n  - {system}\npairs: {pairs}\n"
    with pytest.raises(ConfigError) as err:
        parse_study(text, "study.yaml")
    message = str(err.value)
    assert message.startswith(f"study.yaml line 4: '{field}'"), message
    assert says in message and "\n" not in message


def test_the_stopping_rules_end_the_rounds(server: FaultServer, tmp_path: Path) -> None:
    # any interval is narrower than 10^6 Elo once every system is compared: round 1 compares
    # every pair of systems, so judging ends after it
    wide = _study(tmp_path / "wide", server, "{design: adaptive, stop: 1000000, round_size: 8}")
    with open_study(wide) as study:
        pipeline.build_items(study)
        pipeline.generate(study)
        assert pipeline.judge(study).rounds == 1
        inputs = RoundInputs.stored(study)
        assert 0 < widest_interval(study, inputs) < 1_000_000
    # 'stable': the rounds go on until the last one left the order as the one before it had it
    stable = _study(tmp_path / "stable", server, "{design: adaptive, stop: stable, round_size: 6}")
    with open_study(stable) as study:
        pipeline.build_items(study)
        pipeline.generate(study)
        summary = pipeline.judge(study)
        inputs = RoundInputs.stored(study)
    last = max(round_of(p.design) for p in inputs.pairs)
    assert summary.rounds == last >= 2
    k = len(inputs.systems)
    orders = [
        _ranking(k, inputs.comparisons(before_round=r)) for r in range(2, last + 2)
    ]  # the order after each round
    assert len(inputs.pairs) < ITEMS * 6  # stopped by the rule, not by running out of pairs
    assert orders[-1] == orders[-2]
    assert all(a != b for a, b in itertools.pairwise(orders[:-1]))


def test_a_round_with_open_seats_for_people_waits_for_them_and_counts_their_verdicts(
    server: FaultServer, tmp_path: Path
) -> None:
    """People seated on a round (the web app seats every stored pair): `heart judge` judges the
    round and stops until they have all answered; the next round counts their verdicts."""
    root = _study(
        tmp_path / "s", server, f"{{design: adaptive, budget: {BUDGET}, round_size: {ROUND_SIZE}}}"
    )
    spec = PeopleSpec(raters_per_pair=1, check_every=0, label_completions=0)
    with open_study(root) as study:
        pipeline.build_items(study)
        pipeline.generate(study)
        assert add_round(study) == ROUND_SIZE
        sync_tasks(study.store, spec, seed=study.config.seed)  # as `heart serve` does
        held = pipeline.judge(study)
        assert held.model_calls.complete and held.rounds == 0  # round 1 judged, then it waits
        assert add_round(study) == 0
        ((rater, _),) = invite(study.store, 1)
        while (task := claim(study.store, rater, JUDGE, now=0, seconds=3600)) is not None:
            submit_judgment(study.store, rater, task, "A+", "", now=1)
        people = len(RoundInputs.stored(study).comparisons()) - 2 * ROUND_SIZE
        assert people == ROUND_SIZE  # every seat's verdict counts, beside both judges'
        summary = pipeline.judge(study)  # people seated on nothing new: the rounds go on
    assert summary.rounds == 2 and summary.new_pairs == BUDGET - ROUND_SIZE
