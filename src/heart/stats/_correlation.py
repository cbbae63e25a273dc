"""Correlations across systems (Pearson with a Fisher z interval, Spearman with a bootstrap over
systems), a least-squares line, and the median and quartiles of a sample."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from heart.stats._bootstrap import conversation_draws
from heart.stats._intervals import _check_level, percentile_interval
from heart.stats._types import FloatArray

FISHER_Z = "Fisher z"
SYSTEM_BOOTSTRAP = "bootstrap over systems"


@dataclass(frozen=True)
class Correlation:
    """A correlation of ``n`` pairs with its ``level`` interval (``interval`` names the method)
    and its two-sided p-value (t test of no correlation). NaN where it is undefined: fewer than
    3 pairs, or one side constant. A bootstrap interval counts the ``rounds`` drawn and the
    ``undefined_rounds`` whose resample held one distinct value on a side (left out)."""

    method: str  # "pearson" or "spearman"
    estimate: float
    low: float
    high: float
    p_value: float
    n: int
    level: float
    interval: str
    rounds: int = 0
    undefined_rounds: int = 0


def _pairs(x: FloatArray, y: FloatArray) -> tuple[FloatArray, FloatArray]:
    a = np.asarray(x, dtype=np.float64).reshape(-1)
    b = np.asarray(y, dtype=np.float64).reshape(-1)
    if a.shape != b.shape:
        raise ValueError(f"x and y must have the same length, got {a.size} and {b.size}")
    if not (np.isfinite(a).all() and np.isfinite(b).all()):
        raise ValueError("x and y must be finite")
    return a, b


def _pearson(a: FloatArray, b: FloatArray) -> float:
    da, db = a - a.mean(), b - b.mean()
    ss = float(np.sqrt((da @ da) * (db @ db)))
    return float(np.clip((da @ db) / ss, -1.0, 1.0)) if ss > 0 else math.nan


def _t_test(r: float, n: int) -> float:
    """Two-sided p-value of r under no correlation: t = r·√((n−2)/(1−r²)) on n−2 degrees."""
    if math.isnan(r) or n < 3:
        return math.nan
    if abs(r) == 1.0:
        return 0.0
    t = r * math.sqrt((n - 2) / (1.0 - r * r))
    return float(2.0 * student_t.sf(abs(t), n - 2))


def pearson_correlation(x: FloatArray, y: FloatArray, level: float = 0.95) -> Correlation:
    """Pearson's r with the Fisher z interval tanh(atanh r ± z/√(n−3)) (it needs n ≥ 4)."""
    _check_level(level)
    a, b = _pairs(x, y)
    n = a.size
    r = _pearson(a, b) if n >= 3 else math.nan
    low = high = math.nan
    if n >= 4 and not math.isnan(r):
        if abs(r) == 1.0:
            low = high = r
        else:
            half = float(norm.ppf(0.5 + level / 2.0)) / math.sqrt(n - 3)
            low, high = math.tanh(math.atanh(r) - half), math.tanh(math.atanh(r) + half)
    return Correlation("pearson", r, low, high, _t_test(r, n), n, level, FISHER_Z)


def _midranks(values: FloatArray, counts: FloatArray) -> FloatArray:
    """Per bootstrap round (rows of ``counts``), the average rank each distinct position would
    take in the resample that repeats value i counts[r, i] times."""
    below = (values[None, :] < values[:, None]).astype(np.float64)  # [i, j]: x_j < x_i
    equal = (values[None, :] == values[:, None]).astype(np.float64)
    ranks: FloatArray = counts @ below.T + (counts @ equal.T + 1.0) / 2.0
    return ranks


def spearman_rounds(x: FloatArray, y: FloatArray, counts: FloatArray) -> FloatArray:
    """Spearman's ρ of each resample, given as (rounds, n) counts of how often each pair is
    drawn (ties take their average rank, as in scipy); NaN where a side has one distinct value."""
    a, b = _pairs(x, y)
    w = np.asarray(counts, dtype=np.float64)
    if w.ndim != 2 or w.shape[1] != a.size:
        raise ValueError(f"counts must have shape (rounds, {a.size}), got {w.shape}")
    ra, rb = _midranks(a, w), _midranks(b, w)
    total = w.sum(axis=1, keepdims=True)
    da = ra - (w * ra).sum(axis=1, keepdims=True) / total
    db = rb - (w * rb).sum(axis=1, keepdims=True) / total
    cov = (w * da * db).sum(axis=1)
    ss = np.sqrt((w * da * da).sum(axis=1) * (w * db * db).sum(axis=1))
    # a resample with one distinct value on a side has a spread of (numerically) zero
    defined = ss > 1e-9 * np.maximum(total[:, 0], 1.0) ** 3
    rho = np.full(w.shape[0], np.nan)
    rho[defined] = np.clip(cov[defined] / ss[defined], -1.0, 1.0)
    return rho


def spearman_correlation(
    x: FloatArray, y: FloatArray, *, rounds: int = 1000, seed: int = 0, level: float = 0.95
) -> Correlation:
    """Spearman's ρ with a percentile interval from resampling the pairs (systems) with
    replacement: ``rounds`` multinomial draws from numpy's PCG64 seeded by ``seed``; rounds
    whose resample leaves a side with one distinct value are left out and counted."""
    _check_level(level)
    a, b = _pairs(x, y)
    n = a.size
    if n < 3:
        return Correlation("spearman", math.nan, math.nan, math.nan, math.nan, n, level,
                           SYSTEM_BOOTSTRAP)  # fmt: skip
    rho = float(spearman_rounds(a, b, np.ones((1, n)))[0])
    if math.isnan(rho):
        return Correlation("spearman", rho, math.nan, math.nan, math.nan, n, level,
                           SYSTEM_BOOTSTRAP)  # fmt: skip
    per_round = spearman_rounds(a, b, conversation_draws(n, rounds=rounds, seed=seed))
    low, high = percentile_interval(per_round[:, None], level)
    undefined = int(np.isnan(per_round).sum())
    return Correlation("spearman", rho, float(low[0]), float(high[0]), _t_test(rho, n), n, level,
                       SYSTEM_BOOTSTRAP, rounds, undefined)  # fmt: skip


def least_squares_line(x: FloatArray, y: FloatArray) -> tuple[float, float]:
    """Slope and intercept of the ordinary least-squares line of y on x (NaN when x is
    constant or there are fewer than 2 points)."""
    a, b = _pairs(x, y)
    if a.size < 2:
        return math.nan, math.nan
    da = a - a.mean()
    spread = float(da @ da)
    if spread == 0:
        return math.nan, math.nan
    slope = float(da @ (b - b.mean())) / spread
    return slope, float(b.mean() - slope * a.mean())


def median_and_quartiles(values: FloatArray) -> tuple[float, float, float]:
    """Median, first and third quartile (numpy's default linear interpolation, Hyndman–Fan
    type 7, as R and pandas); NaNs when there is no value."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    if v.size == 0:
        return math.nan, math.nan, math.nan
    q1, median, q3 = np.percentile(v, [25.0, 50.0, 75.0])
    return float(median), float(q1), float(q3)
