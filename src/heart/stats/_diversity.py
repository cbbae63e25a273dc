"""How varied a group of replies is in its use of support strategies.

Input is a (replies, strategies) boolean matrix: ``used[n, s]`` says reply n uses strategy s.
Usage rates are shares of replies; their SD and range are in percentage points, as in the paper
(population SD: the strategies are the whole taxonomy, not a sample of it); entropy is in bits.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heart.stats._types import BoolArray, FloatArray


def _matrix(used: BoolArray) -> BoolArray:
    u = np.asarray(used)
    if u.ndim != 2:
        raise ValueError(f"used must be a (replies, strategies) matrix, got shape {u.shape}")
    if u.dtype != np.bool_:
        raise ValueError(f"used must be boolean, got {u.dtype}")
    return u


def usage_rates(used: BoolArray) -> FloatArray:
    """Per strategy, the share of replies that use it (NaN when there are no replies)."""
    u = _matrix(used)
    if u.shape[0] == 0:
        return np.full(u.shape[1], np.nan)
    rates: FloatArray = u.mean(axis=0, dtype=np.float64)
    return rates


def coverage(used: BoolArray) -> int:
    """How many strategies at least one reply uses."""
    return int(_matrix(used).any(axis=0).sum())


def mean_unique(used: BoolArray) -> float:
    """The mean number of distinct strategies per reply (NaN when there are no replies)."""
    u = _matrix(used)
    return float(u.sum(axis=1).mean()) if u.shape[0] else float("nan")


def usage_entropy(used: BoolArray) -> float:
    """Shannon entropy, in bits, of how the group's strategy uses spread over the strategies:
    each strategy's count of uses over all uses. 0 when one strategy takes every use, log2(S)
    when all S are used equally; NaN when nothing is used."""
    counts = _matrix(used).sum(axis=0).astype(np.float64)
    total = counts.sum()
    if total == 0:
        return float("nan")
    p = counts[counts > 0] / total
    return float((p * np.log2(1.0 / p)).sum())


def rate_spread(rates: FloatArray) -> tuple[float, float]:
    """The population SD and the range (max − min) of usage rates, in percentage points."""
    points = 100.0 * np.asarray(rates, dtype=np.float64)
    if points.size == 0 or np.isnan(points).any():
        return float("nan"), float("nan")
    return float(points.std(ddof=0)), float(points.max() - points.min())


@dataclass(frozen=True, eq=False)
class Diversity:
    """A group of replies' strategy use: ``rates`` per strategy (shares), ``coverage`` (of
    ``strategies``), mean distinct strategies per reply, entropy in bits, and the population SD
    and range of the rates in percentage points."""

    replies: int
    strategies: int
    uses: FloatArray  # replies using each strategy
    rates: FloatArray
    coverage: int
    mean_unique: float
    entropy_bits: float
    sd_points: float
    range_points: float


def strategy_diversity(used: BoolArray) -> Diversity:
    """Every figure of a group's strategy use, from its (replies, strategies) matrix."""
    u = _matrix(used)
    rates = usage_rates(u)
    sd, spread = rate_spread(rates)
    return Diversity(
        replies=u.shape[0],
        strategies=u.shape[1],
        uses=u.sum(axis=0).astype(np.float64),
        rates=rates,
        coverage=coverage(u),
        mean_unique=mean_unique(u),
        entropy_bits=usage_entropy(u),
        sd_points=sd,
        range_points=spread,
    )
