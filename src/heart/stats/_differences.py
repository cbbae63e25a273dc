"""Pairwise Elo differences with bootstrap intervals, p-values and a BH adjustment."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heart.stats._intervals import _check_level, percentile_interval
from heart.stats._multiple import benjamini_hochberg
from heart.stats._types import FloatArray


@dataclass(frozen=True)
class EloDifference:
    """Elo of system i minus Elo of system j, with its bootstrap evidence.

    ``low``/``high`` is the percentile interval of the difference over bootstrap rounds;
    ``p_value`` is two-sided; ``p_adjusted`` is Benjamini–Hochberg over all pairs of the call.
    ``clear`` is set by callers that also hold the two systems' own intervals: those lie apart.
    """

    i: int
    j: int
    difference: float
    low: float
    high: float
    p_value: float
    p_adjusted: float
    significant: bool
    clear: bool = False


def bootstrap_p_values(differences: FloatArray) -> FloatArray:
    """Two-sided bootstrap p-value of each column of ``differences`` (rounds, K):
    min(1, 2·min(share of rounds with d ≤ 0, share with d ≥ 0)) over the column's finite rounds;
    NaN for a column with none."""
    d = np.asarray(differences, dtype=np.float64)
    usable = np.isfinite(d)
    count = usable.sum(axis=0)
    at_most = (usable & (d <= 0.0)).sum(axis=0)
    at_least = (usable & (d >= 0.0)).sum(axis=0)
    p = np.full(d.shape[1:], np.nan)
    has = count > 0
    p[has] = np.minimum(1.0, 2.0 * np.minimum(at_most[has], at_least[has]) / count[has])
    return p


def elo_differences(
    elo: FloatArray, elo_rounds: FloatArray, level: float = 0.95, alpha: float = 0.05
) -> list[EloDifference]:
    """Every pair i < j of K systems: Elo difference, bootstrap interval and adjusted p-value.

    ``elo_rounds`` (R, K) holds bootstrap replicates of ``elo`` (K,), NaN where a system was
    absent. Per pair only rounds where both are finite count. The two-sided p-value is
    min(1, 2·min(share of rounds with d ≤ 0, share with d ≥ 0)); the K(K − 1)/2 p-values are one
    Benjamini–Hochberg family, and ``significant`` means p_adjusted < alpha. A pair with no
    usable round gets NaN interval and p-values and is not significant.
    """
    _check_level(level)
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    e = np.asarray(elo, dtype=np.float64)
    rounds = np.asarray(elo_rounds, dtype=np.float64)
    if e.ndim != 1:
        raise ValueError(f"elo must be one-dimensional (K,), got shape {e.shape}")
    k = e.size
    if rounds.ndim != 2 or rounds.shape[1] != k:
        raise ValueError(f"elo_rounds must have shape (R, {k}), got {rounds.shape}")
    if rounds.shape[0] < 1:
        raise ValueError("elo_rounds must hold at least one bootstrap round")

    first, second = np.triu_indices(k, 1)
    if first.size == 0:
        return []
    d = rounds[:, first] - rounds[:, second]
    p = bootstrap_p_values(d)
    low, high = percentile_interval(np.where(np.isfinite(d), d, np.nan), level)
    adjusted, _ = benjamini_hochberg(p, alpha)
    significant = adjusted < alpha
    diff = e[first] - e[second]
    return [
        EloDifference(
            i=int(first[n]),
            j=int(second[n]),
            difference=float(diff[n]),
            low=float(low[n]),
            high=float(high[n]),
            p_value=float(p[n]),
            p_adjusted=float(adjusted[n]),
            significant=bool(significant[n]),
        )
        for n in range(first.size)
    ]
