"""Pairwise Elo differences from bootstrap replicates."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from heart.stats._differences import EloDifference, elo_differences

D01 = np.array([-20.0, 0.0, 10.0, 20.0, 30.0, 40.0, 50.0, 60.0, 70.0, 80.0])
WIGGLE = np.array([-5.0, 5.0] * 5)


def hand_rounds() -> np.ndarray:
    """Ten rounds of three systems; system 2 sits far below, 0 is above 1 in 8 rounds of 10."""
    rounds = np.empty((10, 3))
    rounds[:, 1] = 1500.0
    rounds[:, 0] = 1500.0 + D01
    rounds[:, 2] = 1300.0 + WIGGLE
    return rounds


def test_one_entry_per_pair_in_order_with_the_point_difference() -> None:
    result = elo_differences(np.array([1600.0, 1500.0, 1300.0]), hand_rounds())
    assert [(d.i, d.j) for d in result] == [(0, 1), (0, 2), (1, 2)]
    assert [d.difference for d in result] == [100.0, 300.0, 200.0]
    assert all(isinstance(d, EloDifference) for d in result)


def test_hand_built_replicates_give_known_p_values_and_intervals() -> None:
    rounds = hand_rounds()
    d01, d02, d12 = elo_differences(np.array([1600.0, 1500.0, 1300.0]), rounds)
    # d ≤ 0 in 2 of 10 rounds (−20 and 0), d ≥ 0 in 9: p = 2·0.2
    assert d01.p_value == pytest.approx(0.4)
    assert d02.p_value == 0.0 and d12.p_value == 0.0
    # BH over the three: sorted 0, 0, 0.4 -> 0·3/1, 0·3/2, 0.4·3/3
    assert [d01.p_adjusted, d02.p_adjusted, d12.p_adjusted] == pytest.approx([0.4, 0.0, 0.0])
    assert [d01.significant, d02.significant, d12.significant] == [False, True, True]
    assert (d01.low, d01.high) == pytest.approx(tuple(np.percentile(D01, [2.5, 97.5])))
    assert (d12.low, d12.high) == pytest.approx(tuple(np.percentile(200.0 - WIGGLE, [2.5, 97.5])))
    assert d01.low == pytest.approx(-20.0 + 0.225 * 20.0)


def test_rounds_with_a_missing_system_are_skipped_for_its_pairs_only() -> None:
    rounds = np.vstack([hand_rounds(), [[1470.0, 1500.0, np.nan]]])
    d01, d02, d12 = elo_differences(np.array([1600.0, 1500.0, 1300.0]), rounds, level=0.9)
    # the extra round counts for (0, 1): d ≤ 0 now in 3 of 11
    assert d01.p_value == pytest.approx(6.0 / 11.0)
    assert (d01.low, d01.high) == pytest.approx(
        tuple(np.percentile(np.append(D01, -30.0), [5.0, 95.0]))
    )
    # and not for (0, 2) or (1, 2)
    assert d02.p_value == 0.0
    assert (d12.low, d12.high) == pytest.approx(tuple(np.percentile(200.0 - WIGGLE, [5.0, 95.0])))


def test_exact_zero_differences_give_p_one() -> None:
    rounds = np.full((5, 2), 1500.0)
    (d,) = elo_differences(np.array([1500.0, 1500.0]), rounds)
    assert d.p_value == 1.0 and d.p_adjusted == 1.0 and not d.significant
    assert (d.low, d.high) == (0.0, 0.0)


def test_a_pair_never_seen_together_gets_nan_and_is_not_significant() -> None:
    rounds = np.array([[1500.0, np.nan, 1400.0], [np.nan, 1500.0, 1400.0]] * 3)
    d01, d02, d12 = elo_differences(np.array([1550.0, 1550.0, 1400.0]), rounds)
    assert np.isnan(d01.p_value) and np.isnan(d01.p_adjusted) and not d01.significant
    assert np.isnan(d01.low) and np.isnan(d01.high)
    # the NaN pair is not part of the BH family: m = 2
    assert d02.p_value == 0.0 and d12.p_value == 0.0 and d02.significant


def test_benjamini_hochberg_runs_across_the_whole_family() -> None:
    rng = np.random.default_rng(4)
    true = np.array([1560.0, 1540.0, 1520.0, 1505.0, 1500.0, 1480.0, 1395.0])
    rounds = true + rng.normal(0.0, 25.0, size=(400, 7))
    rounds[rng.random(rounds.shape) < 0.02] = np.nan
    result = elo_differences(rounds.mean(axis=0), rounds, alpha=0.05)
    assert len(result) == 21
    p = np.array([d.p_value for d in result])
    reject_sm, adjusted_sm, _, _ = multipletests(p, alpha=0.05, method="fdr_bh")
    np.testing.assert_allclose([d.p_adjusted for d in result], adjusted_sm, rtol=1e-12)
    assert [d.significant for d in result] == (adjusted_sm < 0.05).tolist()
    assert 0 < sum(d.significant for d in result) < 21
    assert reject_sm.sum() == sum(d.significant for d in result)
    # a raw p-value from the bootstrap: pair (0, 1), share of rounds with d ≤ 0 doubled
    d = rounds[:, 0] - rounds[:, 1]
    d = d[np.isfinite(d)]
    share = min((d <= 0).mean(), (d >= 0).mean())
    assert result[0].p_value == pytest.approx(min(1.0, 2.0 * share))


def test_rejects_mismatched_shapes_and_bad_levels() -> None:
    with pytest.raises(ValueError, match=r"elo_rounds must have shape \(R, 3\), got \(4, 2\)"):
        elo_differences(np.zeros(3), np.zeros((4, 2)))
    with pytest.raises(ValueError, match="level must lie strictly between 0 and 1"):
        elo_differences(np.zeros(3), np.zeros((4, 3)), level=1.0)
    with pytest.raises(ValueError, match="alpha must lie strictly between 0 and 1"):
        elo_differences(np.zeros(3), np.zeros((4, 3)), alpha=1.5)
    assert elo_differences(np.array([1500.0]), np.full((3, 1), 1500.0)) == []
