"""The ensemble majority per pair, on hand-built judgments."""

from __future__ import annotations

from heart.analyses import ensemble_majority, load_comparisons
from heart.store import JudgeRow, JudgmentRow, Store

from .test_audit import ITEMS, RANK, SHOWN, _build


def test_majority_counts_consistent_judges_and_lets_order_followers_abstain(store: Store) -> None:
    _build(store)  # j follows the order (abstains everywhere); k prefers s1 > s2 > warm
    with store.session() as s:
        s.add(JudgeRow(name="m", source="llm", family="m", spec={}))
        s.flush()
        for a, b in SHOWN:  # on item 0, m always takes the side k rejects
            winner = "b" if RANK.index(a) < RANK.index(b) else "a"
            s.add(JudgmentRow(id=f"m{a}{b}", pair_id=f"p0{a}{b}", judge="m", order="ab",
                              status="ok", winner=winner, strength=1, created_at="x"))  # fmt: skip
    comparisons = load_comparisons(store)
    majorities = ensemble_majority(comparisons)
    assert len(majorities) == ITEMS * 3
    split = [m for m in majorities if m.winner == 2]
    assert len(split) == 3 and all((m.votes_a, m.votes_b, m.abstained) == (1, 1, 1) for m in split)
    decided = [m for m in majorities if m.winner != 2]
    assert all(m.abstained == 1 and m.votes_a + m.votes_b == 1 for m in decided)
    # every decided pair goes to k's side: the better-ranked system
    pair_names = {}
    for row, pair in enumerate(comparisons.pair.tolist()):
        pair_names[pair] = (comparisons.systems[comparisons.a[row]],
                            comparisons.systems[comparisons.b[row]])  # fmt: skip
    for m in decided:
        a, b = pair_names[m.pair]
        assert m.winner == (0 if RANK.index(a) < RANK.index(b) else 1)
