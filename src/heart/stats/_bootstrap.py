"""Bootstrap of Bradley–Terry Elo that resamples whole conversations."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heart.stats._bradley_terry import (
    _as_wins,
    _newton,
    _ridges,
    elo_from_theta,
)
from heart.stats._intervals import _check_level, percentile_interval
from heart.stats._types import FloatArray


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Elo per bootstrap round and its percentile interval.

    ``elo_rounds[r, i]`` is NaN when system i had no comparison in round r; ``separated_rounds``
    counts rounds that needed the separation guard.
    """

    elo_rounds: FloatArray
    low: FloatArray
    high: FloatArray
    level: float
    rounds: int
    separated_rounds: int


def bootstrap_by_conversation(
    per_conversation_wins: FloatArray,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    ridge: float | None = None,
) -> BootstrapResult:
    """Percentile interval for Elo from resampling conversations with replacement.

    ``per_conversation_wins`` is (C, K, K), one weighted win matrix per conversation. Each round
    draws multinomial counts over conversations (numpy PCG64 seeded by ``seed``), sums the
    matrices with those counts and refits; all rounds go through one batched Newton fit, each
    with the rules of ``fit_bradley_terry`` (``ridge=None``: guard only where separated).
    """
    _check_level(level)
    if rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds}")
    w = _as_wins(per_conversation_wins, 3)
    c, k, _ = w.shape
    if c < 1:
        raise ValueError("per_conversation_wins must hold at least one conversation")
    rng = np.random.Generator(np.random.PCG64(seed))
    counts = rng.multinomial(c, np.full(c, 1.0 / c), size=rounds).astype(np.float64)
    replicates = (counts @ w.reshape(c, k * k)).reshape(rounds, k, k)
    lam, separated = _ridges(replicates, ridge)
    theta, _, _ = _newton(replicates, lam, tol=1e-10, max_iter=200)
    present = (replicates.sum(axis=1) + replicates.sum(axis=2)) > 0
    elo = elo_from_theta(theta)
    elo[~present] = np.nan
    low, high = percentile_interval(elo, level)
    return BootstrapResult(
        elo_rounds=elo,
        low=low,
        high=high,
        level=level,
        rounds=rounds,
        separated_rounds=int(separated.sum()),
    )
