"""Correlations across systems against scipy: Pearson's r with its Fisher z interval and p,
Spearman's ρ with its p and a bootstrap over systems checked round by round; the least-squares
line against scipy's linregress; quartiles by hand."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats

from heart.stats import (
    FISHER_Z,
    SYSTEM_BOOTSTRAP,
    conversation_draws,
    least_squares_line,
    median_and_quartiles,
    pearson_correlation,
    spearman_correlation,
    spearman_rounds,
)

# The paper's Table 1: HEART Elo, overall win rate (%) and the Artificial Analysis Intelligence
# Index of 15 models; the paper reports Pearson r = 0.70 between Elo and the index.
PAPER_ELO = [1611.8, 1587.5, 1561.8, 1552.7, 1540.9, 1539.1, 1531.8, 1504.0, 1495.9, 1477.7,
             1471.0, 1441.2, 1427.9, 1415.0, 1384.6]  # fmt: skip
PAPER_WIN = [85.9, 79.1, 69.6, 62.2, 62.9, 62.8, 59.4, 49.2, 48.5, 39.5, 45.2, 28.4, 25.1, 24.2,
             13.8]  # fmt: skip
PAPER_INDEX = [66, 65, 55, 48, 63, 42, 41, 42, 36, 60, 65, 36, 40, 28, 23]


def test_pearson_matches_scipy_and_reproduces_the_papers_r() -> None:
    r = pearson_correlation(np.array(PAPER_INDEX), np.array(PAPER_ELO), level=0.95)
    reference = stats.pearsonr(PAPER_INDEX, PAPER_ELO)
    ci = reference.confidence_interval(confidence_level=0.95)
    assert round(r.estimate, 2) == 0.70
    assert r.estimate == pytest.approx(reference.statistic, abs=1e-12)
    assert (r.low, r.high) == pytest.approx((ci.low, ci.high), abs=1e-12)
    assert r.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    assert (r.n, r.interval, r.method) == (15, FISHER_Z, "pearson")


@pytest.mark.parametrize("level", [0.8, 0.95])
def test_pearson_interval_matches_scipy_on_random_data(level: float) -> None:
    rng = np.random.default_rng(3)
    x = rng.normal(size=9)
    y = 0.5 * x + rng.normal(size=9)
    r = pearson_correlation(x, y, level=level)
    ci = stats.pearsonr(x, y).confidence_interval(confidence_level=level)
    assert (r.low, r.high) == pytest.approx((ci.low, ci.high), abs=1e-12)


def test_spearman_estimate_and_p_match_scipy_with_ties() -> None:
    x = np.array(PAPER_INDEX, dtype=float)  # 65, 42 and 36 are each shared by two models
    y = np.array(PAPER_WIN)
    rho = spearman_correlation(x, y, rounds=200, seed=1)
    reference = stats.spearmanr(x, y)
    assert rho.estimate == pytest.approx(reference.statistic, abs=1e-12)
    assert rho.p_value == pytest.approx(reference.pvalue, rel=1e-9)
    assert (rho.n, rho.interval, rho.rounds) == (15, SYSTEM_BOOTSTRAP, 200)


def test_each_bootstrap_round_is_scipys_rho_of_the_resampled_systems() -> None:
    x = np.array([3.0, 1.0, 4.0, 1.0, 5.0, 9.0, 2.0])
    y = np.array([10.0, 12.0, 11.0, 15.0, 14.0, 20.0, 12.0])
    counts = conversation_draws(len(x), rounds=60, seed=5)
    per_round = spearman_rounds(x, y, counts)
    for r, row in enumerate(counts):
        drawn = np.repeat(np.arange(len(x)), row.astype(int))
        xs, ys = x[drawn], y[drawn]
        if len(set(xs)) < 2 or len(set(ys)) < 2:
            assert math.isnan(per_round[r])
        else:
            assert per_round[r] == pytest.approx(stats.spearmanr(xs, ys).statistic, abs=1e-12)


def test_the_interval_is_the_percentile_of_the_rounds_that_are_defined() -> None:
    rng = np.random.default_rng(11)
    x = rng.normal(size=6)
    y = x + rng.normal(scale=0.8, size=6)
    rho = spearman_correlation(x, y, rounds=400, seed=9, level=0.9)
    per_round = spearman_rounds(x, y, conversation_draws(6, rounds=400, seed=9))
    defined = per_round[~np.isnan(per_round)]
    assert (rho.low, rho.high) == pytest.approx(tuple(np.percentile(defined, [5, 95])), abs=1e-12)
    assert rho.undefined_rounds == 400 - defined.size


def test_the_interval_agrees_with_scipys_paired_percentile_bootstrap() -> None:
    x = np.array(PAPER_INDEX, dtype=float)
    y = np.array(PAPER_ELO)
    rho = spearman_correlation(x, y, rounds=20_000, seed=2)

    def statistic(a: np.ndarray, b: np.ndarray) -> float:
        return float(stats.spearmanr(a, b).statistic)

    reference = stats.bootstrap(
        (x, y), statistic, paired=True, vectorized=False, n_resamples=4000, method="percentile",
        random_state=np.random.default_rng(2),
    ).confidence_interval  # fmt: skip
    assert rho.low == pytest.approx(reference.low, abs=0.04)
    assert rho.high == pytest.approx(reference.high, abs=0.04)


def test_too_few_or_constant_values_give_no_correlation() -> None:
    two = pearson_correlation(np.array([1.0, 2.0]), np.array([3.0, 5.0]))
    assert math.isnan(two.estimate) and math.isnan(two.p_value) and two.n == 2
    three = pearson_correlation(np.array([1.0, 2.0, 4.0]), np.array([3.0, 5.0, 4.0]))
    assert three.estimate == pytest.approx(stats.pearsonr([1, 2, 4], [3, 5, 4]).statistic)
    assert math.isnan(three.low) and math.isnan(three.high)  # Fisher z needs 4
    flat = spearman_correlation(np.array([1.0, 2.0, 3.0, 4.0]), np.full(4, 7.0), rounds=50)
    assert math.isnan(flat.estimate) and math.isnan(flat.low)
    short = spearman_correlation(np.array([1.0, 2.0]), np.array([2.0, 1.0]), rounds=50)
    assert math.isnan(short.estimate) and short.n == 2


def test_a_perfect_correlation_has_a_closed_interval_and_p_zero() -> None:
    x = np.array([1.0, 2.0, 3.0, 5.0, 8.0])
    r = pearson_correlation(x, 3 * x + 1)
    assert (r.estimate, r.low, r.high, r.p_value) == (1.0, 1.0, 1.0, 0.0)
    rho = spearman_correlation(x, -np.exp(x), rounds=100)
    assert (rho.estimate, rho.p_value) == (-1.0, 0.0)
    assert rho.high == -1.0


def test_mismatched_or_infinite_values_are_refused() -> None:
    with pytest.raises(ValueError, match="same length"):
        pearson_correlation(np.array([1.0, 2.0, 3.0]), np.array([1.0, 2.0]))
    with pytest.raises(ValueError, match="finite"):
        spearman_correlation(np.array([1.0, np.inf, 3.0]), np.array([1.0, 2.0, 3.0]))


def test_least_squares_line_matches_linregress() -> None:
    fit = stats.linregress(PAPER_INDEX, PAPER_ELO)
    slope, intercept = least_squares_line(np.array(PAPER_INDEX), np.array(PAPER_ELO))
    assert (slope, intercept) == pytest.approx((fit.slope, fit.intercept), abs=1e-9)
    flat = least_squares_line(np.array([2.0, 2.0]), np.array([1.0, 3.0]))
    assert all(math.isnan(v) for v in flat)


def test_median_and_quartiles_by_hand() -> None:
    # linear interpolation: the p-quantile sits at position (n - 1)·p of the sorted values
    assert median_and_quartiles(np.array([400.0, 100.0, 300.0, 200.0])) == (250.0, 175.0, 325.0)
    assert median_and_quartiles(np.array([120.0, 80.0, 100.0])) == (100.0, 90.0, 110.0)
    assert median_and_quartiles(np.array([42.0])) == (42.0, 42.0, 42.0)
    assert all(math.isnan(v) for v in median_and_quartiles(np.array([])))
