"""Honest intervals and ranks when a system met others in few conversations.

A percentile bootstrap over C conversations is too narrow for small C: it ignores that C
clusters estimate their own spread, roughly as a normal interval does beside Student's t with
C − 1 degrees of freedom, and its variance is short by a factor (C − 1)/C. The correction scales
each side of the interval by sqrt(C/(C − 1))·t(C − 1)/z, the usual small-cluster adjustment.
Ranks follow Chatbot Arena's rule: 1 + the number of systems whose interval lies wholly above.
"""

from __future__ import annotations

import numpy as np
from scipy.stats import norm
from scipy.stats import t as student_t

from heart.stats._intervals import _check_level
from heart.stats._types import BoolArray, FloatArray, IntArray


def few_conversations_factor(conversations: IntArray, level: float = 0.95) -> FloatArray:
    """Per system, how much wider its interval must be when it rests on ``conversations``
    clusters: sqrt(C/(C − 1))·t_{C−1}/z at ``level``; NaN below 2 (no spread to measure)."""
    _check_level(level)
    c = np.asarray(conversations, dtype=np.float64)
    q = 0.5 + level / 2.0
    out = np.full(c.shape, np.nan)
    ok = c >= 2
    df = c[ok] - 1.0
    out[ok] = np.sqrt(c[ok] / df) * student_t.ppf(q, df) / norm.ppf(q)
    return out


def widen(
    estimate: FloatArray, low: FloatArray, high: FloatArray, factor: FloatArray
) -> tuple[FloatArray, FloatArray]:
    """Each interval's sides stretched away from its estimate by ``factor``."""
    e = np.asarray(estimate, dtype=np.float64)
    f = np.asarray(factor, dtype=np.float64)
    return e - f * (e - np.asarray(low)), e + f * (np.asarray(high) - e)


def clearly_above(low: FloatArray, high: FloatArray) -> BoolArray:
    """[i, j]: system i's interval lies wholly above system j's (NaN intervals: never)."""
    lo = np.asarray(low, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        above: BoolArray = lo[:, None] > hi[None, :]
    return above


def tied_ranks(low: FloatArray, high: FloatArray) -> IntArray:
    """Arena's rank: 1 + the number of systems whose interval lies wholly above this one's.
    Systems whose intervals overlap can share a rank; a system with no interval gets 0 (not
    ranked) and places no one below it."""
    lo = np.asarray(low, dtype=np.float64)
    hi = np.asarray(high, dtype=np.float64)
    known = np.isfinite(lo) & np.isfinite(hi)
    ranks: IntArray = np.where(known, 1 + clearly_above(lo, hi).sum(axis=0), 0)
    return ranks
