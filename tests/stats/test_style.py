"""Style-controlled Bradley–Terry: against statsmodels, on simulated length-driven verdicts, and
on edge cases (one conversation, a feature that never differs, two systems)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest
import statsmodels.api as sm
from scipy.special import expit
from scipy.stats import kendalltau

from heart.stats import (
    StyleDesign,
    bootstrap_style_controlled,
    conversation_draws,
    elo_from_theta,
    fit_bradley_terry,
    fit_style_controlled,
    fit_style_design,
    percentile_interval,
    style_design,
    style_differences,
    win_matrix,
)

FEATURES = ("length", "questions")
Ints = npt.NDArray[np.int64]
Floats = npt.NDArray[np.float64]


def simulate(
    theta: Floats,
    words: Floats,
    length_effect: float,
    n: int,
    seed: int,
    conversations: int = 40,
) -> tuple[Ints, Ints, Ints, Floats, Floats, Floats, Ints]:
    """Verdicts where a beats b with σ(θa − θb + length_effect·z), z the scaled normalised
    difference of the two replies' lengths (each reply's length drawn around its system's)."""
    rng = np.random.default_rng(seed)
    k = theta.size
    a = rng.integers(0, k, n)
    b = (a + rng.integers(1, k, n)) % k
    length_a = rng.poisson(words[a]).astype(np.float64)
    length_b = rng.poisson(words[b]).astype(np.float64)
    questions_a = rng.poisson(1.0, n).astype(np.float64)
    questions_b = rng.poisson(1.0, n).astype(np.float64)
    d = style_differences(length_a, length_b)
    z = d / np.sqrt((d * d).mean())
    p = expit(theta[a] - theta[b] + length_effect * z)
    outcome = np.where(rng.random(n) < p, 0, 1)
    strength = rng.integers(1, 6, n).astype(np.float64)
    style_a = np.column_stack([length_a, questions_a])
    style_b = np.column_stack([length_b, questions_b])
    conversation = rng.integers(0, conversations, n)
    return a, b, outcome, strength, style_a, style_b, conversation


def test_normalised_difference_by_hand() -> None:
    assert style_differences([10, 0, 3], [5, 0, 3]).tolist() == [5 / 16, 0.0, 0.0]
    with pytest.raises(ValueError, match="non-negative"):
        style_differences([-1], [2])


def test_fit_matches_statsmodels_logistic_regression_on_the_same_design() -> None:
    theta = np.array([0.4, 0.0, -0.3, 0.1])
    a, b, outcome, strength, sa, sb, _ = simulate(theta, np.array([30, 50, 20, 40.0]), 0.5, 600, 1)
    outcome[::17] = 2  # some ties, half the weight to each side
    fit = fit_style_controlled(a, b, outcome, strength, 4, sa, sb, FEATURES)
    assert fit.converged and not fit.separated and fit.features == FEATURES

    # The same design by hand: system 0 as the reference, features z-scored by their spread.
    n = a.size
    d = style_differences(sa, sb)
    z = d / np.sqrt((d * d).mean(axis=0))
    system = np.zeros((n, 4))
    system[np.arange(n), a] += 1.0
    system[np.arange(n), b] -= 1.0
    x = np.hstack([system[:, 1:], z])
    won_a = np.where(outcome == 0, strength, np.where(outcome == 2, strength / 2, 0.0))
    won_b = np.where(outcome == 1, strength, np.where(outcome == 2, strength / 2, 0.0))
    rows = np.vstack([x, x])
    y = np.concatenate([np.ones(n), np.zeros(n)])
    freq = np.concatenate([won_a, won_b])
    keep = freq > 0
    reference = sm.GLM(
        y[keep], rows[keep], family=sm.families.Binomial(), freq_weights=freq[keep]
    ).fit(tol=1e-13)
    ref_theta = np.concatenate([[0.0], reference.params[:3]])
    np.testing.assert_allclose(fit.elo, elo_from_theta(ref_theta), atol=1e-6, rtol=0)
    np.testing.assert_allclose(fit.coefficients, reference.params[3:], atol=1e-8, rtol=0)


