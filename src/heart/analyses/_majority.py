"""The ensemble's verdict per pair: each judge's vote, then the majority of the judges.

A judge that saw a pair in both orders votes for the side it preferred both times; when its
two verdicts disagree it abstains (its preference followed the order). A pair's majority is the
side most judges voted for; an even split, or no votes, leaves the pair without a majority.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from heart.analyses._comparisons import Comparisons

A, B, SPLIT = 0, 1, 2
Ints = npt.NDArray[np.int64]


@dataclass(frozen=True)
class PairMajority:
    """The ensemble's verdict on one pair: ``winner`` is 0 (a), 1 (b) or 2 (no majority)."""

    pair: int
    winner: int
    votes_a: int
    votes_b: int
    abstained: int


@dataclass(frozen=True)
class Votes:
    """Every judge's vote on every pair it rated, one entry per (pair, judge), by pair then judge.

    ``pair`` and ``judge`` number them as the comparisons do; ``vote`` is 0 (a), 1 (b) or 2 (it
    abstains: a tie, or verdicts that disagree between the orders). ``pairs`` lists the pairs
    voted on (ascending), ``row`` places each vote among them, and ``conversation`` is each
    listed pair's conversation."""

    pair: Ints
    judge: Ints
    vote: Ints
    pairs: Ints
    row: Ints
    conversation: Ints
    n_conversations: int

    def tally(self, judges: Collection[int]) -> tuple[Ints, Ints, Ints]:
        """Per listed pair, among ``judges``: votes for a, votes for b, abstentions."""
        mine = np.isin(self.judge, np.fromiter(judges, dtype=np.int64, count=len(judges)))
        n = self.pairs.size

        def count(side: int) -> Ints:
            counts: Ints = np.bincount(self.row[mine & (self.vote == side)], minlength=n)
            return counts

        return count(A), count(B), count(SPLIT)

    def majority(self, judges: Collection[int]) -> tuple[Ints, Ints, Ints, Ints]:
        """Per listed pair, among ``judges``: the side (2 for none), the votes for a and for b,
        and the abstentions."""
        a, b, abstained = self.tally(judges)
        side: Ints = np.where(a > b, A, np.where(b > a, B, SPLIT))
        return side, a, b, abstained


def vote_table(comparisons: Comparisons) -> Votes:
    """The votes of ``comparisons``: one per judge and pair, whatever the orders it saw."""
    judges = max(len(comparisons.judges), 1)
    key = comparisons.pair * judges + comparisons.judge
    order = np.argsort(key, kind="stable")
    ranked = key[order]
    starts = np.flatnonzero(np.r_[True, ranked[1:] != ranked[:-1]]) if ranked.size else ranked
    outcome = comparisons.outcome[order]
    low = np.minimum.reduceat(outcome, starts) if starts.size else outcome
    high = np.maximum.reduceat(outcome, starts) if starts.size else outcome
    pair, judge = ranked[starts] // judges, ranked[starts] % judges
    pairs, row = np.unique(pair, return_inverse=True)
    conversation = np.zeros(pairs.size, dtype=np.int64)
    conversation[np.searchsorted(pairs, comparisons.pair)] = comparisons.conversation
    return Votes(
        pair=pair, judge=judge, vote=np.where(low == high, low, SPLIT), pairs=pairs,
        row=row.reshape(-1), conversation=conversation,
        n_conversations=len(comparisons.conversations),
    )  # fmt: skip


def judge_votes(comparisons: Comparisons) -> dict[tuple[int, int], int]:
    """(pair, judge) → 0 for a, 1 for b, 2 when the judge's verdicts on the pair disagree (or
    it called a tie)."""
    votes = vote_table(comparisons)
    keys = zip(votes.pair.tolist(), votes.judge.tolist(), strict=True)
    return dict(zip(keys, votes.vote.tolist(), strict=True))


def ensemble_majority(comparisons: Comparisons) -> list[PairMajority]:
    """The majority verdict of the judges on every pair they rated."""
    votes = vote_table(comparisons)
    side, a, b, abstained = votes.majority(range(len(comparisons.judges)))
    return [
        PairMajority(*row)
        for row in zip(votes.pairs.tolist(), side.tolist(), a.tolist(), b.tolist(),
                       abstained.tolist(), strict=True)
    ]  # fmt: skip
