"""Cluster-robust (sandwich) Elo interval, checked against statsmodels."""

from __future__ import annotations

import math

import numpy as np
import numpy.typing as npt
import pytest
import statsmodels.api as sm
from scipy.special import expit
from scipy.stats import norm

from heart.stats import ELO_SCALE, elo_from_theta, fit_bradley_terry
from heart.stats._cluster import cluster_robust_interval

FloatArray = npt.NDArray[np.float64]

TRUE_5 = np.array([0.7, 0.3, 0.0, -0.2, -0.8])


def simulate_conversations(
    true_theta: FloatArray, conversations: int, per_conversation: int, seed: int
) -> FloatArray:
    """(C, K, K) win matrices with integer strengths 1–5 and a conversation-level shock.

    Each conversation nudges every system's strength by N(0, 0.5²), so outcomes within a
    conversation are correlated.
    """
    rng = np.random.default_rng(seed)
    k = true_theta.size
    out = np.zeros((conversations, k, k))
    for c in range(conversations):
        shifted = true_theta + rng.normal(0.0, 0.5, k)
        a = rng.integers(0, k, per_conversation)
        b = (a + rng.integers(1, k, per_conversation)) % k
        a_wins = rng.random(per_conversation) < expit(shifted[a] - shifted[b])
        strength = rng.integers(1, 6, per_conversation).astype(np.float64)
        np.add.at(out[c], (np.where(a_wins, a, b), np.where(a_wins, b, a)), strength)
    return out


def statsmodels_se(
    per_conv: FloatArray, cov_type: str, weighting: str
) -> tuple[FloatArray, FloatArray]:
    """Centred θ and Elo SE from a weighted logistic GLM with system 0 as the reference.

    One row per non-empty cell (c, i, j); the row compares min(i, j) with max(i, j) and its
    outcome is 1 when the lower index won. ``weighting``: "freq" or "var" passes W_c[i, j] as
    statsmodels' freq_weights or var_weights; "replicate" repeats the row W_c[i, j] times
    (integer strengths only).
    """
    c_idx, i_idx, j_idx = np.nonzero(per_conv)
    weight = per_conv[c_idx, i_idx, j_idx]
    if weighting == "replicate":
        times = weight.astype(np.int64)
        assert np.array_equal(times, weight)
        c_idx, i_idx, j_idx = (np.repeat(v, times) for v in (c_idx, i_idx, j_idx))
    k = per_conv.shape[1]
    rows = np.arange(c_idx.size)
    x = np.zeros((c_idx.size, k))
    x[rows, np.minimum(i_idx, j_idx)] = 1.0
    x[rows, np.maximum(i_idx, j_idx)] = -1.0
    y = (i_idx < j_idx).astype(np.float64)
    weights = {"freq": {"freq_weights": weight}, "var": {"var_weights": weight}}
    model = sm.GLM(y, x[:, 1:], family=sm.families.Binomial(), **weights.get(weighting, {}))
    if cov_type == "cluster":
        kwds = {"groups": c_idx, "use_correction": False, "df_correction": False}
        res = model.fit(tol=1e-13, cov_type="cluster", cov_kwds=kwds)
    else:
        res = model.fit(tol=1e-13, cov_type=cov_type)
    # θ = (0, β) centred: θ_centred = A β
    a = (np.eye(k) - 1.0 / k) @ np.vstack([np.zeros(k - 1), np.eye(k - 1)])
    cov = a @ np.asarray(res.cov_params()) @ a.T
    return a @ np.asarray(res.params), ELO_SCALE * np.sqrt(np.diag(cov))


def model_based_se(theta: FloatArray, wins: FloatArray) -> FloatArray:
    """Elo SE from the inverse information alone (Laplacian pseudo-inverse)."""
    p = expit(theta[:, None] - theta[None, :])
    curv = (wins + wins.T) * p * (1.0 - p)
    info = np.diag(curv.sum(axis=1)) - curv
    se: FloatArray = ELO_SCALE * np.sqrt(np.diag(np.linalg.pinv(info)))
    return se


@pytest.mark.filterwarnings("ignore:cov_type not fully supported with freq_weights")
def test_matches_statsmodels_cluster_robust_glm_without_correction() -> None:
    per_conv = simulate_conversations(TRUE_5, conversations=60, per_conversation=8, seed=1)
    fit = fit_bradley_terry(per_conv.sum(axis=0))
    assert not fit.separated
    theta_sm, se_sm = statsmodels_se(per_conv, "cluster", "freq")
    np.testing.assert_allclose(fit.theta, theta_sm, rtol=0, atol=1e-8)
    low, high, se = cluster_robust_interval(fit.theta, per_conv)
    np.testing.assert_allclose(se, se_sm, rtol=1e-6)
    # statsmodels warns that freq_weights are not fully supported with robust covariances;
    # for clusters they agree with replicating each row, which is exact for integer strengths
    _, se_replicated = statsmodels_se(per_conv, "cluster", "replicate")
    np.testing.assert_allclose(se, se_replicated, rtol=1e-6)
    z = norm.ppf(0.975)
    np.testing.assert_allclose(high - fit.elo, z * se, rtol=1e-12)
    np.testing.assert_allclose(fit.elo - low, z * se, rtol=1e-12)


