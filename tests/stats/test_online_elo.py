"""Sequential (online) Elo averaged over comparison orders."""

from __future__ import annotations

import math
import sys

import numpy as np
import numpy.typing as npt
import pytest
from scipy.special import expit
from scipy.stats import kendalltau

from heart.stats import fit_bradley_terry, win_matrix
from heart.stats._online_elo import online_elo, ratings_along
from heart.stats._online_elo_compiled import compiled_ratings_along

IntArray = npt.NDArray[np.int64]


def expected_score(r_a: float, r_b: float) -> float:
    return 1.0 / (1.0 + math.pow(10.0, (r_b - r_a) / 400.0))


def simulate(
    true_theta: np.ndarray, n: int, seed: int
) -> tuple[IntArray, IntArray, npt.NDArray[np.bool_]]:
    rng = np.random.default_rng(seed)
    k = true_theta.size
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    a_wins = rng.random(n) < expit(true_theta[a] - true_theta[b])
    tie = rng.random(n) < 0.1
    return np.where(a_wins, a, b), np.where(a_wins, b, a), tie


def test_three_rows_in_the_given_order_by_hand() -> None:
    winner = np.array([0, 1, 2])
    loser = np.array([1, 2, 0])
    tie = np.array([False, False, True])
    ratings = online_elo(winner, loser, tie, 3, k_factor=4.0, permutations=0)

    r = [1500.0, 1500.0, 1500.0]
    delta = 4.0 * (1.0 - expected_score(r[0], r[1]))  # 0 beats 1 at even odds: +2
    r[0], r[1] = r[0] + delta, r[1] - delta
    delta = 4.0 * (1.0 - expected_score(r[1], r[2]))  # 1 (at 1498) beats 2 (at 1500)
    r[1], r[2] = r[1] + delta, r[2] - delta
    delta = 4.0 * (0.5 - expected_score(r[2], r[0]))  # 2 ties 0
    r[2], r[0] = r[2] + delta, r[0] - delta
    np.testing.assert_allclose(ratings, r, rtol=0, atol=1e-12)
    np.testing.assert_allclose(ratings, [1501.976909, 1500.011513, 1498.011578], atol=1e-6)


def test_a_win_moves_ratings_by_k_times_the_surprise() -> None:
    ratings = online_elo(np.array([1]), np.array([0]), None, 2, k_factor=32.0, permutations=0)
    np.testing.assert_allclose(ratings, [1484.0, 1516.0])


def test_mean_rating_stays_1500() -> None:
    winner, loser, tie = simulate(np.array([1.0, 0.3, 0.0, -0.4, -1.1, 0.6]), 500, seed=1)
    ratings = online_elo(winner, loser, tie, 7, k_factor=16.0, permutations=20, seed=3)
    assert ratings.mean() == pytest.approx(1500.0, abs=1e-9)
    assert ratings[6] == 1500.0  # never compared
    assert np.ptp(ratings) > 50.0


def test_each_permutation_is_a_seeded_pcg64_shuffle_of_the_rows() -> None:
    winner, loser, tie = simulate(np.array([0.5, 0.0, -0.5]), 60, seed=2)
    rng = np.random.Generator(np.random.PCG64(11))
    orders = rng.permuted(np.tile(np.arange(60), (3, 1)), axis=1)
    by_order = [
        online_elo(winner[o], loser[o], tie[o], 3, permutations=0, k_factor=8.0) for o in orders
    ]
    averaged = online_elo(winner, loser, tie, 3, permutations=3, seed=11, k_factor=8.0)
    np.testing.assert_allclose(averaged, np.mean(by_order, axis=0), rtol=0, atol=1e-9)
    again = online_elo(winner, loser, tie, 3, permutations=3, seed=11, k_factor=8.0)
    other = online_elo(winner, loser, tie, 3, permutations=3, seed=12, k_factor=8.0)
    np.testing.assert_array_equal(averaged, again)
    assert not np.array_equal(averaged, other)


