"""Planning a study's size: the simulated studies' covariances against the single-board
sandwich, power by hand, and the search for the smallest size."""

from __future__ import annotations

import numpy as np
import pytest
from scipy.stats import norm

from heart.stats import (
    ELO_SCALE,
    assisted_covariance,
    board_covariances,
    cluster_robust_interval,
    fit_bradley_terry,
    gap_power,
    half_widths,
    resampled_counts,
    smallest_size,
)


def _pilot(conversations: int = 25, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    theta = np.array([0.5, 0.1, -0.2, -0.4])
    out = np.zeros((conversations, 4, 4))
    for c in range(conversations):
        shift = rng.normal(0, 0.3, 4)
        for a in range(4):
            for b in range(4):
                if a != b:
                    p = 1 / (1 + np.exp(-(theta[a] - theta[b] + shift[a] - shift[b])))
                    out[c, a, b] = rng.binomial(3, p)
    return out


def test_a_study_drawn_once_each_is_the_boards_own_sandwich() -> None:
    pilot = _pilot()
    covariance = board_covariances(pilot, np.ones((1, pilot.shape[0])))[0]
    fit = fit_bradley_terry(pilot.sum(axis=0))
    _, _, se = cluster_robust_interval(fit.theta, pilot)
    np.testing.assert_allclose(ELO_SCALE * np.sqrt(np.diag(covariance)), se, rtol=1e-8)


def test_people_alone_is_the_assisted_covariance_at_lambda_zero() -> None:
    pilot = _pilot(seed=3)
    judges = _pilot(seed=4)
    covariance = assisted_covariance(pilot, judges, judges, 0.0)
    expected = board_covariances(pilot, np.ones((1, pilot.shape[0])))[0]
    np.testing.assert_allclose(covariance, expected, rtol=1e-6, atol=1e-12)


def test_half_widths_and_power_by_hand() -> None:
    covariance = np.array([[[0.01, 0.002], [0.002, 0.02]]])
    z = norm.ppf(0.975)
    factor = np.sqrt(10 / 9) * 2.262157 / z  # t(9) over z, 10 conversations
    np.testing.assert_allclose(
        half_widths(covariance, 10, 0.95)[0],
        z * ELO_SCALE * np.sqrt([0.01, 0.02]) * factor, rtol=1e-5,
    )  # fmt: skip
    se = ELO_SCALE * np.sqrt(0.01 + 0.02 - 0.004)
    assert gap_power(covariance, 60.0, 0.95)[0] == pytest.approx(norm.cdf(60 / se - z))


def test_larger_studies_narrow_as_one_over_root_n() -> None:
    pilot = _pilot(40)
    rng = np.random.default_rng(1)
    small = board_covariances(pilot, resampled_counts(40, 100, 300, rng))
    large = board_covariances(pilot, resampled_counts(40, 400, 300, rng))
    ratio = np.median(np.diagonal(small, axis1=1, axis2=2) / np.diagonal(large, axis1=1, axis2=2))
    assert ratio == pytest.approx(4.0, rel=0.1)


def test_the_smallest_size_meeting_a_goal() -> None:
    assert smallest_size(lambda m: float(m >= 37), 0.8, 10) == 37
    assert smallest_size(lambda m: float(m >= 3), 0.8, 500) == 3
    assert smallest_size(lambda m: 0.0, 0.8, 10, cap=1000) is None