def test_swapping_which_reply_is_called_a_changes_nothing() -> None:
    theta = np.array([0.2, -0.2, 0.0])
    a, b, outcome, strength, sa, sb, _ = simulate(theta, np.array([20, 40, 30.0]), 0.7, 400, 2)
    fit = fit_style_controlled(a, b, outcome, strength, 3, sa, sb, FEATURES)
    flip = np.arange(a.size) % 2 == 0
    swapped_outcome = np.where(flip & (outcome < 2), 1 - outcome, outcome)
    swapped = fit_style_controlled(
        np.where(flip, b, a),
        np.where(flip, a, b),
        swapped_outcome,
        strength,
        3,
        np.where(flip[:, None], sb, sa),
        np.where(flip[:, None], sa, sb),
        FEATURES,
    )
    np.testing.assert_allclose(swapped.elo, fit.elo, atol=1e-8)
    np.testing.assert_allclose(swapped.coefficients, fit.coefficients, atol=1e-10)


def _plain_elo(a: Ints, b: Ints, outcome: Ints, strength: Floats, k: int) -> Floats:
    winner, loser = np.where(outcome == 1, b, a), np.where(outcome == 1, a, b)
    return fit_bradley_terry(win_matrix(winner, loser, strength, k, tie=outcome == 2)).elo


def test_equal_systems_whose_wins_follow_length_only_are_levelled() -> None:
    words = np.array([15.0, 30.0, 60.0, 120.0])
    a, b, outcome, strength, sa, sb, _ = simulate(np.zeros(4), words, 1.0, 4000, 3)
    plain = _plain_elo(a, b, outcome, strength, 4)
    fit = fit_style_controlled(a, b, outcome, strength, 4, sa, sb, FEATURES)
    assert list(np.argsort(plain)) == [0, 1, 2, 3]  # the plain ranking follows length
    assert plain[3] - plain[0] > 200
    assert np.abs(fit.elo - 1500).max() < 25  # controlled: no system stands out
    length, questions = fit.coefficients
    assert length > 0.8 and abs(questions) < 0.1


def test_controlled_ranking_recovers_the_true_order_when_length_points_the_other_way() -> None:
    theta = np.array([0.9, 0.3, -0.3, -0.9])  # system 0 strongest, but the shortest
    words = np.array([15.0, 30.0, 60.0, 120.0])
    a, b, outcome, strength, sa, sb, conv = simulate(theta, words, 1.6, 6000, 4)
    plain = _plain_elo(a, b, outcome, strength, 4)
    fit = fit_style_controlled(a, b, outcome, strength, 4, sa, sb, FEATURES)
    assert kendalltau(plain, -theta).statistic == 1.0  # the plain ranking follows length
    assert list(np.argsort(-fit.elo)) == [0, 1, 2, 3]  # the controlled one the truth
    np.testing.assert_allclose(fit.theta, theta, atol=0.15)
    design = style_design(a, b, outcome, strength, 4, sa, sb, FEATURES, conv)
    boot = bootstrap_style_controlled(design, conversations=40, rounds=100, seed=5)
    assert boot.coefficient_low[0] > 1.0  # length clearly buys wins
    assert boot.coefficient_low[1] < 0 < boot.coefficient_high[1]
    assert np.all(boot.low <= fit.elo) and np.all(fit.elo <= boot.high)
    assert boot.low[0] > boot.high[1]  # the best system is clearly above the second


def test_one_conversation() -> None:
    theta = np.array([0.5, 0.0, -0.5])
    a, b, outcome, strength, sa, sb, _ = simulate(theta, np.array([20, 30, 40.0]), 0.5, 300, 6)
    conv = np.zeros(a.size, dtype=np.int64)
    design = style_design(a, b, outcome, strength, 3, sa, sb, FEATURES, conv)
    boot = bootstrap_style_controlled(design, conversations=1, rounds=20, seed=1)
    fit = fit_style_controlled(a, b, outcome, strength, 3, sa, sb, FEATURES)
    # One conversation drawn once in every round: every round is the full data, no spread.
    np.testing.assert_allclose(boot.low, fit.elo, atol=1e-8)
    np.testing.assert_allclose(boot.high, fit.elo, atol=1e-8)
    np.testing.assert_allclose(boot.coefficient_low, fit.coefficients, atol=1e-8)


