"""The pair designs: all pairs, against a baseline, or k sampled per item with even coverage;
seeded A/B order; reruns and new systems add only new pairs."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

from sqlalchemy import select

from heart.config import PairDesign, PairsSpec
from heart.ids import pair_id, seeded_order
from heart.judging import build_pairs
from heart.store import CompletionRow, PairRow, Store, open_store

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


def _pairs_by_system(store: Store) -> list[tuple[str, str, str]]:
    with store.session() as s:
        system = {c.id: c.system for c in s.scalars(select(CompletionRow))}
        return [
            (p.item_id, *sorted((system[p.a_id], system[p.b_id])))
            for p in s.scalars(select(PairRow))
        ]


def test_baseline_design_pairs_every_system_with_the_baseline_only(store: Store) -> None:
    seed_study(store, ["s1", "s2", "s3", "base"], items=4, completions=True)
    spec = PairsSpec(design=PairDesign.BASELINE, baseline="base")
    assert build_pairs(store, spec, seed=3) == 4 * 3
    pairs = _pairs_by_system(store)
    assert all("base" in p[1:] for p in pairs)
    assert Counter(p[1:] for p in pairs) == {
        ("base", "s1"): 4, ("base", "s2"): 4, ("base", "s3"): 4
    }  # fmt: skip


def test_human_completions_take_part_like_any_system(store: Store) -> None:
    seed_study(store, ["model", "human"], items=1, completions=True)
    with store.session() as s:
        for writer in ("r2", "r3"):
            s.add(
                CompletionRow(
                    id=f"cp-0-human-{writer}", item_id="i0", system="human", contributor=writer,
                    status="ok", text="t", created_at="x",
                )
            )  # fmt: skip
    # three human replies, each against the model; never human against human
    assert build_pairs(store, PairsSpec(), seed=0) == 3
    assert _pairs_by_system(store) == [("i0", "human", "model")] * 3


def test_sampled_design_gives_k_pairs_per_item_with_even_coverage(store: Store) -> None:
    systems = [f"s{i}" for i in range(6)]  # 15 system pairs
    seed_study(store, systems, items=45, completions=True)
    spec = PairsSpec(design=PairDesign.SAMPLED, per_item=3)
    assert build_pairs(store, spec, seed=5) == 45 * 3
    pairs = _pairs_by_system(store)
    assert set(Counter(p[0] for p in pairs).values()) == {3}
    coverage = Counter(p[1:] for p in pairs)
    assert len(coverage) == 15 and set(coverage.values()) == {9}  # 135 pairs / 15, exactly
    appearances = Counter(s for p in pairs for s in p[1:])
    assert set(appearances.values()) == {45}  # 270 slots / 6 systems
    assert build_pairs(store, spec, seed=5) == 0


def test_sampled_design_is_seeded(tmp_path: Path) -> None:
    chosen = []
    for run, seed in enumerate((5, 5, 6)):
        store = open_store(f"sqlite:///{tmp_path / f'{run}.db'}")
        seed_study(store, [f"s{i}" for i in range(5)], items=10, completions=True)
        build_pairs(store, PairsSpec(design=PairDesign.SAMPLED, per_item=2), seed=seed)
        chosen.append(sorted(_pairs_by_system(store)))
        store.close()
    assert chosen[0] == chosen[1] != chosen[2]
