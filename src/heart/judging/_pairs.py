"""The pair design: which completions of an item are compared, and in which A/B order."""

from __future__ import annotations

import itertools
from collections import defaultdict

from sqlalchemy import select

from heart.config import PairDesign, PairsSpec
from heart.store import CompletionRow, PairRow, Store
from heart.types import sha256_hex, stable_id


def pair_id(item_id: str, first: str, second: str) -> str:
    """The id of the unordered pair of completions ``first`` and ``second`` of ``item_id``."""
    lo, hi = sorted((first, second))
    return stable_id("pr-", item_id, lo, hi)


def seeded_order(seed: int, item_id: str, first: str, second: str) -> tuple[str, str]:
    """The (A, B) order of a pair: a fair coin from the seed and the pair, so reruns agree."""
    lo, hi = sorted((first, second))
    flip = int(sha256_hex(f"{seed}\x1f{pair_id(item_id, lo, hi)}")[:8], 16) & 1
    return (hi, lo) if flip else (lo, hi)


def build_pairs(store: Store, spec: PairsSpec, seed: int) -> int:
    """Add every pair the design asks for that is not stored yet; returns how many were added.

    Pairs join completions of different systems only (two replies by the same system say nothing
    about its rating); failed completions take no part until they succeed.
    """
    if spec.design is not PairDesign.ALL:
        raise NotImplementedError(f"pair design {spec.design.value!r}")
    with store.session() as session:
        by_item: dict[str, list[CompletionRow]] = defaultdict(list)
        for row in session.scalars(
            select(CompletionRow).where(CompletionRow.status == "ok").order_by(CompletionRow.id)
        ):
            by_item[row.item_id].append(row)
        existing = set(session.scalars(select(PairRow.id)))
        added = 0
        for item_id, completions in sorted(by_item.items()):
            for x, y in itertools.combinations(completions, 2):
                if x.system == y.system:
                    continue
                pid = pair_id(item_id, x.id, y.id)
                if pid in existing:
                    continue
                a, b = seeded_order(seed, item_id, x.id, y.id)
                session.add(
                    PairRow(id=pid, item_id=item_id, a_id=a, b_id=b, design=spec.design.value)
                )
                existing.add(pid)
                added += 1
    return added