def test_one_comparison_per_conversation_is_the_plain_sandwich() -> None:
    singles = simulate_conversations(TRUE_5, conversations=600, per_conversation=1, seed=2)
    c_idx, i_idx, j_idx = np.nonzero(singles)
    assert c_idx.tolist() == list(range(600))
    wins = singles.sum(axis=0)
    fit = fit_bradley_terry(wins)
    _, _, se = cluster_robust_interval(fit.theta, singles)
    # strength weights one outcome (var_weights); HC0 with freq_weights would instead treat a
    # strength-3 win as three independent wins
    _, se_hc0 = statsmodels_se(singles, "HC0", "var")
    np.testing.assert_allclose(se, se_hc0, rtol=1e-6)
    # by hand: meat Σ_rows w²·(1 − p)²·x xᵀ with x = e_winner − e_loser, bread the information
    p = expit(fit.theta[i_idx] - fit.theta[j_idx])
    x = np.zeros((600, 5))
    x[np.arange(600), i_idx] = 1.0
    x[np.arange(600), j_idx] = -1.0
    score = x * (singles[c_idx, i_idx, j_idx] * (1.0 - p))[:, None]
    q = expit(fit.theta[:, None] - fit.theta[None, :])
    curv = (wins + wins.T) * q * (1.0 - q)
    bread_pinv = np.linalg.pinv(np.diag(curv.sum(axis=1)) - curv)
    by_hand = ELO_SCALE * np.sqrt(np.diag(bread_pinv @ (score.T @ score) @ bread_pinv))
    np.testing.assert_allclose(se, by_hand, rtol=1e-9)


def test_independent_unit_weight_outcomes_are_close_to_the_model_based_se() -> None:
    rng = np.random.default_rng(5)
    conversations, per_conversation, k = 400, 6, 5
    per_conv = np.zeros((conversations, k, k))
    for c in range(conversations):
        a = rng.integers(0, k, per_conversation)
        b = (a + rng.integers(1, k, per_conversation)) % k
        a_wins = rng.random(per_conversation) < expit(TRUE_5[a] - TRUE_5[b])
        np.add.at(per_conv[c], (np.where(a_wins, a, b), np.where(a_wins, b, a)), 1.0)
    wins = per_conv.sum(axis=0)
    fit = fit_bradley_terry(wins)
    _, _, se = cluster_robust_interval(fit.theta, per_conv)
    ratio = se / model_based_se(fit.theta, wins)
    assert np.all((ratio > 0.85) & (ratio < 1.15))


def test_larger_than_model_based_when_outcomes_within_a_conversation_repeat() -> None:
    rng = np.random.default_rng(8)
    conversations, repeats, k = 300, 9, 5
    per_conv = np.zeros((conversations, k, k))
    for c in range(conversations):
        # one pair per conversation, one verdict, echoed by every judge in that conversation
        a = int(rng.integers(0, k))
        b = int((a + rng.integers(1, k)) % k)
        winner, loser = (a, b) if rng.random() < expit(TRUE_5[a] - TRUE_5[b]) else (b, a)
        per_conv[c, winner, loser] = float(repeats)
    wins = per_conv.sum(axis=0)
    fit = fit_bradley_terry(wins)
    assert not fit.separated
    _, _, se = cluster_robust_interval(fit.theta, per_conv)
    ratio = se / model_based_se(fit.theta, wins)
    # perfectly correlated blocks of 9 inflate the SE by about sqrt(9) = 3
    assert np.all(ratio > 2.4) and np.all(ratio < 3.6)


def test_uncompared_system_is_unbounded_and_the_others_unchanged() -> None:
    per_conv = simulate_conversations(TRUE_5, conversations=40, per_conversation=8, seed=3)
    padded = np.zeros((40, 6, 6))
    padded[:, :5, :5] = per_conv
    fit = fit_bradley_terry(per_conv.sum(axis=0))
    padded_fit = fit_bradley_terry(padded.sum(axis=0))
    low, high, se = cluster_robust_interval(fit.theta, per_conv)
    plow, phigh, pse = cluster_robust_interval(padded_fit.theta, padded)
    assert plow[5] == -math.inf and phigh[5] == math.inf and pse[5] == math.inf
    np.testing.assert_allclose(pse[:5], se, rtol=1e-8)
    np.testing.assert_allclose(plow[:5], low, rtol=1e-10)
    np.testing.assert_allclose(phigh[:5], high, rtol=1e-10)


def test_disconnected_groups_have_no_finite_interval() -> None:
    per_conv = np.zeros((2, 4, 4))
    per_conv[0, 0, 1], per_conv[0, 1, 0] = 3.0, 1.0
    per_conv[1, 2, 3], per_conv[1, 3, 2] = 1.0, 2.0
    _, _, se = cluster_robust_interval(np.array([0.5, -0.5, -0.3, 0.3]), per_conv)
    assert np.all(np.isinf(se))


def test_se_ignores_a_shift_of_theta_and_the_interval_follows_level() -> None:
    per_conv = simulate_conversations(TRUE_5, conversations=30, per_conversation=8, seed=4)
    theta = fit_bradley_terry(per_conv.sum(axis=0)).theta
    low, high, se = cluster_robust_interval(theta, per_conv, level=0.8)
    _, _, shifted = cluster_robust_interval(theta + 2.5, per_conv, level=0.8)
    np.testing.assert_allclose(shifted, se, rtol=1e-12)
    elo = elo_from_theta(theta)
    np.testing.assert_allclose(high - elo, norm.ppf(0.9) * se, rtol=1e-12)
    np.testing.assert_allclose(elo - low, norm.ppf(0.9) * se, rtol=1e-12)


def test_rejects_mismatched_theta_and_bad_level() -> None:
    per_conv = np.zeros((2, 3, 3))
    per_conv[0, 0, 1] = 1.0
    with pytest.raises(ValueError, match=r"theta must have shape \(3,\) .* got \(4,\)"):
        cluster_robust_interval(np.zeros(4), per_conv)
    with pytest.raises(ValueError, match="level must lie strictly between 0 and 1"):
        cluster_robust_interval(np.zeros(3), per_conv, level=95.0)
    with pytest.raises(ValueError, match="wins must be finite and non-negative"):
        cluster_robust_interval(np.zeros(3), -per_conv)