def test_order_averaged_ratings_rank_systems_like_bradley_terry() -> None:
    true = np.array([1.2, -1.2, 0.6, 0.0, -0.6])
    winner, loser, tie = simulate(true, 3000, seed=7)
    ratings = online_elo(winner, loser, tie, 5, permutations=50, seed=0)
    fit = fit_bradley_terry(win_matrix(winner, loser, None, 5, tie=tie))
    assert kendalltau(ratings, fit.elo).statistic == pytest.approx(1.0)
    assert kendalltau(ratings, true).statistic == pytest.approx(1.0)
    assert np.argsort(-ratings).tolist() == [0, 2, 3, 4, 1]


def test_rejects_bad_arguments_with_the_fix() -> None:
    with pytest.raises(ValueError, match=r"k_factor must be a positive number, got 0\.0"):
        online_elo(np.array([0]), np.array([1]), None, 2, k_factor=0.0)
    with pytest.raises(ValueError, match="permutations must be zero or a positive integer"):
        online_elo(np.array([0]), np.array([1]), None, 2, permutations=-1)
    with pytest.raises(ValueError, match=r"system indices must lie in \[0, 1\]"):
        online_elo(np.array([0]), np.array([2]), None, 2)
    with pytest.raises(ValueError, match="tie must have one entry per comparison"):
        online_elo(np.array([0]), np.array([1]), np.array([True, False]), 2)


def test_without_numba_every_board_is_played_by_the_plain_loop(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    winner, loser, tie = simulate(np.array([0.8, 0.2, 0.0, -0.5, 0.4]), 500, seed=6)
    plain = online_elo(winner, loser, tie, 5, permutations=3, seed=2)
    monkeypatch.setitem(sys.modules, "heart.stats._online_elo_compiled", None)
    without = online_elo(winner, loser, tie, 5, permutations=3, seed=2, compiled_steps=1)
    assert without.tolist() == plain.tolist()


def test_the_compiled_loop_gives_the_plain_loops_ratings_to_the_bit() -> None:
    winner, loser, tie = simulate(np.array([0.8, 0.2, 0.0, -0.5, 0.4]), 3_000, seed=5)
    plain = online_elo(winner, loser, tie, 5, permutations=7, seed=11)
    compiled = online_elo(winner, loser, tie, 5, permutations=7, seed=11, compiled_steps=1)
    assert compiled.tolist() == plain.tolist()
    scores = np.where(tie, 0.5, 1.0)
    orders = np.stack([np.arange(3_000), np.arange(3_000)[::-1]]).astype(np.int32)
    each = compiled_ratings_along(winner, loser, scores, orders, 5, 16.0, 1000.0)
    assert each.tolist() == ratings_along(winner, loser, scores, orders, 5, 16.0, 1000.0).tolist()


def test_one_order_by_hand_is_what_the_compiled_loop_computes() -> None:
    """The plain loop over a hand-made sequence, against the compiled loop's result."""
    winner, loser = np.array([0, 2, 1, 0, 2, 1]), np.array([1, 0, 2, 2, 1, 0])
    tie = np.array([False, False, True, False, False, True])
    orders = np.random.Generator(np.random.PCG64(4)).permuted(np.tile(np.arange(6), (4, 1)), axis=1)
    total = np.zeros(3)
    for order in orders:
        r = [1500.0] * 3
        for a, b, t in zip(winner[order], loser[order], tie[order], strict=True):
            delta = 4.0 * ((0.5 if t else 1.0) - expected_score(r[a], r[b]))
            r[a], r[b] = r[a] + delta, r[b] - delta
        total += r
    compiled = online_elo(winner, loser, tie, 3, permutations=4, seed=4, compiled_steps=1)
    np.testing.assert_allclose(compiled, total / 4, rtol=0, atol=1e-12)
