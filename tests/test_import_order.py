"""Imported verdicts keep the order people saw: the same verdicts, whatever the file's row
sequence and whichever way round the study stores each pair, give the same board, the same audit
and the same rationale themes about the same replies."""

from __future__ import annotations

import random
from pathlib import Path

import pytest
from sqlalchemy import select
from sqlalchemy.orm import aliased

from heart.analyses import audit_judges, build_boards, load_comparisons, verdict_counts
from heart.errors import ImportRefused
from heart.ids import completion_id, judgment_id, pair_id, seeded_order
from heart.rationales import load_codebook
from heart.rationales.code import code_with_rules
from heart.release import export_bundle, import_bundle, import_table
from heart.store import (
    CompletionRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    RationaleCodeRow,
    Store,
    open_store,
)

from .rows import seed_study

SYSTEMS = ["m1", "m2", "m3"]  # better first
ITEMS = 6
TEXTS = {
    "m1": "That sounds so painful, losing him after all those years together.",
    "m2": "I am sorry.",
    "m3": "Breakups are hard; maybe talk to a friend about it.",
}
HEADER = "item_id,judge,a_system,b_system,winner,strength,rationale,source\n"


def _pairs() -> list[tuple[int, str, str]]:
    return [
        (i, x, y) for i in range(ITEMS) for n, x in enumerate(SYSTEMS) for y in SYSTEMS[n + 1 :]
    ]


def _rows() -> list[str]:
    """Verdicts as shown: each row's a_system is the reply its judge saw first.

    ann picks the better system and says which reply names the feeling; bob always picks the
    reply shown first; cy calls every third pair a tie; ext (an LLM judge of another tool) saw
    every pair both ways and picked the better reply, except on even items, where it picked the
    reply shown first both times.
    """
    rows = []
    for i, x, y in _pairs():
        better_first = (i + SYSTEMS.index(x)) % 2 == 0
        first, second = (x, y) if better_first else (y, x)
        ann = "a" if better_first else "b"
        said = "the first reply" if ann == "a" else "the second reply"
        rows.append(f"i{i},ann,{first},{second},{ann},2,{said} names her feeling,human")
        rows.append(f"i{i},bob,{second},{first},a,3,the first reply names her feeling,human")
        cy = "tie" if i % 3 == 0 else ann
        rows.append(f"i{i},cy,{first},{second},{cy},1,about the same,human")
        rows.append(f"i{i},ext,{x},{y},a,4,the first one acknowledges her grief,llm")
        flip = "a" if i % 2 == 0 else "b"
        rows.append(f"i{i},ext,{y},{x},{flip},4,the second one acknowledges her grief,llm")
    return rows


SWAPPED_SEED = 201931
"""The first seed under which every pair's stored a/b is the other way round from seed 0's."""


def _stored_orders(seed: int) -> list[tuple[str, str]]:
    return [
        seeded_order(seed, f"i{i}", completion_id(f"i{i}", x), completion_id(f"i{i}", y))
        for i, x, y in _pairs()
    ]


def _study(path: Path, seed: int, rows: list[str]) -> Store:
    """A store with the systems' replies and the verdict rows imported, rationales coded."""
    path.mkdir()
    store = open_store(f"sqlite:///{path / 'heart.db'}")
    seed_study(store, SYSTEMS, items=ITEMS)
    completions = path / "completions.csv"
    completions.write_text(
        "item_id,system,text\n"
        + "".join(f'i{i},{s},"{TEXTS[s]}"\n' for i in range(ITEMS) for s in SYSTEMS)
    )
    import_table(store, completions, "completions", seed)
    if rows:  # a file of no rows is refused
        judgments = path / "judgments.csv"
        judgments.write_text(HEADER + "".join(f"{row}\n" for row in rows))
        import_table(store, judgments, "judgments", seed)
    code_with_rules(store, load_codebook())
    return store