def test_a_feature_that_never_differs_is_dropped_and_named() -> None:
    theta = np.array([0.5, 0.0, -0.5])
    a, b, outcome, strength, sa, sb, _ = simulate(theta, np.array([20, 30, 40.0]), 0.5, 300, 7)
    markdown = np.zeros((a.size, 1))
    fit = fit_style_controlled(
        a, b, outcome, strength, 3, np.hstack([sa, markdown]), np.hstack([sb, markdown + 0]),
        (*FEATURES, "markdown"),
    )  # fmt: skip
    alone = fit_style_controlled(a, b, outcome, strength, 3, sa, sb, FEATURES)
    assert fit.features == FEATURES
    assert fit.dropped == (("markdown", "the same in both replies of every comparison"),)
    np.testing.assert_allclose(fit.elo, alone.elo, atol=1e-10)
    np.testing.assert_allclose(fit.coefficients, alone.coefficients, atol=1e-10)


def test_two_systems_with_a_style_that_tracks_the_system_keep_the_system_only() -> None:
    # Two systems, system 0 always 10 words and system 1 always 30: the length difference is
    # the system difference, so length cannot be told apart from strength and is dropped.
    rng = np.random.default_rng(8)
    n = 200
    a = rng.integers(0, 2, n)
    b = 1 - a
    words = np.array([10.0, 30.0])
    style_a, style_b = words[a][:, None], words[b][:, None]
    outcome = np.where(rng.random(n) < expit(np.where(a == 0, 0.6, -0.6)), 0, 1)
    fit = fit_style_controlled(a, b, outcome, None, 2, style_a, style_b, ("length",))
    assert fit.features == ()
    assert fit.dropped[0][0] == "length" and "determined by the systems" in fit.dropped[0][1]
    plain = _plain_elo(a, b, outcome, np.ones(n), 2)
    np.testing.assert_allclose(fit.elo, plain, atol=1e-8)


def test_two_systems_with_varying_length() -> None:
    theta = np.array([0.4, -0.4])
    a, b, outcome, strength, sa, sb, _ = simulate(theta, np.array([20.0, 60.0]), 0.8, 2000, 9)
    fit = fit_style_controlled(a, b, outcome, strength, 2, sa, sb, FEATURES)
    assert fit.elo[0] > fit.elo[1]
    assert fit.coefficients[0] > 0.5
    np.testing.assert_allclose(fit.elo.mean(), 1500.0)


def _refit_each_round(
    design: StyleDesign, conversations: int, rounds: int, seed: int
) -> tuple[Floats, Floats, int]:
    """The bootstrap the slow way: every round refitted alone from the full estimate."""
    full = fit_style_design(design)
    start = np.concatenate([full.theta, full.coefficients])
    counts = conversation_draws(conversations, rounds=rounds, seed=seed)
    elo = np.full((rounds, design.n_systems), np.nan)
    coefficients = np.empty((rounds, len(design.features)))
    separated = 0
    for i in range(rounds):
        fit = fit_style_design(
            design, row_weight=counts[i, design.conversation], start=start, tol=1e-8
        )
        present = elo_from_theta(fit.theta)[fit.compared]
        elo[i, fit.compared] = present - present.mean() + 1500.0
        coefficients[i] = fit.coefficients
        separated += fit.separated
    return elo, coefficients, separated


def test_batched_rounds_are_the_fits_of_each_round_alone() -> None:
    theta = np.array([0.6, 0.3, 0.0, -0.2, -0.4, -0.3])
    words = np.array([20, 60, 30, 90, 40, 25.0])
    a, b, outcome, strength, sa, sb, conv = simulate(theta, words, 0.8, 3000, 10, 60)
    design = style_design(a, b, outcome, strength, 6, sa, sb, FEATURES, conv)
    boot = bootstrap_style_controlled(design, conversations=60, rounds=60, seed=4, method="refit")
    elo, coefficients, separated = _refit_each_round(design, 60, 60, 4)
    assert separated == boot.separated_rounds == 0
    np.testing.assert_allclose(boot.elo_rounds, elo, atol=1e-6, rtol=0)
    np.testing.assert_allclose(boot.coefficient_rounds, coefficients, atol=1e-8, rtol=0)
    low, high = percentile_interval(elo, 0.95)
    np.testing.assert_allclose(boot.low, low, atol=1e-6, rtol=0)
    np.testing.assert_allclose(boot.high, high, atol=1e-6, rtol=0)


