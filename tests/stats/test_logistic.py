"""Logistic regression against statsmodels (coefficients, model-based and cluster-robust standard
errors, intervals, p-values), a known effect recovered from simulated data, and separation."""

from __future__ import annotations

import numpy as np
import pytest
import statsmodels.api as sm

from heart.stats import fit_logistic


def _simulated(n: int, seed: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Log-odds 0.8 + 0.5·x − 0.6·shown, with conversations sharing a random bump."""
    rng = np.random.default_rng(seed)
    clusters = rng.integers(0, 60, n)
    bump = rng.normal(0, 0.3, 60)[clusters]
    x = rng.normal(size=n)
    shown = rng.integers(0, 2, n) - 0.5
    p = 1 / (1 + np.exp(-(0.8 + 0.5 * x - 0.6 * shown + bump)))
    y = (rng.random(n) < p).astype(float)
    return np.column_stack([np.ones(n), x, shown]), y, clusters


def test_fit_matches_statsmodels() -> None:
    design, y, clusters = _simulated(800, 1)
    ours = fit_logistic(design, y)
    theirs = sm.Logit(y, design).fit(disp=0)
    assert ours.coef == pytest.approx(theirs.params, rel=1e-8)
    assert ours.se == pytest.approx(theirs.bse, rel=1e-6)
    assert ours.low == pytest.approx(theirs.conf_int()[:, 0], rel=1e-6)
    assert ours.high == pytest.approx(theirs.conf_int()[:, 1], rel=1e-6)
    assert ours.p_value == pytest.approx(theirs.pvalues, rel=1e-5)
    robust = fit_logistic(design, y, clusters=clusters)
    theirs = sm.Logit(y, design).fit(disp=0, cov_type="cluster", cov_kwds={"groups": clusters})
    assert robust.se == pytest.approx(theirs.bse, rel=1e-6)
    assert robust.clusters == 60 and not robust.separated


def test_a_known_effect_is_recovered_within_its_interval() -> None:
    design, y, clusters = _simulated(6000, 2)
    fit = fit_logistic(design, y, clusters=clusters)
    for k, truth in enumerate((0.8, 0.5, -0.6)):
        assert fit.low[k] < truth < fit.high[k]
    assert fit.p_value[1] < 1e-6


def test_separated_outcomes_give_no_estimate() -> None:
    x = np.arange(10.0)
    fit = fit_logistic(np.column_stack([np.ones(10), x]), (x > 4.5).astype(float))
    assert fit.separated and np.isnan(fit.coef).all()


def test_a_design_that_cannot_be_fitted_is_refused() -> None:
    with pytest.raises(ValueError, match="not independent"):
        fit_logistic(np.ones((5, 2)), [0, 1, 0, 1, 1])
    with pytest.raises(ValueError, match="zeros and ones"):
        fit_logistic(np.column_stack([np.ones(4), np.arange(4.0)]), [0, 2, 1, 0])
