"""Multiple-testing adjustment within a family of comparisons."""

from __future__ import annotations

import numpy as np

from heart.stats._types import BoolArray, FloatArray


def benjamini_hochberg(pvalues: FloatArray, alpha: float = 0.05) -> tuple[FloatArray, BoolArray]:
    """Benjamini–Hochberg step-up adjustment controlling the false discovery rate at ``alpha``.

    Returns (adjusted p-values, rejected), both shaped like ``pvalues``. The adjusted value of the
    k-th smallest of m p-values is min over l ≥ k of p_(l)·m/l (never above 1); the hypotheses
    rejected are the k smallest for the largest k with p_(k) ≤ k·alpha/m. NaN p-values stay NaN,
    are never rejected and do not count in m.
    """
    if not 0.0 < alpha < 1.0:
        raise ValueError(f"alpha must lie strictly between 0 and 1, got {alpha}")
    p = np.asarray(pvalues, dtype=np.float64)
    finite = ~np.isnan(p)
    values = p[finite]
    if np.any((values < 0.0) | (values > 1.0)):
        raise ValueError("p-values must lie in [0, 1] (or be NaN for a missing test)")

    adjusted = np.full(p.shape, np.nan)
    rejected = np.zeros(p.shape, dtype=bool)
    m = values.size
    if m == 0:
        return adjusted, rejected
    order = np.argsort(values, kind="stable")
    ranked = values[order]
    rank = np.arange(1, m + 1, dtype=np.float64)
    stepped = np.minimum.accumulate((ranked * m / rank)[::-1])[::-1]
    passing = np.flatnonzero(ranked <= rank / m * alpha)
    keep = np.zeros(m, dtype=bool)
    if passing.size:
        keep[: passing[-1] + 1] = True

    adj = np.empty(m)
    adj[order] = stepped
    rej = np.empty(m, dtype=bool)
    rej[order] = keep
    adjusted[finite] = adj
    rejected[finite] = rej
    return adjusted, rejected


def bonferroni_level(level: float, tests: int) -> float:
    """The confidence each of ``tests`` one-sided bounds needs for all of them to hold together
    at ``level`` (Bonferroni): 1 − (1 − level)/tests."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must lie strictly between 0 and 1, got {level}")
    if tests < 1:
        raise ValueError(f"tests must be a positive integer, got {tests}")
    return 1.0 - (1.0 - level) / tests
