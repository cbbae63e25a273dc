"""The small-sample correction, Arena's tied ranks, and Elo anchored on some systems."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy.stats import norm
from scipy.stats import t as student_t

from heart.stats import (
    bootstrap_by_conversation,
    clearly_above,
    cluster_robust_interval,
    elo_from_theta,
    few_conversations_factor,
    fit_bradley_terry,
    paper_interval,
    tied_ranks,
    widen,
)


def test_the_factor_is_t_over_z_with_the_cluster_correction() -> None:
    factor = few_conversations_factor(np.asarray([0, 1, 2, 5, 30, 10_000]))
    assert math.isnan(factor[0]) and math.isnan(factor[1])
    for c, f in zip([2, 5, 30], factor[2:5], strict=True):
        assert f == pytest.approx(math.sqrt(c / (c - 1)) * student_t.ppf(0.975, c - 1) / 1.959964)
    assert factor[2] == pytest.approx(9.1682, abs=1e-4)  # sqrt(2)·12.7062/1.95996
    assert factor[-1] == pytest.approx(1.0, abs=1e-3)  # many conversations: no change
    at_90 = few_conversations_factor(np.asarray([10]), level=0.90)[0]
    assert at_90 == pytest.approx(math.sqrt(10 / 9) * student_t.ppf(0.95, 9) / norm.ppf(0.95))


def test_widen_stretches_each_side_from_the_estimate() -> None:
    low, high = widen(np.asarray([10.0]), np.asarray([8.0]), np.asarray([13.0]), np.asarray([2.0]))
    assert (low[0], high[0]) == (6.0, 16.0)  # asymmetric sides keep their shape


def test_ranks_count_the_intervals_wholly_above() -> None:
    low = np.asarray([100.0, 90.0, 50.0, 40.0, np.nan, 0.0])
    high = np.asarray([120.0, 110.0, 95.0, 60.0, np.nan, 30.0])
    # 0 and 1 overlap; 2 lies under 0 only; 3 under 0 and 1 (it overlaps 2); 5 under all four
    above = clearly_above(low, high)
    assert above[0, 2] and not above[1, 2] and not above[0, 1]
    assert not above[:, 4].any() and not above[4].any()  # no interval: never above or below
    assert tied_ranks(low, high).tolist() == [1, 1, 2, 3, 0, 5]


def test_anchored_elo_centres_on_the_anchor_only() -> None:
    theta = np.asarray([0.5, -0.5, 3.0])
    anchor = np.asarray([True, True, False])
    elo = elo_from_theta(theta, anchor)
    assert elo[:2].mean() == pytest.approx(1500.0)
    assert elo[2] - elo[0] == pytest.approx(400 * 2.5 / math.log(10))
    np.testing.assert_allclose(elo_from_theta(theta, np.ones(3, dtype=bool)), elo_from_theta(theta))
    with pytest.raises(ValueError, match="at least one"):
        elo_from_theta(theta, np.zeros(3, dtype=bool))


def _wins(conversations: int, present_2: set[int]) -> np.ndarray:
    rng = np.random.default_rng(4)
    w = np.zeros((conversations, 3, 3))
    for c in range(conversations):
        w[c, 0, 1] = 3 + rng.integers(0, 3)
        w[c, 1, 0] = 1 + rng.integers(0, 3)
        if c in present_2:
            w[c, 2, 0] = 2 + rng.integers(0, 2)
            w[c, 0, 2] = 1
            w[c, 1, 2] = 2
            w[c, 2, 1] = 1
    return w


def test_a_round_that_leaves_a_system_out_does_not_move_the_others() -> None:
    boot = bootstrap_by_conversation(_wins(8, {0}), rounds=300, seed=2)
    absent = np.isnan(boot.elo_rounds[:, 2])
    assert absent.any() and (~absent).any()
    # rounds without system 2 centre on the two present systems
    np.testing.assert_allclose(boot.elo_rounds[absent, :2].mean(axis=1), 1500.0)
    np.testing.assert_allclose(boot.elo_rounds[~absent].mean(axis=1), 1500.0)


def test_an_anchored_bootstrap_centres_each_round_on_the_anchor() -> None:
    anchor = np.asarray([True, True, False])
    boot = bootstrap_by_conversation(_wins(8, {0, 1, 2}), rounds=300, seed=2, anchor=anchor)
    np.testing.assert_allclose(boot.elo_rounds[:, :2].mean(axis=1), 1500.0)


def test_the_robust_interval_of_an_anchored_scale() -> None:
    w = _wins(10, set(range(10)))
    theta = fit_bradley_terry(w.sum(axis=0)).theta
    plain = cluster_robust_interval(theta, w)
    everyone = cluster_robust_interval(theta, w, anchor=np.ones(3, dtype=bool))
    for x, y in zip(plain, everyone, strict=True):
        np.testing.assert_allclose(x, y)
    low, _, se = cluster_robust_interval(theta, w, anchor=np.asarray([True, False, False]))
    # anchored on system 0 alone, its Elo is 1500 by definition, with no spread of its own
    assert se[0] == pytest.approx(0.0, abs=1e-9) and low[0] == pytest.approx(1500.0)
    assert se[1] > 0 and se[2] > 0
    p_low, p_high = paper_interval(
        theta, np.asarray([30, 30, 30]), anchor=np.asarray([True, False, False])
    )
    assert (p_low[0] + p_high[0]) / 2 == pytest.approx(1500.0)
