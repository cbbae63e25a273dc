"""Co-mention of two groups on the same pairs, and its chance rate, by hand on tiny cases."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.metrics import cohen_kappa_score

from heart.stats import chance_co_mention, co_mention

# three pairs (rows) in three conversations, two themes (columns)
HUMANS = np.array([[1, 0], [0, 1], [1, 1]], dtype=bool)
JUDGES = np.array([[1, 1], [0, 1], [0, 1]], dtype=bool)


def test_shares_kappa_and_rates_by_hand() -> None:
    result = co_mention(HUMANS, JUDGES, np.array([0, 1, 2]), 3, rounds=200, seed=0)
    first, second = result.themes
    assert (first.hits, first.n) == (2, 3)  # theme 0: pairs 0 and 1 alike, pair 2 not
    assert (second.hits, second.n) == (2, 3)  # theme 1: pair 0 differs
    assert (result.overall.hits, result.overall.n) == (4, 6)
    assert result.kappa[0] == pytest.approx(cohen_kappa_score(HUMANS[:, 0], JUDGES[:, 0]))
    assert result.kappa_overall == pytest.approx(
        cohen_kappa_score(HUMANS.reshape(-1), JUDGES.reshape(-1))
    )
    assert result.rate_first == pytest.approx([2 / 3, 2 / 3])
    assert result.rate_second == pytest.approx([1 / 3, 1.0])


def test_chance_with_two_pairs_is_the_swap_itself() -> None:
    """With two conversations, each pair's judges can only come from the other pair."""
    humans = np.array([[1, 0, 1], [0, 0, 1]], dtype=bool)
    judges = np.array([[1, 1, 0], [0, 0, 1]], dtype=bool)
    chance = chance_co_mention(humans, judges, np.array([7, 9]), rounds=5, seed=3)
    # pair 0 against pair 1's judges: 0 0 1 vs 1 0 1 -> alike on themes 1, 2
    # pair 1 against pair 0's judges: 0 0 1 vs 1 1 0 -> alike on none
    assert chance == pytest.approx([0.0, 0.5, 0.5])


def test_chance_with_three_pairs_nears_the_average_over_other_pairs() -> None:
    exact = np.mean(
        [[np.mean([HUMANS[i, t] == JUDGES[j, t] for j in range(3) if j != i]) for t in range(2)]
         for i in range(3)],
        axis=0,
    )  # fmt: skip
    # by hand: theme 0: pair 0 (1) vs 0, 0 -> 0; pair 1 (0) vs 1, 0 -> 1/2; pair 2 (1) vs 1, 0
    # -> 1/2: 1/3. Theme 1: every judge mentions it, so the humans' rate, 2/3.
    assert exact == pytest.approx([1 / 3, 2 / 3])
    chance = chance_co_mention(HUMANS, JUDGES, np.array([0, 1, 2]), rounds=4000, seed=1)
    assert chance == pytest.approx(exact, abs=0.02)
    again = chance_co_mention(HUMANS, JUDGES, np.array([0, 1, 2]), rounds=4000, seed=1)
    assert np.array_equal(chance, again)  # seeded


def test_pairs_of_one_conversation_are_never_matched_to_each_other() -> None:
    humans = np.array([[1], [1], [0]], dtype=bool)
    judges = np.array([[1], [1], [1]], dtype=bool)
    # pairs 0 and 1 share a conversation: each can only take pair 2's judges (1 -> alike for
    # both), and pair 2 takes pair 0's or 1's (both 1 -> unlike): 2/3 exactly
    chance = chance_co_mention(humans, judges, np.array([0, 0, 1]), rounds=50, seed=0)
    assert chance == pytest.approx([2 / 3])
    assert np.isnan(chance_co_mention(humans, judges, np.array([4, 4, 4]), rounds=5, seed=0)).all()
