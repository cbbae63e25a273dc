"""Strategy use of a group of replies: rates, coverage, unique strategies, entropy (against
scipy), and the SD (against the standard library's population SD) and range of the rates."""

from __future__ import annotations

import statistics

import numpy as np
import pytest
from scipy.stats import entropy

from heart.stats import (
    coverage,
    mean_unique,
    rate_spread,
    strategy_diversity,
    usage_entropy,
    usage_rates,
)

# four replies, five strategies; strategy 4 is never used
USED = np.array(
    [
        [1, 1, 0, 0, 0],
        [1, 0, 1, 0, 0],
        [1, 0, 0, 1, 0],
        [0, 0, 0, 0, 0],
    ],
    dtype=bool,
)


def test_rates_coverage_and_unique_strategies_by_hand() -> None:
    assert usage_rates(USED).tolist() == [0.75, 0.25, 0.25, 0.25, 0.0]
    assert coverage(USED) == 4
    assert mean_unique(USED) == 6 / 4  # 2 + 2 + 2 + 0 strategies over four replies


def test_entropy_is_in_bits_over_the_share_of_uses() -> None:
    # uses 3, 1, 1, 1, 0 of 6: H = -(1/2 log2 1/2 + 3 · 1/6 log2 1/6)
    expected = 0.5 + 3 * (np.log2(6) / 6)
    assert usage_entropy(USED) == pytest.approx(expected, abs=1e-12)
    assert usage_entropy(USED) == pytest.approx(entropy([3, 1, 1, 1, 0], base=2), abs=1e-12)
    even = np.ones((3, 15), dtype=bool)
    assert usage_entropy(even) == pytest.approx(np.log2(15), abs=1e-12)
    only_one = np.zeros((3, 15), dtype=bool)
    only_one[:, 7] = True
    assert usage_entropy(only_one) == 0.0
    assert np.isnan(usage_entropy(np.zeros((3, 15), dtype=bool)))


def test_random_groups_match_scipy_and_the_population_sd() -> None:
    rng = np.random.default_rng(5)
    for _ in range(20):
        used = rng.random((rng.integers(1, 40), 15)) < rng.random(15)
        d = strategy_diversity(used)
        assert d.replies == used.shape[0] and d.strategies == 15
        assert d.entropy_bits == pytest.approx(entropy(used.sum(axis=0), base=2), abs=1e-12)
        points = [100 * used[:, s].mean() for s in range(15)]
        assert d.sd_points == pytest.approx(statistics.pstdev(points), abs=1e-9)
        assert d.range_points == pytest.approx(max(points) - min(points), abs=1e-9)
        assert d.uses.tolist() == used.sum(axis=0).tolist()
        assert d.coverage == sum(p > 0 for p in points)


def test_spread_is_in_percentage_points_and_not_the_sample_sd() -> None:
    sd, spread = rate_spread(np.array([0.1, 0.3]))
    assert sd == pytest.approx(10.0) and spread == pytest.approx(20.0)
    assert sd != pytest.approx(statistics.stdev([10.0, 30.0]))  # the sample SD is 14.1


def test_a_group_without_replies_has_no_figures() -> None:
    d = strategy_diversity(np.zeros((0, 15), dtype=bool))
    assert d.replies == 0 and d.coverage == 0
    assert all(np.isnan(x) for x in (d.mean_unique, d.entropy_bits, d.sd_points, d.range_points))
    assert np.isnan(d.rates).all()


def test_a_matrix_of_counts_is_refused() -> None:
    with pytest.raises(ValueError, match="boolean"):
        usage_rates(np.array([[1, 0]]))
    with pytest.raises(ValueError, match="matrix"):
        coverage(np.array([True, False]))