def _separating_design() -> StyleDesign:
    """Ten conversations, 24 verdicts over five systems: some rounds let a system win or lose
    every comparison and need the ridge guard, a few leave a system out, most neither."""
    theta = np.array([0.8, 0.0, -0.8, 0.2, 0.4])
    words = np.array([20, 40, 30, 60, 35.0])
    a, b, outcome, strength, sa, sb, conv = simulate(theta, words, 0.5, 24, 12, 10)
    return style_design(a, b, outcome, strength, 5, sa, sb, FEATURES, conv)


def test_rounds_that_separate_or_leave_a_system_out_match_their_own_fits() -> None:
    design = _separating_design()
    boot = bootstrap_style_controlled(design, conversations=10, rounds=80, seed=2, method="refit")
    elo, coefficients, separated = _refit_each_round(design, 10, 80, 2)
    assert 0 < boot.separated_rounds == separated < 80
    left_out = np.isnan(boot.elo_rounds).any(axis=1)
    assert 0 < left_out.sum() < 80
    np.testing.assert_array_equal(np.isnan(boot.elo_rounds), np.isnan(elo))
    np.testing.assert_allclose(boot.elo_rounds, elo, atol=1e-6, rtol=0)
    np.testing.assert_allclose(boot.coefficient_rounds, coefficients, atol=1e-8, rtol=0)


def _one_step_by_hand(design: StyleDesign, weight: Floats) -> Floats:
    """One Newton step of a round (row weights ``weight``) from the full fit, with the score and
    Hessian of statsmodels' binomial GLM on the same rows; Elo centred on 1500."""
    full = fit_style_design(design)
    start = np.concatenate([full.theta, full.coefficients])
    on = weight > 0  # the round's rows
    total = design.won_a[on] + design.won_b[on]
    model = sm.GLM(
        design.won_a[on] / total,
        design.x[on],
        family=sm.families.Binomial(),
        var_weights=total * weight[on],
    )
    step = np.linalg.pinv(-model.hessian(start)) @ model.score(start)
    theta = (start + step)[: design.n_systems]
    elo = elo_from_theta(theta)
    return elo - elo.mean() + 1500.0


def _large_design(seed: int) -> StyleDesign:
    theta = np.array([0.5, 0.35, 0.3, 0.1, 0.0, -0.1, -0.3, -0.5])
    words = np.array([20, 60, 30, 90, 40, 25, 70, 50.0])
    a, b, outcome, strength, sa, sb, conv = simulate(theta, words, 0.6, 40_000, seed, 200)
    return style_design(a, b, outcome, strength, 8, sa, sb, FEATURES, conv)


def test_a_one_step_round_is_one_newton_step_from_the_full_fit() -> None:
    design = _large_design(21)
    boot = bootstrap_style_controlled(
        design, conversations=200, rounds=30, seed=3, method="one-step"
    )
    assert boot.method == "one-step" and boot.stepped_rounds == 30
    counts = conversation_draws(200, rounds=30, seed=3)
    for i in (0, 7, 29):
        expected = _one_step_by_hand(design, counts[i, design.conversation])
        np.testing.assert_allclose(boot.elo_rounds[i], expected, atol=1e-6, rtol=0)


def test_one_step_intervals_are_within_an_elo_point_of_refitting_on_a_large_design() -> None:
    design = _large_design(22)
    one = bootstrap_style_controlled(design, conversations=200, rounds=400, seed=1)
    refit = bootstrap_style_controlled(
        design, conversations=200, rounds=400, seed=1, method="refit"
    )
    assert one.method == "one-step" and refit.method == "refit"  # 40,000 rows: auto steps once
    assert one.stepped_rounds == 400 and refit.stepped_rounds == 0
    gap = np.abs(one.elo_rounds - refit.elo_rounds)
    assert 0 < gap.max() < 1.0  # not the same computation, and close to it
    assert np.abs(one.low - refit.low).max() < 0.5
    assert np.abs(one.high - refit.high).max() < 0.5
    np.testing.assert_allclose(one.coefficient_low, refit.coefficient_low, atol=0.01)


def test_a_round_whose_step_is_too_long_is_refitted(monkeypatch: pytest.MonkeyPatch) -> None:
    from heart.stats import _style_bootstrap

    design = _large_design(23)
    refit = bootstrap_style_controlled(design, conversations=200, rounds=40, seed=2, method="refit")
    monkeypatch.setattr(_style_bootstrap, "ONE_STEP_LIMIT", 0.0)
    one = bootstrap_style_controlled(
        design, conversations=200, rounds=40, seed=2, method="one-step"
    )
    assert one.stepped_rounds == 0
    np.testing.assert_allclose(one.elo_rounds, refit.elo_rounds, atol=1e-6, rtol=0)


