"""Bradley–Terry fit, Elo, separation guard, batched fit, conversation bootstrap, intervals."""

from __future__ import annotations

import math
import time

import choix
import numpy as np
import numpy.typing as npt
import pytest
from scipy.optimize import minimize
from scipy.special import expit, log_expit
from scipy.stats import norm

from heart.stats import (
    SEPARATION_RIDGE,
    bootstrap_by_conversation,
    bootstrap_stack_by_conversation,
    bradley_terry_mle_exists,
    elo_from_theta,
    fit_bradley_terry,
    fit_bradley_terry_batch,
    overall_win_rate,
    paper_interval,
    win_matrix,
    win_rates,
)
from heart.stats._bradley_terry import SURE_SPAN

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
ELO_PER_THETA = 400.0 / math.log(10.0)


def simulate_rows(
    true_theta: FloatArray, n: int, seed: int, tie_rate: float = 0.1
) -> tuple[IntArray, IntArray, FloatArray, npt.NDArray[np.bool_]]:
    """Raw comparison rows (winner, loser, strength 1–5, tie) from known strengths."""
    rng = np.random.default_rng(seed)
    k = true_theta.size
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    a_wins = rng.random(n) < expit(true_theta[a] - true_theta[b])
    winner = np.where(a_wins, a, b)
    loser = np.where(a_wins, b, a)
    strength = rng.integers(1, 6, n).astype(np.float64)
    tie = rng.random(n) < tie_rate
    return winner, loser, strength, tie


def simulate_conversations(
    true_theta: FloatArray, conversations: int, per_conversation: int, seed: int
) -> FloatArray:
    """(C, K, K) weighted win matrices, one per conversation."""
    k = true_theta.size
    winner, loser, strength, tie = simulate_rows(true_theta, conversations * per_conversation, seed)
    conv = np.repeat(np.arange(conversations), per_conversation)
    share = np.where(tie, 0.5, 1.0) * strength
    out = np.zeros((conversations, k, k))
    np.add.at(out, (conv, winner, loser), share)
    np.add.at(out, (conv[tie], loser[tie], winner[tie]), share[tie])
    return out


TRUE_8 = np.array([0.8, 0.4, 0.1, 0.0, -0.1, -0.3, -0.5, -0.9])


# --- win matrices and win rates ------------------------------------------------------------


def test_win_matrix_sums_weights_and_splits_ties_half_and_half() -> None:
    winner = np.array([0, 0, 1, 2])
    loser = np.array([1, 1, 0, 0])
    weight = np.array([3.0, 1.0, 2.0, 4.0])
    tie = np.array([False, False, False, True])
    wins = win_matrix(winner, loser, weight, 3, tie=tie)
    expected = np.array([[0.0, 4.0, 2.0], [2.0, 0.0, 0.0], [2.0, 0.0, 0.0]])
    np.testing.assert_array_equal(wins, expected)
    np.testing.assert_array_equal(
        win_matrix(winner, loser, None, 3), [[0, 2, 0], [1, 0, 0], [1, 0, 0]]
    )


def test_win_matrix_rejects_self_comparison_with_the_row() -> None:
    with pytest.raises(ValueError, match="row 1: system 2 is compared with itself"):
        win_matrix(np.array([0, 2]), np.array([1, 2]), None, 3)


def test_overall_win_rate_is_raw_share_with_ties_counting_half() -> None:
    winner = np.array([0, 0, 1, 2])
    loser = np.array([1, 1, 0, 0])
    tie = np.array([False, False, False, True])
    rate = overall_win_rate(winner, loser, tie, 4)
    # system 0: won 2, lost 1, tied 1 of 4; system 1: 1 of 3; system 2: a tie, 0.5 of 1
    np.testing.assert_allclose(rate[:3], [2.5 / 4, 1 / 3, 0.5])
    assert np.isnan(rate[3])


def test_win_rates_are_weighted_shares() -> None:
    wins = np.array([[0.0, 3.0, 1.0], [1.0, 0.0, 0.0], [1.0, 0.0, 0.0]])
    np.testing.assert_allclose(win_rates(wins), [4 / 6, 1 / 4, 1 / 2])


# --- the fit -------------------------------------------------------------------------------


def test_two_systems_by_hand() -> None:
    fit = fit_bradley_terry(np.array([[0.0, 3.0], [1.0, 0.0]]))
    assert fit.converged and not fit.separated and fit.ridge_used == 0.0
    assert fit.theta[0] - fit.theta[1] == pytest.approx(math.log(3.0), abs=1e-12)
    assert fit.theta.sum() == pytest.approx(0.0, abs=1e-14)
    assert fit.elo[0] - fit.elo[1] == pytest.approx(400.0 * math.log10(3.0), abs=1e-9)
    assert fit.elo.mean() == pytest.approx(1500.0, abs=1e-12)


