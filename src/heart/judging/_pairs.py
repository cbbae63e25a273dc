"""The pair design: which completions of an item are compared, and in which A/B order.

Every design works on completions, so the human pool's three replies per item take part like
any system's. Pairs only ever grow: a rerun, a new system or new items add pairs and never
replace stored ones, so judgments already made stay valid.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable

from sqlalchemy import select

from heart.config import PairDesign, PairsSpec
from heart.ids import coin, pair_id, seeded_order
from heart.store import CompletionRow, PairRow, Store
from heart.types import Status

Completion = tuple[str, str]  # (completion id, system)


def candidate_pairs(completions: list[Completion]) -> list[tuple[Completion, Completion]]:
    """Every pair of completions from two different systems (two replies of one system say
    nothing about its rating)."""
    return [(x, y) for x, y in itertools.combinations(completions, 2) if x[1] != y[1]]


def _system_pair(x: Completion, y: Completion) -> tuple[str, str]:
    lo, hi = sorted((x[1], y[1]))
    return (lo, hi)


def _sampled(
    by_item: dict[str, list[Completion]],
    stored: dict[str, set[tuple[str, str]]],
    per_item: int,
    seed: int,
) -> Iterable[tuple[str, Completion, Completion]]:
    """``per_item`` pairs per item, chosen greedily so every pair of systems is compared about
    equally often over the study and every system appears about equally often; stored pairs
    count first."""
    pair_uses: Counter[tuple[str, str]] = Counter()
    system_uses: Counter[str] = Counter()
    systems = {item: dict(completions) for item, completions in by_item.items()}
    for item_id, ids in stored.items():
        for a, b in ids:
            if a in systems.get(item_id, {}) and b in systems[item_id]:
                x, y = (a, systems[item_id][a]), (b, systems[item_id][b])
                pair_uses[_system_pair(x, y)] += 1
                system_uses.update((x[1], y[1]))
    for item_id in sorted(by_item, key=lambda i: (coin(seed, "item", i), i)):
        have = {pair_id(item_id, a, b) for a, b in stored.get(item_id, set())}
        pool = [
            (x, y)
            for x, y in candidate_pairs(by_item[item_id])
            if pair_id(item_id, x[0], y[0]) not in have
        ]
        for _ in range(max(0, per_item - len(have))):
            if not pool:
                break
            best = min(
                pool,
                key=lambda p: (
                    pair_uses[_system_pair(*p)],
                    system_uses[p[0][1]] + system_uses[p[1][1]],
                    coin(seed, pair_id(item_id, p[0][0], p[1][0])),
                ),
            )
            pool.remove(best)
            pair_uses[_system_pair(*best)] += 1
            system_uses.update((best[0][1], best[1][1]))
            yield item_id, best[0], best[1]


def _designed(
    spec: PairsSpec,
    by_item: dict[str, list[Completion]],
    stored: dict[str, set[tuple[str, str]]],
    seed: int,
) -> Iterable[tuple[str, Completion, Completion]]:
    """The pairs ``spec`` asks for, stored ones included (the adaptive design adds its pairs
    in rounds, from the verdicts: see ``heart.judging.judge_in_rounds``)."""
    if spec.design is PairDesign.ADAPTIVE:
        return
    if spec.design is PairDesign.SAMPLED:
        assert spec.per_item is not None  # the config requires it
        yield from _sampled(by_item, stored, spec.per_item, seed)
        return
    for item_id, completions in sorted(by_item.items()):
        for x, y in candidate_pairs(completions):
            if spec.design is PairDesign.BASELINE and spec.baseline not in (x[1], y[1]):
                continue
            yield item_id, x, y


def pairs_to_add(
    spec: PairsSpec,
    completions: Iterable[tuple[str, str, str]],
    pairs: Iterable[tuple[str, str, str, str]],
    seed: int,
) -> list[PairRow]:
    """The pairs the design asks for that are not among ``pairs`` yet, each in its seeded
    order. ``completions`` are the usable replies (id, item, system); ``pairs`` the stored
    ones (id, item, a, b)."""
    by_item: dict[str, list[Completion]] = defaultdict(list)
    for cid, item_id, system in sorted(completions):
        by_item[item_id].append((cid, system))
    stored: dict[str, set[tuple[str, str]]] = defaultdict(set)
    existing: set[str] = set()
    for pid, item_id, a, b in pairs:
        stored[item_id].add((a, b))
        existing.add(pid)
    added = []
    for item_id, x, y in _designed(spec, by_item, stored, seed):
        pid = pair_id(item_id, x[0], y[0])
        if pid in existing:
            continue
        a, b = seeded_order(seed, item_id, x[0], y[0])
        added.append(PairRow(id=pid, item_id=item_id, a_id=a, b_id=b, design=spec.design.value))
        existing.add(pid)
    return added


def build_pairs(store: Store, spec: PairsSpec, seed: int) -> int:
    """Add every pair the design asks for that is not stored yet; returns how many were added.

    Failed completions take no part until they succeed.
    """
    with store.session() as session:
        ok = CompletionRow.status == Status.OK
        completions = [
            (cid, item_id, system)
            for cid, item_id, system in session.execute(
                select(CompletionRow.id, CompletionRow.item_id, CompletionRow.system).where(ok)
            )
        ]
        pairs = [
            (pid, item_id, a, b)
            for pid, item_id, a, b in session.execute(
                select(PairRow.id, PairRow.item_id, PairRow.a_id, PairRow.b_id)
            )
        ]
        added = pairs_to_add(spec, completions, pairs, seed)
        session.add_all(added)
    return len(added)
