"""Parallel analysis, maximum-likelihood factor analysis with oblimin, factor scores, Cronbach's α
and the conversation bootstrap, against statsmodels, scikit-learn, hand computations and data
simulated from a known factor model."""

from __future__ import annotations

import warnings

import numpy as np
import numpy.typing as npt
import pytest
from sklearn.decomposition import FactorAnalysis
from statsmodels.multivariate.factor import Factor
from statsmodels.multivariate.factor_rotation import rotate_factors

from heart.stats import (
    alpha_if_dropped,
    bootstrap_alpha_by_conversation,
    bootstrap_correlations_by_conversation,
    cronbach_alpha,
    factor_scores,
    fit_factor_analysis,
    max_factors,
    oblimin_rotation,
    parallel_analysis,
    random_correlation_eigenvalues,
    standardise,
)

Floats = npt.NDArray[np.float64]

ONE = np.array([[0.8], [0.7], [0.75], [0.6], [0.65]])
FIVE = np.array([[0.8, 0.0], [0.7, 0.0], [0.75, 0.0], [0.0, 0.8], [0.0, 0.7]])
TWO = np.array([[0.8, 0.0], [0.7, 0.0], [0.75, 0.0], [0.0, 0.8], [0.0, 0.7], [0.0, 0.6]])
"""Two factors, three variables each: with five variables a two-factor model has one degree of
freedom and its fits often end in Heywood cases, which would test the data, not the code."""
PHI = np.array([[1.0, 0.3], [0.3, 1.0]])


def simulate(loadings: Floats, phi: Floats, n: int, seed: int) -> Floats:
    """n observations of p variables from the factor model x = Λf + e with Corr(f) = Φ and
    unit-variance variables."""
    rng = np.random.default_rng(seed)
    m = loadings.shape[1]
    f = rng.multivariate_normal(np.zeros(m), phi, size=n)
    common = np.sum((loadings @ phi) * loadings, axis=1)
    noise = rng.normal(size=(n, loadings.shape[0])) * np.sqrt(1.0 - common)
    out: Floats = f @ loadings.T + noise
    return out


def correlation(x: Floats) -> Floats:
    return np.asarray(np.corrcoef(x, rowvar=False))


def match_columns(found: Floats, truth: Floats) -> Floats:
    """``found``'s columns reordered and signed to line up with ``truth``'s."""
    out = np.zeros_like(truth)
    for j in range(truth.shape[1]):
        scores = [abs(float(found[:, i] @ truth[:, j])) for i in range(found.shape[1])]
        i = int(np.argmax(scores))
        out[:, j] = found[:, i] * np.sign(found[:, i] @ truth[:, j])
    return out


# --- parallel analysis ---------------------------------------------------------------------


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parallel_analysis_finds_one_factor_in_one_factor_data(seed: int) -> None:
    pa = parallel_analysis(simulate(ONE, np.eye(1), 500, seed), seed=seed)
    assert pa.factors == 1
    assert pa.eigenvalues[0] > pa.thresholds[0] and pa.eigenvalues[1] < pa.thresholds[1]


@pytest.mark.parametrize("seed", [0, 1, 2])
def test_parallel_analysis_finds_two_factors_in_two_factor_data(seed: int) -> None:
    assert parallel_analysis(simulate(FIVE, PHI, 500, seed), seed=seed).factors == 2
    assert parallel_analysis(simulate(TWO, PHI, 500, seed), seed=seed).factors == 2


def test_parallel_analysis_finds_no_factor_in_noise() -> None:
    found = [
        parallel_analysis(np.random.default_rng(s).normal(size=(300, 5)), seed=s).factors
        for s in range(20)
    ]
    assert sum(found) <= 3  # the 95th percentile: about one false factor in twenty


