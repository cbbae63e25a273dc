"""The fewest removals that flip an order: by hand, against an exhaustive search on small
boards, by conversation, and when the search cannot flip it or runs out of refits."""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from heart.stats import fewest_removals, fit_bradley_terry


def _theta(a, b, share, weight, keep, k):
    wins = np.zeros((k, k))
    np.add.at(wins, (a[keep], b[keep]), weight[keep] * share[keep])
    np.add.at(wins, (b[keep], a[keep]), weight[keep] * (1 - share[keep]))
    return fit_bradley_terry(wins).theta


def _flipped(a, b, share, weight, keep, k, upper, lower) -> bool:
    """Whether the kept verdicts put ``lower`` level with or above ``upper``, both still rated."""
    played = np.bincount(a[keep], minlength=k) + np.bincount(b[keep], minlength=k)
    theta = _theta(a, b, share, weight, keep, k)
    return bool(played[upper] and played[lower] and theta[lower] >= theta[upper] - 1e-9)


def test_two_of_three_wins_removed_make_a_tie() -> None:
    a, b = np.zeros(4, dtype=np.int64), np.ones(4, dtype=np.int64)
    share, weight = np.array([1.0, 1.0, 1.0, 0.0]), np.ones(4)
    found = fewest_removals(a, b, share, weight, np.arange(4), 2, 0, 1)
    assert (found.count, found.narrowed) == (2, True)
    # already level or below: nothing to remove
    assert fewest_removals(a, b, share, weight, np.arange(4), 2, 1, 0).count == 0


def test_conversations_are_removed_whole() -> None:
    # conversation 0 holds three of the upper system's wins, conversation 1 one win each way
    a, b = np.zeros(5, dtype=np.int64), np.ones(5, dtype=np.int64)
    share, weight = np.array([1.0, 1.0, 1.0, 1.0, 0.0]), np.ones(5)
    found = fewest_removals(a, b, share, weight, np.array([0, 0, 0, 1, 1]), 2, 0, 1)
    assert found.count == 1


def test_the_greedy_count_is_never_below_the_exhaustive_fewest() -> None:
    rng = np.random.default_rng(0)
    equal = 0
    for _ in range(30):
        n, k = 9, 3
        a = rng.integers(0, k, n)
        b = (a + rng.integers(1, k, n)) % k
        share = rng.choice([0.0, 0.5, 1.0], n)
        weight = rng.integers(1, 3, n).astype(float)
        theta = _theta(a, b, share, weight, np.ones(n, dtype=bool), k)
        upper, lower = np.argsort(-theta)[:2]
        found = fewest_removals(a, b, share, weight, np.arange(n), k, upper, lower)
        fewest = next(
            m
            for m in range(n + 1)
            for gone in itertools.combinations(range(n), m)
            if _flipped(a, b, share, weight, ~np.isin(np.arange(n), gone), k, upper, lower)
        )
        assert found.count is not None and found.count >= fewest
        equal += found.count == fewest
    assert equal >= 25  # greedy finds the fewest on most small boards


def test_an_order_no_removal_can_flip_has_no_count() -> None:
    # the upper system won every verdict: removing wins never puts the lower one above
    a, b = np.zeros(3, dtype=np.int64), np.ones(3, dtype=np.int64)
    found = fewest_removals(a, b, np.ones(3), np.ones(3), np.arange(3), 2, 0, 1)
    assert found.count is None


def test_a_search_out_of_refits_gives_an_upper_bound() -> None:
    rng = np.random.default_rng(4)
    n = 400
    a = np.zeros(n, dtype=np.int64)
    b = np.ones(n, dtype=np.int64)
    share = (rng.random(n) < 0.6).astype(float)
    full = fewest_removals(a, b, share, np.ones(n), np.arange(n), 2, 0, 1)
    short = fewest_removals(a, b, share, np.ones(n), np.arange(n), 2, 0, 1, max_refits=2)
    assert full.narrowed and full.count is not None
    assert not short.narrowed and short.count is not None and short.count >= full.count
    # the count is the share's own arithmetic: a wins w of n; w − k = n − w after k removals
    wins = int(share.sum())
    assert full.count == pytest.approx(2 * wins - n, abs=0)
