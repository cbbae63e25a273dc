"""The all-pairs design: every cross-system pair once, seeded A/B order, new work only."""

from __future__ import annotations

from collections import Counter

from sqlalchemy import select

from heart.config import PairsSpec
from heart.judging import build_pairs, pair_id, seeded_order
from heart.store import CompletionRow, PairRow, Store

from ..rows import seed_study


def test_all_pairs_once_with_balanced_seeded_order(store: Store) -> None:
    seed_study(store, ["s1", "s2", "s3", "s4"], items=60, completions=True)
    assert build_pairs(store, PairsSpec(), seed=11) == 60 * 6
    assert build_pairs(store, PairsSpec(), seed=11) == 0  # rerun adds nothing
    with store.session() as s:
        pairs = list(s.scalars(select(PairRow)))
        completions = {c.id: c.system for c in s.scalars(select(CompletionRow))}
    per_item = Counter(p.item_id for p in pairs)
    assert set(per_item.values()) == {6}
    first = Counter(completions[p.a_id] for p in pairs)
    # a fair seeded coin: each system is shown first in about half its 180 pairs
    assert all(60 <= first[s] <= 120 for s in ("s1", "s2", "s3", "s4")), first
    for p in pairs:
        assert (p.a_id, p.b_id) == seeded_order(11, p.item_id, p.a_id, p.b_id)
        assert p.id == pair_id(p.item_id, p.b_id, p.a_id)


def test_adding_a_system_pairs_only_the_new_one(store: Store) -> None:
    seed_study(store, ["s1", "s2"], items=5, completions=True)
    assert build_pairs(store, PairsSpec(), seed=0) == 5
    seed_study(store, ["s1", "s2", "s3"], items=5, completions=True)
    assert build_pairs(store, PairsSpec(), seed=0) == 10


def test_failed_and_same_system_completions_are_not_paired(store: Store) -> None:
    seed_study(store, ["s1", "s2"], items=1, completions=True)
    with store.session() as s:
        s.add(
            CompletionRow(
                id="cp-human-1",
                item_id="i0",
                system="s1",
                contributor="r1",
                status="ok",
                text="t",
                created_at="x",
            )
        )
        s.get(CompletionRow, "cp-0-s2").status = "failed"
    assert build_pairs(store, PairsSpec(), seed=0) == 0