def _themes(store: Store) -> list[tuple[str, str, str, str, bool]]:
    """Every code as (judge, item, theme, the system of the reply it is about, negated)."""
    a, b = aliased(CompletionRow), aliased(CompletionRow)
    query = (
        select(JudgmentRow.judge, PairRow.item_id, RationaleCodeRow.theme, RationaleCodeRow.side,
               a.system, b.system, RationaleCodeRow.negated)
        .join(JudgmentRow, JudgmentRow.id == RationaleCodeRow.judgment_id)
        .join(PairRow, PairRow.id == JudgmentRow.pair_id)
        .join(a, a.id == PairRow.a_id)
        .join(b, b.id == PairRow.b_id)
    )  # fmt: skip
    with store.session() as s:
        return sorted(
            (judge, item, theme, {"a": sa, "b": sb}.get(side, side), bool(negated))
            for judge, item, theme, side, sa, sb, negated in s.execute(query)
        )


def _figures(store: Store) -> tuple[object, ...]:
    comparisons = load_comparisons(store, source="all")
    boards = {
        b.key: [
            (s.system, round(s.elo, 9), s.win_rate, s.comparisons) for s in b.leaderboard.standings
        ]
        for b in build_boards(comparisons, rounds=50, seed=0)
    }
    audits = audit_judges(comparisons, verdict_counts(store))
    return boards, audits, _themes(store)