def test_parallel_analysis_is_seeded_and_reports_its_settings() -> None:
    x = simulate(ONE, np.eye(1), 200, 0)
    first = parallel_analysis(x, seed=7, draws=300, percentile=90.0)
    again = parallel_analysis(x, seed=7, draws=300, percentile=90.0)
    np.testing.assert_array_equal(first.thresholds, again.thresholds)
    assert (first.draws, first.percentile, first.observations) == (300, 90.0, 200)
    np.testing.assert_allclose(
        first.eigenvalues, np.sort(np.linalg.eigvalsh(correlation(x)))[::-1], atol=1e-12
    )
    assert first.eigenvalues.sum() == pytest.approx(5.0)


def test_random_eigenvalues_have_the_distribution_of_simulated_data() -> None:
    """The Wishart shortcut against brute force: correlation matrices of normal data."""
    n, p, draws = 40, 5, 4000
    fast = random_correlation_eigenvalues(n, p, draws=draws, seed=1)
    rng = np.random.default_rng(2)
    data = rng.normal(size=(draws, n, p))
    slow = np.stack([np.sort(np.linalg.eigvalsh(correlation(d)))[::-1] for d in data])
    np.testing.assert_allclose(fast.mean(axis=0), slow.mean(axis=0), atol=0.02)
    np.testing.assert_allclose(
        np.percentile(fast, 95, axis=0), np.percentile(slow, 95, axis=0), atol=0.05
    )
    np.testing.assert_allclose(fast.sum(axis=1), p)


# --- the factor model ----------------------------------------------------------------------


def test_max_factors_follows_the_degrees_of_freedom() -> None:
    assert [max_factors(p) for p in (3, 4, 5, 6, 10)] == [1, 1, 2, 3, 6]


@pytest.mark.parametrize(("truth", "phi"), [(ONE, np.eye(1)), (TWO, PHI)])
def test_ml_fit_matches_statsmodels(truth: Floats, phi: Floats) -> None:
    x = simulate(truth, phi, 1500, 3)
    m = truth.shape[1]
    ours = fit_factor_analysis(correlation(x), m)
    reference = Factor(x, m, method="ml").fit()
    np.testing.assert_allclose(ours.uniquenesses, reference.uniqueness, atol=1e-5)
    if m > 1:
        reference.rotate("oblimin")
    np.testing.assert_allclose(
        match_columns(ours.loadings, truth), match_columns(reference.loadings, truth), atol=1e-4
    )
    assert ours.converged and not ours.heywood


@pytest.mark.parametrize(("truth", "phi"), [(ONE, np.eye(1)), (TWO, PHI)])
def test_ml_fit_matches_scikit_learn(truth: Floats, phi: Floats) -> None:
    x = simulate(truth, phi, 1500, 4)
    m = truth.shape[1]
    ours = fit_factor_analysis(correlation(x), m)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        reference = FactorAnalysis(m, tol=1e-12, max_iter=100_000).fit(standardise(x))
    # scikit-learn fits the covariance with divisor n, the correlation has n − 1
    scale = (len(x) - 1) / len(x)
    np.testing.assert_allclose(ours.uniquenesses, reference.noise_variance_ / scale, atol=2e-3)
    np.testing.assert_allclose(
        ours.loadings @ ours.factor_correlation @ ours.loadings.T,
        reference.components_.T @ reference.components_ / scale,
        atol=2e-3,
    )


def test_oblimin_matches_statsmodels_quartimin() -> None:
    x = simulate(TWO, PHI, 800, 5)
    unrotated = Factor(x, 2, method="ml").fit().loadings_no_rot
    ours, phi, converged = oblimin_rotation(unrotated)
    theirs, t = rotate_factors(unrotated, "quartimin", tol=1e-10)
    assert converged
    np.testing.assert_allclose(ours, theirs, atol=1e-6)
    np.testing.assert_allclose(phi, t.T @ t, atol=1e-6)
    # an oblique rotation keeps the fitted correlations: Λ Φ Λ' = A A'
    np.testing.assert_allclose(ours @ phi @ ours.T, unrotated @ unrotated.T, atol=1e-10)