def test_elo_from_theta_formula() -> None:
    theta = np.array([1.0, 0.0, -0.4])
    expected = 400.0 * (theta - theta.mean()) / math.log(10.0) + 1500.0
    np.testing.assert_allclose(elo_from_theta(theta), expected, rtol=0, atol=1e-12)
    np.testing.assert_allclose(elo_from_theta(theta + 7.0), expected, rtol=0, atol=1e-9)


def test_matches_lbfgs_on_the_raw_weighted_rows() -> None:
    winner, loser, strength, tie = simulate_rows(TRUE_8, 400, seed=11)
    fit = fit_bradley_terry(win_matrix(winner, loser, strength, 8, tie=tie))
    assert fit.converged and not fit.separated

    full = np.where(tie, 0.5, 1.0) * strength

    def nll(theta: FloatArray) -> tuple[float, FloatArray]:
        d = theta[winner] - theta[loser]
        value = -(full * log_expit(d)).sum() - (0.5 * strength * tie * log_expit(-d)).sum()
        # d/dd of the row loss: winner side −w(1−σ), tie's reverse half +w/2·σ
        dd = -full * expit(-d) + 0.5 * strength * tie * expit(d)
        grad = np.bincount(winner, dd, 8) - np.bincount(loser, dd, 8)
        return float(value), np.asarray(grad, dtype=np.float64)

    res = minimize(
        nll,
        np.zeros(8),
        jac=True,
        method="L-BFGS-B",
        options={"ftol": 0.0, "gtol": 1e-12, "maxiter": 10_000, "maxcor": 30},
    )
    np.testing.assert_allclose(fit.elo, elo_from_theta(res.x), rtol=0, atol=1e-6)
    # and the fit recovers the simulated strengths' ordering roughly
    assert np.corrcoef(fit.theta, TRUE_8)[0, 1] > 0.9


def test_matches_choix_on_unweighted_counts() -> None:
    winner, loser, _, _ = simulate_rows(TRUE_8, 300, seed=5, tie_rate=0.0)
    counts = win_matrix(winner, loser, None, 8)
    fit = fit_bradley_terry(counts)
    params = choix.ilsr_pairwise_dense(counts, alpha=0.0, tol=1e-12)
    np.testing.assert_allclose(fit.theta, params - params.mean(), rtol=0, atol=1e-6)
    np.testing.assert_allclose(fit.elo, elo_from_theta(params), rtol=0, atol=1e-4)


def test_one_system_beating_everyone_triggers_the_guard() -> None:
    wins = np.array(
        [
            [0.0, 5.0, 3.0, 4.0],
            [0.0, 0.0, 2.0, 1.0],
            [0.0, 1.0, 0.0, 2.0],
            [0.0, 1.0, 1.0, 0.0],
        ]
    )
    assert not bradley_terry_mle_exists(wins[None])[0]
    fit = fit_bradley_terry(wins)
    assert fit.separated and fit.converged
    assert fit.ridge_used == SEPARATION_RIDGE
    assert np.all(np.isfinite(fit.elo))
    assert int(np.argmax(fit.elo)) == 0
    assert fit.theta.sum() == pytest.approx(0.0, abs=1e-12)
    # the penalised optimum: gradient of Σ W log σ − (λ/2)Σθ² vanishes
    p = expit(fit.theta[:, None] - fit.theta[None, :])
    grad = (wins - (wins + wins.T) * p).sum(axis=1) - SEPARATION_RIDGE * fit.theta
    np.testing.assert_allclose(grad, 0.0, atol=1e-9)
    with pytest.raises(ValueError, match="does not exist"):
        fit_bradley_terry(wins, ridge=0.0)


def test_strongly_connected_data_uses_no_ridge() -> None:
    wins = np.array([[0.0, 5.0, 3.0], [1.0, 0.0, 2.0], [0.5, 1.0, 0.0]])
    fit = fit_bradley_terry(wins)
    assert not fit.separated and fit.ridge_used == 0.0 and fit.converged
    assert list(np.argsort(-fit.elo)) == [0, 1, 2]


def test_disconnected_groups_are_separated() -> None:
    wins = np.zeros((4, 4))
    wins[0, 1], wins[1, 0], wins[2, 3], wins[3, 2] = 2.0, 1.0, 1.0, 3.0
    fit = fit_bradley_terry(wins)
    assert fit.separated and np.all(np.isfinite(fit.theta))
    assert fit.theta[0] > fit.theta[1] and fit.theta[3] > fit.theta[2]


