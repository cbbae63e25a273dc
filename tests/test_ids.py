"""One rule turns the order a judge saw back into the pair's own terms: for any pair, order and
verdict, the LLM judge, a person in the web app and an imported file store the same winner and
the same order shown."""

from __future__ import annotations

import itertools
import json
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import select

from heart.config import JudgeSpec
from heart.ids import Presentation, completion_id, pair_id, seeded_order
from heart.judging._llm import _recorder
from heart.models import ChatResponse
from heart.people import CHOICES, submit_judgment
from heart.prompts import load_prompt
from heart.release import judgment_rows
from heart.store import (
    CompletionRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    RaterRow,
    Store,
    TaskRow,
    open_store,
)
from heart.types import Order, Shown, Side

from .rows import seed_study

SYSTEMS = ("m1", "m2")
ITEMS = 6
PROMPT = load_prompt("judge-heart", "v2")
FRESH = itertools.count()


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Store]:
    """Items with one completion per system under heart's own ids, and each item's pair in
    its seeded order."""
    s = open_store(f"sqlite:///{tmp_path_factory.mktemp('ids') / 'heart.db'}")
    seed_study(s, SYSTEMS, items=ITEMS)
    with s.session() as session:
        for i in range(ITEMS):
            item = f"i{i}"
            ids = [completion_id(item, system) for system in SYSTEMS]
            for cid, system in zip(ids, SYSTEMS, strict=True):
                session.add(CompletionRow(id=cid, item_id=item, system=system, contributor="",
                                          status="ok", text=system, created_at="x"))  # fmt: skip
            session.flush()
            a, b = seeded_order(0, item, *ids)
            session.add(PairRow(id=pair_id(item, a, b), item_id=item, a_id=a, b_id=b,
                                design="all"))  # fmt: skip
    yield s
    s.close()


def _verdict(shown: str) -> str:
    axes = dict.fromkeys("HEART", f"{shown}2")
    return json.dumps({"winner": shown, "strength": 3, "axes": axes, "rationale": "r"})


def _by_llm(store: Store, pair: PairRow, order: Order, shown: Shown) -> tuple[str, str]:
    judge = JudgeSpec.model_validate({"name": f"llm-{next(FRESH)}", "family": "f", "model": {}})
    record = _recorder(pair, judge, Presentation(pair.a_id, pair.b_id, order), PROMPT, "k")
    with store.session() as session:
        session.add(JudgeRow(name=judge.name, source="llm", family="f", spec={}))
        session.flush()
        assert record(session, ChatResponse(text=_verdict(shown)), None) is None
        row = session.scalars(select(JudgmentRow).where(JudgmentRow.judge == judge.name)).one()
        axes = {axis["winner"] for axis in row.axes.values()}
        assert axes == {row.winner}  # every axis in the same terms as the overall winner
        return str(row.winner), str(row.order)


def _by_person(store: Store, pair: PairRow, order: Order, shown: Shown) -> tuple[str, str]:
    seat = next(FRESH)
    rater, task = f"rater-{seat}", f"judge:{pair.id}:{seat}"
    with store.session() as session:
        session.add(RaterRow(id=rater, meta={}, created_at="x"))
        session.add(TaskRow(id=task, kind="judge", target=pair.id, item_id=pair.item_id, seat=seat,
                            shown=order, rater_id=rater, expires_at=1e12, done=False))  # fmt: skip
    choice = "A+" if shown is Shown.FIRST else "B++"
    assert CHOICES[choice][0] is shown
    submit_judgment(store, rater, task, choice, "", now=0.0)
    with store.session() as session:
        row = session.scalars(select(JudgmentRow).where(JudgmentRow.judge == rater)).one()
        return str(row.winner), str(row.order)


def _by_import(tmp_path: Path, pair: PairRow, order: Order, shown: Shown) -> tuple[str, str]:
    """A file row names the systems in the order the judge saw them: its 'a' is the first."""
    seen = Presentation(pair.a_id, pair.b_id, order)
    system = {completion_id(pair.item_id, s): s for s in SYSTEMS}
    path = tmp_path / f"j{next(FRESH)}.csv"
    winner = "a" if shown is Shown.FIRST else "b"
    path.write_text(
        "item_id,judge,a_system,b_system,winner\n"
        f"{pair.item_id},r,{system[seen.first]},{system[seen.second]},{winner}\n"
    )
    _, pairs, judgments = judgment_rows(path, seed=0)
    assert pairs[0][1]["id"] == pair.id and (pairs[0][1]["a_id"], pairs[0][1]["b_id"]) == (
        pair.a_id,
        pair.b_id,
    )
    return str(judgments[0][1]["winner"]), str(judgments[0][1]["order"])


@settings(max_examples=40, deadline=None)
@given(
    item=st.integers(0, ITEMS - 1),
    order=st.sampled_from(list(Order)),
    shown=st.sampled_from([Shown.FIRST, Shown.SECOND]),
)
def test_every_path_stores_the_same_winner_and_order_in_the_pairs_terms(
    store: Store, tmp_path_factory: pytest.TempPathFactory, item: int, order: Order, shown: Shown
) -> None:
    with store.session() as session:
        pair = session.scalars(select(PairRow).where(PairRow.item_id == f"i{item}")).one()
    seen = Presentation(pair.a_id, pair.b_id, order)
    picked = seen.first if shown is Shown.FIRST else seen.second
    expected = Side.A if picked == pair.a_id else Side.B
    tmp = tmp_path_factory.mktemp("files")
    assert _by_llm(store, pair, order, shown) == (expected, order)
    assert _by_person(store, pair, order, shown) == (expected, order)
    assert _by_import(tmp, pair, order, shown) == (expected, order)
    assert seen.to_shown(expected) is shown  # and back


def test_presentation_refuses_a_reply_outside_the_pair() -> None:
    with pytest.raises(ValueError, match="neither reply"):
        Presentation.of("x", "y", first="z")
    assert Presentation.of("x", "y", first="y") == Presentation("x", "y", Order.BA)
    assert Presentation("x", "y", Order.BA).to_pair(Shown.TIE) is Side.TIE
    assert Presentation("x", "y", Order.BA).to_pair(Shown.NONE) is Side.NONE
    assert {side for side, _, _ in CHOICES.values()} == {Shown.FIRST, Shown.SECOND, Shown.TIE}