def test_auto_refits_a_small_design_and_an_unknown_method_is_refused() -> None:
    theta = np.array([0.6, 0.3, 0.0, -0.2])
    words = np.array([20, 60, 30, 90.0])
    a, b, outcome, strength, sa, sb, conv = simulate(theta, words, 0.8, 500, 10, 20)
    design = style_design(a, b, outcome, strength, 4, sa, sb, FEATURES, conv)
    auto = bootstrap_style_controlled(design, conversations=20, rounds=50, seed=4)
    refit = bootstrap_style_controlled(design, conversations=20, rounds=50, seed=4, method="refit")
    assert auto.method == "refit"
    np.testing.assert_array_equal(auto.elo_rounds, refit.elo_rounds)
    with pytest.raises(ValueError, match="method must be one of auto, one-step, refit"):
        bootstrap_style_controlled(design, conversations=20, rounds=5, method="newton")  # type: ignore[arg-type]


def test_the_design_has_one_row_per_conversation_order_and_style_counted_by_hand() -> None:
    # Three judges see every comparison, so each comes three times; questions never differ
    # within a comparison and are dropped, so rows that differ only there are one row.
    rng = np.random.default_rng(8)
    n = 300
    a = rng.integers(0, 4, n)
    b = (a + rng.integers(1, 4, n)) % 4
    conv = rng.integers(0, 6, n)
    length_a, length_b = rng.integers(1, 4, n) * 10.0, rng.integers(1, 4, n) * 10.0
    questions = rng.integers(0, 3, n).astype(np.float64)
    style_a = np.column_stack([length_a, questions])
    style_b = np.column_stack([length_b, questions])
    tile = lambda v: np.concatenate([v, v, v])  # noqa: E731
    outcome = rng.integers(0, 3, 3 * n)
    strength = rng.integers(1, 6, 3 * n).astype(np.float64)
    design = style_design(
        tile(a), tile(b), outcome, strength, 4, tile(style_a), tile(style_b), FEATURES, tile(conv)
    )
    assert design.features == ("length",) and [d for d, _ in design.dropped] == ["questions"]
    d = style_differences(tile(length_a), tile(length_b))
    np.testing.assert_allclose(design.scale, [np.sqrt((d * d).mean())])
    expected: dict[tuple[int, int, int, float], list[float]] = {}
    won_a = np.where(outcome == 0, strength, np.where(outcome == 2, strength / 2, 0.0))
    won_b = np.where(outcome == 1, strength, np.where(outcome == 2, strength / 2, 0.0))
    for key in zip(tile(conv), tile(a), tile(b), d, won_a, won_b, strict=True):
        row = expected.setdefault((int(key[0]), int(key[1]), int(key[2]), round(key[3], 9)), [0, 0])
        row[0] += key[4]
        row[1] += key[5]
    got = {}
    for c, x, wa, wb in zip(design.conversation, design.x, design.won_a, design.won_b, strict=True):
        key = (
            int(c),
            int(np.argmax(x[:4])),
            int(np.argmin(x[:4])),
            round(x[4] * design.scale[0], 9),
        )
        assert key not in got
        got[key] = [wa, wb]
    assert got.keys() == {k for k, v in expected.items() if sum(v) > 0}
    for key, value in got.items():
        np.testing.assert_allclose(value, expected[key])


def test_one_step_refits_the_rounds_that_separate_as_refitting_does() -> None:
    # Ten conversations and 24 verdicts: rounds that need the ridge guard are refitted in full
    # under either method, and the others move far, so most are refitted too.
    design = _separating_design()
    one = bootstrap_style_controlled(design, conversations=10, rounds=80, seed=2, method="one-step")
    refit = bootstrap_style_controlled(design, conversations=10, rounds=80, seed=2, method="refit")
    assert one.method == "one-step" and 0 < one.separated_rounds == refit.separated_rounds
    assert one.stepped_rounds < 80 - one.separated_rounds
    full = np.isnan(one.elo_rounds) == np.isnan(refit.elo_rounds)
    assert full.all()
    same = np.abs(np.nan_to_num(one.elo_rounds - refit.elo_rounds)).max(axis=1) < 1e-6
    assert same.sum() >= 80 - one.stepped_rounds  # every round not stepped is the refit's
