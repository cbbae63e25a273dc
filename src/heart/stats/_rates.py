"""Differences in usage rates between two groups of replies, per strategy, with intervals and
p-values from resampling conversations and a Benjamini–Hochberg adjustment across strategies."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from heart.stats._bootstrap import conversation_draws
from heart.stats._differences import bootstrap_p_values
from heart.stats._intervals import _check_level, percentile_interval
from heart.stats._multiple import benjamini_hochberg
from heart.stats._types import FloatArray


@dataclass(frozen=True)
class RateDifference:
    """Group a's usage rate of strategy ``index`` minus group b's (shares), with its bootstrap
    interval, two-sided p-value, and the p-value adjusted across all strategies of the call."""

    index: int
    rate_a: float
    rate_b: float
    difference: float
    low: float
    high: float
    p_value: float
    p_adjusted: float
    significant: bool


def _rates(uses: FloatArray, replies: FloatArray) -> FloatArray:
    """uses (..., S) over replies (...,): NaN where there are no replies."""
    n = replies[..., None]
    out: FloatArray = np.divide(uses, n, out=np.full(uses.shape, np.nan), where=n > 0)
    return out


def rate_differences_by_conversation(
    uses_a: FloatArray,
    replies_a: FloatArray,
    uses_b: FloatArray,
    replies_b: FloatArray,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    alpha: float = 0.05,
) -> list[RateDifference]:
    """Per strategy, a's usage rate minus b's, with evidence from resampling conversations.

    ``uses_x[c, s]`` counts group x's replies in conversation c that use strategy s and
    ``replies_x[c]`` its replies there (0 where the group has none). Each round draws
    conversations with replacement (``conversation_draws``; the same draw for both groups) and
    recomputes both rates; a round where either group has no reply is skipped. The S two-sided
    p-values are one Benjamini–Hochberg family; ``significant`` means p_adjusted < alpha.
    """
    _check_level(level)
    ua, ub = (np.asarray(x, dtype=np.float64) for x in (uses_a, uses_b))
    ra, rb = (np.asarray(x, dtype=np.float64) for x in (replies_a, replies_b))
    if ua.ndim != 2 or ua.shape != ub.shape or ra.shape != rb.shape or ra.shape != ua.shape[:1]:
        raise ValueError(
            "uses_a and uses_b must be (conversations, strategies) and replies_a and replies_b "
            f"(conversations,), got {ua.shape}, {ub.shape}, {ra.shape} and {rb.shape}"
        )
    if np.any(ua > ra[:, None]) or np.any(ub > rb[:, None]) or np.any(ua < 0) or np.any(ub < 0):
        raise ValueError("need 0 <= uses <= replies in every conversation")
    rate_a, rate_b = _rates(ua.sum(axis=0), ra.sum()), _rates(ub.sum(axis=0), rb.sum())
    draws = conversation_draws(ra.size, rounds=rounds, seed=seed)
    d = _rates(draws @ ua, draws @ ra) - _rates(draws @ ub, draws @ rb)
    low, high = percentile_interval(d, level)
    p = bootstrap_p_values(d)
    adjusted, _ = benjamini_hochberg(p, alpha)
    return [
        RateDifference(
            index=s,
            rate_a=float(rate_a[s]),
            rate_b=float(rate_b[s]),
            difference=float(rate_a[s] - rate_b[s]),
            low=float(low[s]),
            high=float(high[s]),
            p_value=float(p[s]),
            p_adjusted=float(adjusted[s]),
            significant=bool(adjusted[s] < alpha),
        )
        for s in range(ua.shape[1])
    ]
