"""Coverage of the conversation-bootstrap interval over simulated studies with known strengths.

Each study has K=6 systems with true θ ~ N(0, 0.5²), C=60 conversations and all 15 pairs judged
once per conversation with a strength 1–5 drawn independently of the outcome. Within a
conversation each system's strength is θ plus a N(0, 0.3²) effect shared by its five
comparisons there, so outcomes cluster by conversation; the population truth is θ.
"""

from __future__ import annotations

import itertools
import time
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
import pytest
from numpy.polynomial.hermite_e import hermegauss
from scipy.special import expit

from heart.stats import (
    bootstrap_by_conversation,
    elo_from_theta,
    fit_bradley_terry,
    paper_interval,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

SYSTEMS = 6
CONVERSATIONS = 60
STUDIES = 200
ROUNDS = 1000
THETA_SD = 0.5
CONVERSATION_SD = 0.3
SEED = 20240917
PAIRS = np.array(list(itertools.combinations(range(SYSTEMS), 2)))


@dataclass(frozen=True)
class Study:
    theta: FloatArray
    per_conversation_wins: FloatArray
    n_comparisons: IntArray


def simulate_study(seed: int) -> Study:
    """One study: true θ, then per conversation a random effect per system and all pairs."""
    rng = np.random.default_rng([SEED, seed])
    theta = rng.normal(0.0, THETA_SD, SYSTEMS)
    local = theta + rng.normal(0.0, CONVERSATION_SD, (CONVERSATIONS, SYSTEMS))
    a, b = PAIRS[:, 0], PAIRS[:, 1]
    a_won = rng.random((CONVERSATIONS, a.size)) < expit(local[:, a] - local[:, b])
    strength = rng.integers(1, 6, a_won.shape).astype(np.float64)
    winner = np.where(a_won, a, b)
    loser = np.where(a_won, b, a)
    conversation = np.arange(CONVERSATIONS)[:, None]
    cell = (conversation * SYSTEMS + winner) * SYSTEMS + loser
    flat = np.bincount(
        cell.ravel(), weights=strength.ravel(), minlength=CONVERSATIONS * SYSTEMS * SYSTEMS
    )
    n_comparisons = np.bincount(winner.ravel(), minlength=SYSTEMS) + np.bincount(
        loser.ravel(), minlength=SYSTEMS
    )
    return Study(theta, flat.reshape(CONVERSATIONS, SYSTEMS, SYSTEMS), n_comparisons)


def population_target(theta: FloatArray) -> FloatArray:
    """θ that the weighted fit converges to as conversations grow without bound.

    Strengths are independent of outcomes, so the limit fits Pr(i beats j) averaged over the
    difference of the two random effects, N(0, 2·sd²), computed by Gauss–Hermite quadrature.
    The nonlinearity of σ pulls this slightly towards zero compared with θ.
    """
    nodes, weights = hermegauss(40)
    weights = weights / weights.sum()
    spread = np.sqrt(2.0) * CONVERSATION_SD * nodes
    gap = theta[:, None, None] - theta[None, :, None]
    beat = (expit(gap + spread) * weights).sum(axis=-1)
    return fit_bradley_terry(beat).theta


@dataclass(frozen=True)
class Coverage:
    """Per case (study × system): the truth, both intervals and the population target."""

    true_elo: FloatArray
    target_elo: FloatArray
    boot_low: FloatArray
    boot_high: FloatArray
    paper_low: FloatArray
    paper_high: FloatArray
    separated_rounds: int
    seconds: float


def covered(truth: FloatArray, low: FloatArray, high: FloatArray) -> float:
    return float(np.mean((low <= truth) & (truth <= high)))


@pytest.fixture(scope="module")
def coverage() -> Coverage:
    start = time.perf_counter()
    rows: dict[str, list[FloatArray]] = {
        key: [] for key in ("true", "target", "boot_low", "boot_high", "paper_low", "paper_high")
    }
    separated = 0
    for study_index in range(STUDIES):
        study = simulate_study(study_index)
        fit = fit_bradley_terry(study.per_conversation_wins.sum(axis=0))
        boot = bootstrap_by_conversation(
            study.per_conversation_wins, rounds=ROUNDS, seed=study_index
        )
        paper_low, paper_high = paper_interval(fit.theta, study.n_comparisons)
        rows["true"].append(elo_from_theta(study.theta))
        rows["target"].append(elo_from_theta(population_target(study.theta)))
        rows["boot_low"].append(boot.low)
        rows["boot_high"].append(boot.high)
        rows["paper_low"].append(paper_low)
        rows["paper_high"].append(paper_high)
        separated += boot.separated_rounds
    stacked = {key: np.concatenate(value) for key, value in rows.items()}
    return Coverage(
        true_elo=stacked["true"],
        target_elo=stacked["target"],
        boot_low=stacked["boot_low"],
        boot_high=stacked["boot_high"],
        paper_low=stacked["paper_low"],
        paper_high=stacked["paper_high"],
        separated_rounds=separated,
        seconds=time.perf_counter() - start,
    )


def test_population_target_sits_well_inside_the_interval_width(coverage: Coverage) -> None:
    bias = np.abs(coverage.target_elo - coverage.true_elo)
    half_width = (coverage.boot_high - coverage.boot_low) / 2.0
    share = bias / half_width
    print(
        f"\nattenuation of the population target: mean {bias.mean():.2f} Elo, "
        f"max {bias.max():.2f} Elo; as a share of the bootstrap half-width "
        f"(median {np.median(half_width):.1f} Elo): mean {share.mean():.3f}, "
        f"max {share.max():.3f}"
    )
    assert share.mean() < 0.1
    assert share.max() < 0.35


def test_conversation_bootstrap_covers_the_true_elo_about_95_percent(coverage: Coverage) -> None:
    cases = coverage.true_elo.size
    boot = covered(coverage.true_elo, coverage.boot_low, coverage.boot_high)
    target = covered(coverage.target_elo, coverage.boot_low, coverage.boot_high)
    print(
        f"\nbootstrap 95% interval coverage of the true Elo: {boot:.3f} over {cases} cases "
        f"({STUDIES} studies, {ROUNDS} rounds each; of the population target: {target:.3f}; "
        f"separated rounds: {coverage.separated_rounds}; {coverage.seconds:.1f} s)"
    )
    assert cases == STUDIES * SYSTEMS
    assert 0.92 <= boot <= 0.98


def test_paper_interval_coverage_is_reported(coverage: Coverage) -> None:
    paper = covered(coverage.true_elo, coverage.paper_low, coverage.paper_high)
    width = np.median(coverage.paper_high - coverage.paper_low)
    boot_width = np.median(coverage.boot_high - coverage.boot_low)
    print(
        f"\npaper interval (SE = sqrt(1/n)) coverage of the true Elo: {paper:.3f} "
        f"(median width {width:.1f} Elo against the bootstrap's {boot_width:.1f} Elo)"
    )
    assert 0.0 <= paper <= 1.0
