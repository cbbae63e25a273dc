"""Interval formulas on the Elo scale."""

from __future__ import annotations

import numpy as np
from scipy.stats import norm

from heart.stats._bradley_terry import ELO_SCALE, elo_from_theta
from heart.stats._types import BoolArray, FloatArray, IntArray


def _check_level(level: float) -> None:
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")


def paper_interval(
    theta: FloatArray,
    n_comparisons: IntArray | FloatArray,
    level: float = 0.95,
    anchor: BoolArray | None = None,
) -> tuple[FloatArray, FloatArray]:
    """The paper's asymptotic Elo interval: θi ± z·SE with SE = sqrt(1/n_i) on the θ scale.

    n_i is the number of comparisons involving system i. Reported as the paper's formula only:
    it ignores clustering by conversation, outcome weights and the covariance between θs.
    A system with no comparisons gets (-inf, inf). ``anchor``: as in ``elo_from_theta``.
    """
    _check_level(level)
    elo = elo_from_theta(theta, anchor)
    n = np.asarray(n_comparisons, dtype=np.float64)
    if n.shape != elo.shape:
        raise ValueError(f"n_comparisons must have shape {elo.shape}, got {n.shape}")
    if np.any(n < 0):
        raise ValueError("n_comparisons must be non-negative")
    se = np.divide(1.0, np.sqrt(n), out=np.full(n.shape, np.inf), where=n > 0)
    half = float(norm.ppf(0.5 + level / 2.0)) * ELO_SCALE * se
    return elo - half, elo + half


def percentile_interval(samples: FloatArray, level: float = 0.95) -> tuple[FloatArray, FloatArray]:
    """Equal-tailed percentile interval per column of ``samples`` (rounds, K), NaNs skipped.

    A column with no finite value gets (nan, nan).
    """
    _check_level(level)
    s = np.asarray(samples, dtype=np.float64)
    q = [50.0 * (1.0 - level), 50.0 * (1.0 + level)]
    low = np.full(s.shape[1:], np.nan)
    high = np.full(s.shape[1:], np.nan)
    finite = np.isfinite(s)
    if finite.all():
        low, high = np.percentile(s, q, axis=0)
        return low, high
    for j in np.flatnonzero(finite.any(axis=0)):
        low[j], high[j] = np.percentile(s[finite[:, j], j], q)
    return low, high
