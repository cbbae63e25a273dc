"""The ensemble's verdict per pair: each judge's vote, then the majority of the judges.

A judge that saw a pair in both orders votes for the side it preferred both times; when its
two verdicts disagree it abstains (its preference followed the order). A pair's majority is the
side most judges voted for; an even split, or no votes, leaves the pair without a majority.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass

from heart.analyses._comparisons import Comparisons

A, B, SPLIT = 0, 1, 2


@dataclass(frozen=True)
class PairMajority:
    """The ensemble's verdict on one pair: ``winner`` is 0 (a), 1 (b) or 2 (no majority)."""

    pair: int
    winner: int
    votes_a: int
    votes_b: int
    abstained: int


def judge_votes(comparisons: Comparisons) -> dict[tuple[int, int], int]:
    """(pair, judge) → 0 for a, 1 for b, 2 when the judge's verdicts on the pair disagree (or
    it called a tie)."""
    seen: dict[tuple[int, int], set[int]] = defaultdict(set)
    for pair, judge, outcome in zip(
        comparisons.pair.tolist(), comparisons.judge.tolist(), comparisons.outcome.tolist(),
        strict=True,
    ):  # fmt: skip
        seen[(pair, judge)].add(outcome)
    return {key: next(iter(v)) if len(v) == 1 else SPLIT for key, v in seen.items()}


def ensemble_majority(comparisons: Comparisons) -> list[PairMajority]:
    """The majority verdict of the judges on every pair they rated."""
    tally: dict[int, Counter[int]] = defaultdict(Counter)
    for (pair, _judge), vote in judge_votes(comparisons).items():
        tally[pair][vote] += 1
    out = []
    for pair in sorted(tally):
        votes = tally[pair]
        a, b = votes[A], votes[B]
        winner = A if a > b else B if b > a else SPLIT
        out.append(PairMajority(pair, winner, a, b, votes[SPLIT]))
    return out
