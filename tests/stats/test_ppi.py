"""Judge-assisted Bradley–Terry (PPI++) against ppi_py's logistic PPI and hand facts."""

from __future__ import annotations

import numpy as np
import pytest
from ppi_py import ppi_logistic_pointestimate

from heart.stats import (
    assisted_matrix,
    bootstrap_assisted,
    fit_assisted,
    fit_bradley_terry,
    power_tuned_lambda,
)

K = 4
pytestmark = pytest.mark.filterwarnings("ignore:.penalty. was deprecated:FutureWarning")


def _design(seed: int, labelled: int = 300, unlabelled: int = 3000, noise: float = 0.15):
    """Points of a Bradley–Terry study: pair (a, b), people's binary outcome y, a prediction f
    that is y flipped with probability ``noise`` (averaged over two judges, so halves occur),
    a weight per labelled point, and a conversation per point."""
    rng = np.random.default_rng(seed)
    theta = np.array([0.6, 0.2, -0.1, -0.7])

    def points(n: int):
        a = rng.integers(0, K, n)
        b = (a + rng.integers(1, K, n)) % K
        y = (rng.random(n) < 1 / (1 + np.exp(-(theta[a] - theta[b])))).astype(float)
        judges = [np.where(rng.random(n) < noise, 1 - y, y) for _ in range(2)]
        return a, b, y, np.mean(judges, axis=0)

    lab = points(labelled)
    unl = points(unlabelled)
    weight = rng.integers(1, 4, labelled).astype(float)
    return lab, unl, weight


def _matrices(a, b, share, weight, conversation, c):
    out = np.zeros((c, K, K))
    np.add.at(out, (conversation, a, b), weight * share)
    np.add.at(out, (conversation, b, a), weight * (1 - share))
    return out


def _stacks(seed: int, c: int = 40, **kw):
    (a, b, y, f), (ua, ub, _, uf), w = _design(seed, **kw)
    rng = np.random.default_rng(seed + 1)
    conv, uconv = rng.integers(0, c, a.size), rng.integers(0, c, ua.size)
    return (
        _matrices(a, b, y, w, conv, c),
        _matrices(a, b, f, w, conv, c),
        _matrices(ua, ub, uf, np.ones(ua.size), uconv, c),
    ), (a, b, y, f, w, ua, ub, uf)


def _x(a, b):
    """Bradley–Terry as logistic regression: +1 for a, −1 for b, system 0's column dropped."""
    x = np.zeros((a.size, K))
    x[np.arange(a.size), a] = 1.0
    x[np.arange(a.size), b] = -1.0
    return x[:, 1:]


@pytest.mark.parametrize("lam", [0.0, 0.35, 0.8, 1.0])
def test_point_estimate_is_ppi_pys_logistic_ppi_at_the_same_lambda(lam: float) -> None:
    stacks, (a, b, y, f, w, ua, ub, uf) = _stacks(3)
    theta, guarded = fit_assisted(*stacks, lam)
    reference = ppi_logistic_pointestimate(
        _x(a, b), y, f, _x(ua, ub), uf, lam=lam, w=w, optimizer_options={"gtol": 1e-12}
    )
    assert not guarded
    # ours is centred, theirs pins system 0 at zero: compare differences from system 0
    np.testing.assert_allclose(theta[1:] - theta[0], reference, atol=2e-6)


def test_lambda_zero_is_people_alone() -> None:
    stacks, _ = _stacks(5)
    theta, _ = fit_assisted(*stacks, 0.0)
    np.testing.assert_allclose(theta, fit_bradley_terry(stacks[0].sum(axis=0)).theta, atol=1e-9)


def test_the_matrix_scales_the_judges_points_to_the_peoples_weight() -> None:
    y = np.array([[0.0, 3.0], [1.0, 0.0]])  # n = 4
    fl = np.array([[0.0, 2.0], [2.0, 0.0]])
    fu = np.array([[0.0, 6.0], [2.0, 0.0]])  # N = 8
    np.testing.assert_allclose(
        assisted_matrix(y, fl, fu, 0.5), y + 0.5 * (0.5 * fu - fl)
    )  # [[0, 3.5], [0, 0]]
    with pytest.raises(ValueError, match=r"lambda must lie in \[0, 1\]"):
        assisted_matrix(y, fl, fu, 1.5)


def test_power_tuning_trusts_good_predictions_and_ignores_coin_flips() -> None:
    good, _ = _stacks(7, noise=0.05)
    assert power_tuned_lambda(*good) > 0.7
    (y, _, _), (a, b, _, _, w, ua, ub, _) = _stacks(8)
    rng = np.random.default_rng(8)
    coin = _matrices(a, b, np.full(a.size, 0.5), w, rng.integers(0, 40, a.size), 40)
    everywhere = _matrices(ua, ub, np.full(ua.size, 0.5), np.ones(ua.size),
                           rng.integers(0, 40, ua.size), 40)  # fmt: skip
    assert power_tuned_lambda(y, coin, everywhere) < 0.05


def test_no_judges_means_people_alone() -> None:
    (y, fl, fu), _ = _stacks(9)
    assert power_tuned_lambda(y, fl, np.zeros_like(fu)) == 0.0
    assert power_tuned_lambda(y[:1], fl[:1], fu[:1]) == 0.0  # one conversation: no spread


def test_bootstrap_narrows_people_and_keeps_their_point() -> None:
    stacks, _ = _stacks(11, noise=0.05)
    lam = power_tuned_lambda(*stacks)
    boot = bootstrap_assisted(*stacks, lam, rounds=300, seed=2)
    assert boot.assisted_rounds.shape == (300, K)
    assisted = boot.high - boot.low
    alone = boot.alone_high - boot.alone_low
    assert np.all(assisted < alone)
    # at λ = 0 the two bootstraps are the same fits
    zero = bootstrap_assisted(*stacks, 0.0, rounds=50, seed=2)
    np.testing.assert_allclose(zero.assisted_rounds, zero.alone_rounds, atol=1e-6)


def test_a_rectified_share_outside_zero_one_takes_the_guard() -> None:
    # people: a always beat b; the judges said b on those points and a elsewhere, so the
    # rectified share of a exceeds one and the loss has no minimum without the guard
    y = np.array([[[0.0, 2.0], [0.0, 0.0]]])
    fl = np.array([[[0.0, 0.0], [2.0, 0.0]]])
    fu = np.array([[[0.0, 1.0], [1.0, 0.0]]])
    theta, guarded = fit_assisted(y, fl, fu, 1.0)
    assert guarded and np.all(np.isfinite(theta))