@pytest.mark.parametrize(("truth", "phi"), [(ONE, np.eye(1)), (TWO, PHI)])
def test_loadings_recover_the_simulated_pattern(truth: Floats, phi: Floats) -> None:
    x = simulate(truth, phi, 6000, 6)
    fit = fit_factor_analysis(correlation(x), truth.shape[1])
    # order by explained variance and positive signs: the truth's order already
    np.testing.assert_allclose(fit.loadings, truth, atol=0.05)
    np.testing.assert_allclose(fit.factor_correlation, phi, atol=0.06)
    common = np.sum((truth @ phi) * truth, axis=1)
    np.testing.assert_allclose(fit.communalities, common, atol=0.05)


def test_factors_are_ordered_and_signed() -> None:
    x = -simulate(TWO[:, ::-1], PHI, 2000, 7)
    fit = fit_factor_analysis(correlation(x), 2)
    squares = (fit.loadings**2).sum(axis=0)
    assert squares[0] >= squares[1]
    assert np.all(fit.loadings.sum(axis=0) > 0)
    assert fit.rotation == "oblimin"


def test_regression_scores_match_statsmodels() -> None:
    x = simulate(ONE, np.eye(1), 400, 8)
    fit = fit_factor_analysis(correlation(x), 1)
    reference = Factor(x, 1, method="ml").fit()
    theirs = reference.factor_scoring(method="regression")
    ours = factor_scores(standardise(x), correlation(x), fit)
    np.testing.assert_allclose(ours, theirs * np.sign(theirs[:, 0] @ ours[:, 0]), atol=1e-4)


def test_oblique_regression_scores_are_the_least_squares_prediction() -> None:
    """Thurstone's scores: the weights W = R⁻¹ S solve the regression of the factors on the
    variables, whose cross-covariances are the structure S = ΛΦ."""
    x = simulate(TWO, PHI, 1000, 9)
    r = correlation(x)
    fit = fit_factor_analysis(r, 2)
    z = standardise(x)
    scores = factor_scores(z, r, fit)
    np.testing.assert_allclose(z.T @ scores / (len(z) - 1), fit.structure, atol=1e-10)


def test_a_singular_matrix_or_too_many_factors_are_refused() -> None:
    x = simulate(ONE, np.eye(1), 100, 0)
    r = correlation(np.column_stack([x, x[:, 0]]))
    with pytest.raises(ValueError, match="singular"):
        fit_factor_analysis(r, 1)
    with pytest.raises(ValueError, match=r"factors must lie in \[1, 2\] for 5 variables"):
        fit_factor_analysis(correlation(x), 3)


def test_a_heywood_case_is_flagged() -> None:
    """Two variables on the second factor leave a five-variable, two-factor fit one degree of
    freedom: this sample drives a uniqueness to its bound, as statsmodels' fit does too."""
    x = simulate(FIVE, PHI, 1500, 3)
    fit = fit_factor_analysis(correlation(x), 2)
    assert fit.heywood and fit.uniquenesses.min() == pytest.approx(0.005)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # statsmodels warns that its fit did not converge
        assert Factor(x, 2, method="ml").fit().uniqueness.min() < 0.005


# --- Cronbach's α --------------------------------------------------------------------------


def test_cronbach_alpha_matches_a_hand_computation() -> None:
    # three items, five people. Item variances (n − 1): 0.7, 0.8, 0.7, so Σ = 2.2; row sums
    # 10, 9, 13, 8, 12 have variance 17.2 / 4 = 4.3. α = 3/2 · (1 − 2.2/4.3) = 63/86.
    scores = np.array([[3, 4, 3], [2, 3, 4], [4, 4, 5], [3, 2, 3], [4, 4, 4]], dtype=float)
    assert cronbach_alpha(scores) == pytest.approx(63 / 86, abs=1e-12)