def test_uncompared_system_gets_zero_and_leaves_the_others_unchanged() -> None:
    winner, loser, strength, tie = simulate_rows(TRUE_8[:5], 200, seed=3)
    small = fit_bradley_terry(win_matrix(winner, loser, strength, 5, tie=tie))
    padded = fit_bradley_terry(win_matrix(winner, loser, strength, 6, tie=tie))
    assert not padded.separated
    assert padded.compared.tolist() == [True] * 5 + [False]
    assert padded.theta[5] == 0.0
    np.testing.assert_allclose(padded.theta[:5], small.theta, atol=1e-10)


@pytest.mark.parametrize("k", [2, 5, 20, 60])
def test_converges_across_sizes(k: int) -> None:
    true = np.linspace(2.0, -2.0, k)
    winner, loser, strength, tie = simulate_rows(true, 40 * k, seed=k)
    fit = fit_bradley_terry(win_matrix(winner, loser, strength, k, tie=tie))
    assert fit.converged and fit.iterations < 30
    p = expit(fit.theta[:, None] - fit.theta[None, :])
    wins = win_matrix(winner, loser, strength, k, tie=tie)
    grad = (wins - (wins + wins.T) * p).sum(axis=1) - fit.ridge_used * fit.theta
    np.testing.assert_allclose(grad, 0.0, atol=1e-8 * wins.sum())


def _penalised_likelihood(theta: FloatArray, wins: FloatArray, ridge: float) -> float:
    diff = theta[:, None] - theta[None, :]
    return float((wins * log_expit(diff)).sum() - 0.5 * ridge * (theta @ theta))


def test_a_newton_step_within_the_sure_span_never_goes_downhill() -> None:
    """The fit skips the likelihood check for steps spanning under SURE_SPAN: on random win
    matrices, ridges and starting points, every such full step must raise the likelihood."""
    rng = np.random.default_rng(7)
    checked = 0
    for _ in range(400):
        k = int(rng.integers(2, 9))
        wins = rng.gamma(0.5, 3.0, (k, k)) * (rng.random((k, k)) < 0.7)
        np.fill_diagonal(wins, 0.0)
        n = wins + wins.T
        if not n.any(axis=1).all():
            continue
        fit = fit_bradley_terry(wins)  # starts near and far from the optimum
        ridge = fit.ridge_used
        theta = fit.theta + rng.normal(0.0, rng.choice([0.05, 0.3, 1.0, 3.0]), k)
        p = expit(theta[:, None] - theta[None, :])
        grad = (wins - n * p).sum(axis=1) - ridge * theta
        curv = n * p * (1.0 - p)
        hess = np.diag(curv.sum(axis=1)) - curv + ridge * np.eye(k) + np.ones((k, k)) / k
        step = np.linalg.solve(hess, grad)
        if step.max() - step.min() >= SURE_SPAN:
            continue
        checked += 1
        before = _penalised_likelihood(theta, wins, ridge)
        assert _penalised_likelihood(theta + step, wins, ridge) >= before - 1e-12 * abs(before)
    assert checked > 50


def test_batch_equals_single_fit_per_replicate() -> None:
    per_conv = simulate_conversations(TRUE_8 * 2.0, conversations=6, per_conversation=6, seed=2)
    rng = np.random.default_rng(0)
    counts = rng.multinomial(6, np.full(6, 1 / 6), size=40).astype(np.float64)
    replicates = np.einsum("rc,cij->rij", counts, per_conv)
    separated = ~bradley_terry_mle_exists(replicates)
    assert separated.any() and not separated.all()  # both branches of the guard are exercised
    batch = fit_bradley_terry_batch(replicates)
    for r in range(replicates.shape[0]):
        single = fit_bradley_terry(replicates[r])
        assert single.separated == separated[r]
        np.testing.assert_allclose(batch[r], single.theta, rtol=0, atol=1e-8)
    fixed = fit_bradley_terry_batch(replicates, ridge=0.5)
    np.testing.assert_allclose(
        fixed[7], fit_bradley_terry(replicates[7], ridge=0.5).theta, rtol=0, atol=1e-8
    )


# --- bootstrap -----------------------------------------------------------------------------


def test_bootstrap_round_is_a_fit_of_the_resampled_conversations() -> None:
    per_conv = simulate_conversations(TRUE_8, conversations=40, per_conversation=15, seed=4)
    boot = bootstrap_by_conversation(per_conv, rounds=50, seed=9)
    rng = np.random.Generator(np.random.PCG64(9))
    counts = rng.multinomial(40, np.full(40, 1 / 40), size=50)
    third = fit_bradley_terry(np.einsum("c,cij->ij", counts[2].astype(float), per_conv))
    np.testing.assert_allclose(boot.elo_rounds[2], third.elo, rtol=0, atol=1e-6)


