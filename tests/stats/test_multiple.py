"""Benjamini–Hochberg adjustment."""

from __future__ import annotations

import numpy as np
import pytest
from statsmodels.stats.multitest import multipletests

from heart.stats._multiple import benjamini_hochberg, bonferroni_level


def test_hand_example_adjusts_and_rejects_by_the_step_up_rule() -> None:
    p = np.array([0.01, 0.04, 0.03, 0.2])
    adjusted, rejected = benjamini_hochberg(p, alpha=0.05)
    # sorted 0.01, 0.03, 0.04, 0.2 -> ×4/k = 0.04, 0.06, 0.0533, 0.2 -> running min from the top
    np.testing.assert_allclose(adjusted, [0.04, 0.16 / 3, 0.16 / 3, 0.2], rtol=1e-15)
    assert rejected.tolist() == [True, False, False, False]


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("alpha", [0.01, 0.05, 0.2])
def test_matches_statsmodels_fdr_bh_on_random_pvalues_with_ties(seed: int, alpha: float) -> None:
    rng = np.random.default_rng(seed)
    p = np.concatenate([rng.random(30) ** 3, rng.random(20) * 0.05])
    p = np.round(p, 3)  # rounding creates many ties
    assert np.unique(p).size < p.size
    rng.shuffle(p)
    adjusted, rejected = benjamini_hochberg(p, alpha)
    reject_sm, adjusted_sm, _, _ = multipletests(p, alpha=alpha, method="fdr_bh")
    np.testing.assert_allclose(adjusted, adjusted_sm, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(rejected, reject_sm)


def test_nan_pvalues_stay_nan_are_not_rejected_and_do_not_count() -> None:
    rng = np.random.default_rng(3)
    p = rng.random(25) ** 4
    p[[2, 7, 19]] = np.nan
    adjusted, rejected = benjamini_hochberg(p, 0.1)
    known = ~np.isnan(p)
    assert np.isnan(adjusted[~known]).all() and not rejected[~known].any()
    reject_sm, adjusted_sm, _, _ = multipletests(p[known], alpha=0.1, method="fdr_bh")
    np.testing.assert_allclose(adjusted[known], adjusted_sm, rtol=1e-12, atol=0)
    np.testing.assert_array_equal(rejected[known], reject_sm)
    # m counts only the 22 known p-values: the largest one is adjusted to itself
    assert adjusted[known].max() == pytest.approx(np.nanmax(p))


def test_all_nan_or_empty_input_rejects_nothing() -> None:
    adjusted, rejected = benjamini_hochberg(np.array([np.nan, np.nan]))
    assert np.isnan(adjusted).all() and rejected.tolist() == [False, False]
    adjusted, rejected = benjamini_hochberg(np.array([]))
    assert adjusted.shape == (0,) and rejected.shape == (0,)


def test_keeps_the_input_shape_and_never_exceeds_one() -> None:
    p = np.array([[0.9, 0.001], [0.95, 0.5]])
    adjusted, rejected = benjamini_hochberg(p)
    assert adjusted.shape == (2, 2) and rejected.shape == (2, 2)
    # sorted 0.001, 0.5, 0.9, 0.95 -> ×4/k = 0.004, 1.0, 1.2, 0.95 -> running min from the top
    np.testing.assert_allclose(adjusted, [[0.95, 0.004], [0.95, 0.95]])
    assert rejected.tolist() == [[False, True], [False, False]]
    assert benjamini_hochberg(np.array([1.0, 1.0]))[0].tolist() == [1.0, 1.0]


def test_rejects_out_of_range_pvalues_and_alpha() -> None:
    with pytest.raises(ValueError, match=r"p-values must lie in \[0, 1\]"):
        benjamini_hochberg(np.array([0.2, 1.5]))
    with pytest.raises(ValueError, match=r"p-values must lie in \[0, 1\]"):
        benjamini_hochberg(np.array([0.2, np.inf]))
    with pytest.raises(ValueError, match="alpha must lie strictly between 0 and 1, got 0"):
        benjamini_hochberg(np.array([0.2]), alpha=0.0)


def test_bonferroni_level_splits_the_error_among_the_tests() -> None:
    assert bonferroni_level(0.95, 1) == pytest.approx(0.95)
    assert bonferroni_level(0.95, 6) == pytest.approx(1 - 0.05 / 6)
    assert bonferroni_level(0.9, 4) == pytest.approx(0.975)
    with pytest.raises(ValueError, match="tests must be a positive integer"):
        bonferroni_level(0.95, 0)


def test_bonferroni_level_agrees_with_statsmodels() -> None:
    p = np.array([0.004, 0.03, 0.2])
    rejected, _, _, alpha_bonf = multipletests(p, alpha=0.05, method="bonferroni")
    assert 1 - bonferroni_level(0.95, 3) == pytest.approx(alpha_bonf)
    assert list(rejected) == list(p <= 1 - bonferroni_level(0.95, 3))
