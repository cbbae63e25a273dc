"""A first look at judge position bias: how often the reply shown first wins, per judge."""

from __future__ import annotations

import math
from dataclasses import dataclass

from heart.analyses._comparisons import Comparisons

FLAG_SHARE = 0.7


@dataclass(frozen=True)
class PositionCheck:
    judge: str
    judgments: int
    first_wins: float
    low: float
    high: float
    flagged: bool


def wilson_interval(successes: int, n: int, level: float = 0.95) -> tuple[float, float]:
    """The Wilson score interval of a proportion."""
    if n == 0:
        return (math.nan, math.nan)
    from scipy.stats import norm

    z = float(norm.ppf(0.5 + level / 2))
    p = successes / n
    centre = (p + z * z / (2 * n)) / (1 + z * z / n)
    half = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / (1 + z * z / n)
    return (centre - half, centre + half)


def position_checks(comparisons: Comparisons) -> list[PositionCheck]:
    """Per judge, the share of non-tie verdicts won by the first-shown reply, with a flag when
    the interval excludes one half and the share is beyond 70/30."""
    checks = []
    for j, judge in enumerate(comparisons.judges):
        mask = (comparisons.judge == j) & (comparisons.outcome != 2)
        n = int(mask.sum())
        wins = int(comparisons.first_won[mask].sum())
        low, high = wilson_interval(wins, n)
        share = wins / n if n else math.nan
        flagged = n > 0 and (low > 0.5 or high < 0.5) and abs(share - 0.5) >= FLAG_SHARE - 0.5
        checks.append(PositionCheck(judge, n, share, low, high, bool(flagged)))
    return checks


__all__ = ["PositionCheck", "position_checks", "wilson_interval"]