def test_a_stack_of_bootstraps_equals_each_bootstrap_alone() -> None:
    """Several fits on the same conversations (a board's axes) bootstrapped in one batch: each
    equals its own bootstrap, anchor included, round for round."""
    stack = np.stack(
        [simulate_conversations(TRUE_8, conversations=30, per_conversation=12, seed=s)
         for s in (1, 2, 3)]
    )  # fmt: skip
    stack[2, :, 0, :] = stack[2, :, :, 0] = 0.0  # system 0 not compared in the third fit
    anchors = np.ones((3, 8), dtype=bool)
    anchors[1, :4] = False
    together = bootstrap_stack_by_conversation(stack, rounds=80, seed=5, anchors=anchors)
    for s, boot in enumerate(together):
        alone = bootstrap_by_conversation(stack[s], rounds=80, seed=5, anchor=anchors[s])
        np.testing.assert_allclose(boot.elo_rounds, alone.elo_rounds, rtol=0, atol=1e-6)
        np.testing.assert_allclose(boot.low, alone.low, rtol=0, atol=1e-6)
        assert boot.separated_rounds == alone.separated_rounds
    assert np.isnan(together[2].elo_rounds[:, 0]).all()


def test_bootstrap_is_deterministic_for_a_seed() -> None:
    per_conv = simulate_conversations(TRUE_8, conversations=40, per_conversation=15, seed=4)
    first = bootstrap_by_conversation(per_conv, rounds=200, seed=7)
    again = bootstrap_by_conversation(per_conv, rounds=200, seed=7)
    other = bootstrap_by_conversation(per_conv, rounds=200, seed=8)
    np.testing.assert_array_equal(first.elo_rounds, again.elo_rounds)
    np.testing.assert_array_equal(first.low, again.low)
    assert not np.array_equal(first.elo_rounds, other.elo_rounds)
    assert first.elo_rounds.shape == (200, 8) and first.rounds == 200 and first.level == 0.95


def test_bootstrap_interval_contains_estimate_and_shrinks_with_more_conversations() -> None:
    widths = {}
    for conversations in (20, 500):
        per_conv = simulate_conversations(TRUE_8, conversations, per_conversation=15, seed=21)
        fit = fit_bradley_terry(per_conv.sum(axis=0))
        boot = bootstrap_by_conversation(per_conv, rounds=1000, seed=0)
        assert boot.separated_rounds == 0
        assert np.all(boot.low < fit.elo) and np.all(fit.elo < boot.high)
        widths[conversations] = boot.high - boot.low
    # width scales like 1/sqrt(C): 25× the data should give about a fifth of the width
    ratio = widths[500] / widths[20]
    assert np.all(ratio < 0.4)
    assert 0.12 < ratio.mean() < 0.3


def test_bootstrap_marks_absent_systems_as_nan() -> None:
    per_conv = simulate_conversations(TRUE_8[:3], conversations=10, per_conversation=6, seed=1)
    padded = np.zeros((11, 4, 4))
    padded[:10, :3, :3] = per_conv
    padded[10, 3, 0], padded[10, 0, 3] = 1.0, 1.0  # system 3 appears in one conversation only
    boot = bootstrap_by_conversation(padded, rounds=300, seed=0)
    missing = np.isnan(boot.elo_rounds[:, 3])
    assert 0 < missing.sum() < 300
    assert np.all(np.isfinite(boot.elo_rounds[:, :3]))
    assert np.isfinite(boot.low[3]) and np.isfinite(boot.high[3])


def test_bootstrap_speed_22_systems_300_conversations_1000_rounds() -> None:
    true = np.random.default_rng(0).normal(0.0, 0.7, 22)
    per_conv = simulate_conversations(true, conversations=300, per_conversation=20, seed=0)
    start = time.perf_counter()
    boot = bootstrap_by_conversation(per_conv, rounds=1000, seed=0)
    elapsed = time.perf_counter() - start
    print(f"\nbootstrap K=22 C=300 rounds=1000: {elapsed:.3f} s")
    assert boot.elo_rounds.shape == (1000, 22) and np.all(np.isfinite(boot.elo_rounds))


# --- the paper's interval ------------------------------------------------------------------


def test_paper_interval_is_theta_plus_minus_z_over_sqrt_n() -> None:
    theta = np.array([0.5, 0.0, -0.5])
    n = np.array([100, 25, 0])
    low, high = paper_interval(theta, n, level=0.95)
    z = norm.ppf(0.975)
    elo = elo_from_theta(theta)
    np.testing.assert_allclose(high[:2] - elo[:2], z * ELO_PER_THETA / np.sqrt(n[:2]))
    np.testing.assert_allclose(elo[:2] - low[:2], z * ELO_PER_THETA / np.sqrt(n[:2]))
    assert high[0] - low[0] == pytest.approx(2 * 1.959963984540054 * 173.717792761 / 10, rel=1e-9)
    assert low[2] == -np.inf and high[2] == np.inf