def test_imported_verdicts_give_the_same_figures_whatever_the_row_sequence_or_stored_order(
    tmp_path: Path,
) -> None:
    rows = _rows()
    shuffled = rows[:]
    random.Random(7).shuffle(shuffled)
    assert all(
        swapped == (a, b)[::-1]
        for swapped, (a, b) in zip(_stored_orders(SWAPPED_SEED), _stored_orders(0), strict=True)
    )
    first = _figures(_study(tmp_path / "first", 0, rows))
    assert _figures(_study(tmp_path / "shuffled", 0, shuffled)) == first
    assert _figures(_study(tmp_path / "swapped", SWAPPED_SEED, rows)) == first

    _, audits, themes = first
    by_judge = {a.judge: a for a in audits}
    n = len(_pairs())
    bob = by_judge["bob"]
    assert bob.first_position is not None and (bob.first_position.hits, bob.first_position.n) == (
        n,
        n,
    )
    assert bob.flagged and bob.problems[0].startswith("the reply shown first won 100% [")
    ann = by_judge["ann"]
    assert ann.first_position is not None and ann.first_position.hits == sum(
        (i + SYSTEMS.index(x)) % 2 == 0 for i, x, _ in _pairs()
    )
    cy = by_judge["cy"]  # ties count among the verdicts, not in the first-position share
    assert (cy.verdicts, cy.ties) == (n, n // 3) and cy.first_position is not None
    assert cy.first_position.n == n - n // 3
    assert [(a.judge, a.source, a.person, a.imported, a.counts.imported) for a in audits] == [
        ("ext", "llm", False, True, 2 * n),
        *((judge, "human", True, True, n) for judge in ("ann", "bob", "cy")),
    ]  # LLM judges first
    ext = by_judge["ext"]  # the winner changed with the order on the even items' pairs
    assert (ext.verdicts, ext.both_orders) == (2 * n, n)
    assert ext.flip is not None and (ext.flip.hits, ext.flip.n) == (n // 2, n)
    assert ext.first_position is not None and ext.first_position.hits == n + n // 2
    # "the first reply names her feeling" is about the reply bob saw first: the worse system
    bob_themes = [(item, system) for judge, item, theme, system, _ in themes if judge == "bob"]
    expected = sorted(
        (f"i{i}", y if (i + SYSTEMS.index(x)) % 2 == 0 else x) for i, x, y in _pairs()
    )
    assert sorted(bob_themes) == expected
    ann_themes = {(item, system) for judge, item, _, system, _ in themes if judge == "ann"}
    assert ann_themes == {(f"i{i}", x) for i, x, _ in _pairs()}  # always the better reply


def _verdicts(store: Store) -> list[tuple[str, str, str, str, str]]:
    """Every judgment as (judge, the system shown first, the system shown second, winner's
    system or tie, rationale)."""
    a, b = aliased(CompletionRow), aliased(CompletionRow)
    query = (
        select(JudgmentRow.judge, JudgmentRow.order, JudgmentRow.winner, JudgmentRow.rationale,
               a.system, b.system)
        .join(PairRow, PairRow.id == JudgmentRow.pair_id)
        .join(a, a.id == PairRow.a_id)
        .join(b, b.id == PairRow.b_id)
    )  # fmt: skip
    with store.session() as s:
        out = []
        for judge, order, winner, rationale, sa, sb in s.execute(query):
            first, second = (sa, sb) if order == "ab" else (sb, sa)
            out.append((judge, first, second, {"a": sa, "b": sb}.get(winner, winner), rationale))
        return sorted(out)


def test_a_judge_who_saw_a_pair_both_ways_keeps_two_judgments(tmp_path: Path) -> None:
    store = _study(tmp_path / "s", 0, ["i0,ext,m1,m2,a,2,first", "i0,ext,m2,m1,a,2,second"])
    assert _verdicts(store) == [
        ("ext", "m1", "m2", "m1", "first"),
        ("ext", "m2", "m1", "m2", "second"),
    ]


def test_a_pair_stored_the_other_way_round_keeps_the_order_shown(tmp_path: Path) -> None:
    """A pair the study has (here from a study with another seed) is judged in its stored
    terms, not in the importing study's seeded order."""
    store = _study(tmp_path / "s", SWAPPED_SEED, ["i0,ann,m1,m2,b,2,x"])
    judgments = tmp_path / "more.csv"
    judgments.write_text(HEADER + "i0,bob,m1,m2,a,2,y\ni0,cy,m2,m1,tie,1,z\n")
    import_table(store, judgments, "judgments", 0)
    assert _verdicts(store) == [
        ("ann", "m1", "m2", "m2", "x"),
        ("bob", "m1", "m2", "m1", "y"),
        ("cy", "m2", "m1", "tie", "z"),
    ]


def test_a_bundle_keeps_every_judgments_order(tmp_path: Path) -> None:
    store = _study(tmp_path / "s", 0, _rows())
    (tmp_path / "s" / "study.yaml").write_text("name: t\nsystems: []\n")
    export_bundle(store, tmp_path / "s", tmp_path / "bundle")
    fresh = open_store(f"sqlite:///{tmp_path / 'fresh.db'}")
    import_bundle(fresh, tmp_path / "bundle")
    assert _verdicts(fresh) == _verdicts(store)
    assert {order for *_, order in _orders(fresh)} == {"ab", "ba"}
    assert _figures(fresh) == _figures(store)


def _orders(store: Store) -> list[tuple[str, str]]:
    with store.session() as s:
        return sorted((j.id, j.order) for j in s.scalars(select(JudgmentRow)))


def test_a_verdict_an_earlier_release_stored_as_shown_a_first_is_not_counted_twice(
    tmp_path: Path,
) -> None:
    """Earlier releases stored every imported verdict as shown a first: importing the same row
    again is refused, not added beside it; a file that gives both orders is taken."""
    store = _study(tmp_path / "s", 0, [])
    x, y = completion_id("i0", "m1"), completion_id("i0", "m2")
    a, b = seeded_order(0, "i0", x, y)
    row = f"i0,ann,{'m2' if a == x else 'm1'},{'m1' if a == x else 'm2'},a,2,warm"  # b shown first
    pid = pair_id("i0", x, y)
    with store.session() as s:  # as an earlier release stored that row
        s.add(PairRow(id=pid, item_id="i0", a_id=a, b_id=b, design="imported"))
        s.add(JudgeRow(name="ann", source="human", family="human", spec={}))
        s.flush()
        s.add(JudgmentRow(id=judgment_id(pid, "ann", "ab"), pair_id=pid, judge="ann", order="ab",
                          status="ok", winner="b", strength=2, axes={}, rationale="warm",
                          created_at="x"))  # fmt: skip
    before = _verdicts(store)
    again = tmp_path / "again.csv"
    again.write_text(HEADER + row + "\n")
    with pytest.raises(ImportRefused, match=r"again\.csv line 2: judge 'ann' has this verdict"):
        import_table(store, again, "judgments", 0)
    assert _verdicts(store) == before
    both = tmp_path / "both.csv"
    first_a = f"i0,ann,{'m1' if a == x else 'm2'},{'m2' if a == x else 'm1'},b,2,warm"
    both.write_text(HEADER + first_a + "\n" + row + "\n")
    assert import_table(store, both, "judgments", 0).added == {"judgments.jsonl": 1}