def test_standardised_alpha_is_the_spearman_brown_form() -> None:
    """On z-scores α = k·r̄ / (1 + (k − 1)·r̄), r̄ the mean correlation between items: for k
    parallel items with correlation ρ, the reliability of their sum."""
    x = simulate(ONE, np.eye(1), 300, 10)
    r = correlation(x)
    k = 5
    mean_r = (r.sum() - k) / (k * (k - 1))
    assert cronbach_alpha(standardise(x)) == pytest.approx(
        k * mean_r / (1 + (k - 1) * mean_r), abs=1e-12
    )
    parallel = simulate(np.full((k, 1), np.sqrt(0.5)), np.eye(1), 200_000, 11)
    assert cronbach_alpha(parallel) == pytest.approx(k * 0.5 / (1 + (k - 1) * 0.5), abs=0.01)


def test_alpha_if_dropped_is_alpha_of_the_other_items() -> None:
    x = simulate(TWO, PHI, 300, 12)
    dropped = alpha_if_dropped(x)
    for i in range(6):
        assert dropped[i] == pytest.approx(cronbach_alpha(np.delete(x, i, axis=1)), abs=1e-12)
    assert np.isnan(alpha_if_dropped(x[:, :2])).all()


def test_a_column_with_no_spread_has_no_z_scores() -> None:
    with pytest.raises(ValueError, match=r"columns \[1\] have no spread"):
        standardise(np.array([[1.0, 2.0], [2.0, 2.0], [3.0, 2.0]]))


# --- intervals from resampling conversations -----------------------------------------------


def _draws(
    conversation: npt.NDArray[np.int64], rounds: int, seed: int
) -> list[npt.NDArray[np.int64]]:
    """The rows of each round, drawn as the functions draw them: multinomial counts over
    conversations from PCG64(seed), each conversation's rows repeated by its count."""
    c = int(conversation.max()) + 1
    rng = np.random.Generator(np.random.PCG64(seed))
    counts = rng.multinomial(c, np.full(c, 1.0 / c), size=rounds)
    return [np.repeat(np.arange(len(conversation)), row[conversation]) for row in counts]


def test_bootstrap_correlations_equal_a_loop_over_resampled_rows() -> None:
    rng = np.random.default_rng(13)
    conversation = rng.integers(0, 15, 120)
    x = rng.normal(size=(120, 2))
    y = x[:, 0] + rng.normal(size=120) + 0.3 * conversation
    r, low, high = bootstrap_correlations_by_conversation(
        x, y, conversation, rounds=200, seed=4, level=0.9
    )
    np.testing.assert_allclose(r, [np.corrcoef(x[:, j], y)[0, 1] for j in range(2)], atol=1e-12)
    loop = np.array(
        [
            [np.corrcoef(x[rows, j], y[rows])[0, 1] for j in range(2)]
            for rows in _draws(conversation, 200, 4)
        ]
    )
    np.testing.assert_allclose(low, np.percentile(loop, 5, axis=0), atol=1e-10)
    np.testing.assert_allclose(high, np.percentile(loop, 95, axis=0), atol=1e-10)


def test_bootstrap_alpha_equals_a_loop_over_resampled_rows() -> None:
    x = simulate(ONE, np.eye(1), 150, 14)
    conversation = np.random.default_rng(15).integers(0, 30, 150)
    low, high = bootstrap_alpha_by_conversation(x, conversation, rounds=200, seed=5)
    loop = [cronbach_alpha(x[rows]) for rows in _draws(conversation, 200, 5)]
    assert (low, high) == pytest.approx(tuple(np.percentile(loop, [2.5, 97.5])), abs=1e-10)
    assert low < cronbach_alpha(x) < high


def test_bootstrap_correlation_of_a_constant_is_nan() -> None:
    conversation = np.arange(10)
    r, low, high = bootstrap_correlations_by_conversation(
        np.ones((10, 1)), np.arange(10.0), conversation, rounds=20
    )
    assert np.isnan(r).all() and np.isnan(low).all() and np.isnan(high).all()
