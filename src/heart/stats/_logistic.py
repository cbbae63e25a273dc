"""Logistic regression by maximum likelihood (Newton–Raphson), with Wald intervals from the
model-based or the cluster-robust (sandwich) covariance."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import expit
from scipy.stats import norm

from heart.stats._intervals import _check_level
from heart.stats._types import FloatArray

MAX_COEFFICIENT = 15.0
"""A coefficient beyond this (odds beyond e^15) means the data separate the outcomes: the
estimate runs off to infinity, and the fit is reported as separated instead."""


@dataclass(frozen=True)
class LogisticFit:
    """Coefficients (log-odds), standard errors, Wald intervals and two-sided p-values, one per
    column of the design. ``separated``: the outcomes are (quasi-)separated, so the estimates and
    intervals are NaN. ``clusters``: the number of clusters of a cluster-robust fit (0: none)."""

    coef: FloatArray
    se: FloatArray
    low: FloatArray
    high: FloatArray
    p_value: FloatArray
    n: int
    clusters: int
    iterations: int
    separated: bool


def _nan_fit(k: int, n: int, clusters: int, iterations: int) -> LogisticFit:
    nan = np.full(k, np.nan)
    return LogisticFit(nan, nan, nan, nan, nan, n, clusters, iterations, True)


def fit_logistic(
    design: npt.ArrayLike,
    outcome: npt.ArrayLike,
    *,
    clusters: npt.ArrayLike | None = None,
    level: float = 0.95,
    max_iter: int = 100,
    tol: float = 1e-10,
) -> LogisticFit:
    """Pr(y = 1) = σ(Xβ), fitted by Newton–Raphson from β = 0.

    ``design`` (n, k) holds the columns (an intercept column included by the caller), ``outcome``
    (n,) zeros and ones. Without ``clusters`` the covariance is the inverse information; with
    ``clusters`` (n,) labels it is the sandwich H⁻¹ (Σ_g s_g s_gᵀ) H⁻¹ over the clusters' summed
    scores, times G/(G − 1) · (n − 1)/(n − k), the small-sample correction statsmodels applies.
    Intervals are β ± z·SE. ValueError when the design is rank-deficient.
    """
    _check_level(level)
    x = np.asarray(design, dtype=np.float64)
    y = np.asarray(outcome, dtype=np.float64).reshape(-1)
    if x.ndim != 2 or x.shape[0] != y.size:
        raise ValueError(f"design must be (n, k) with n = {y.size} outcomes, got {x.shape}")
    if not np.all((y == 0) | (y == 1)):
        raise ValueError("outcome must hold only zeros and ones")
    n, k = x.shape
    if n <= k or np.linalg.matrix_rank(x) < k:
        raise ValueError(f"the design's {k} columns are not independent over {n} rows")
    groups: npt.NDArray[np.int64] | None = None
    n_clusters = 0
    if clusters is not None:
        labels = np.asarray(clusters).reshape(-1)
        if labels.size != n:
            raise ValueError(f"clusters must label the {n} rows, got {labels.size}")
        _, groups = np.unique(labels, return_inverse=True)
        n_clusters = int(groups.max()) + 1
    beta = np.zeros(k)
    iterations = 0
    converged = False
    for iterations in range(1, max_iter + 1):
        p = expit(x @ beta)
        weight = p * (1.0 - p)
        info = x.T @ (x * weight[:, None])
        try:
            step = np.linalg.solve(info, x.T @ (y - p))
        except np.linalg.LinAlgError:
            return _nan_fit(k, n, n_clusters, iterations)
        beta = beta + step
        if not np.all(np.isfinite(beta)) or np.max(np.abs(beta)) > MAX_COEFFICIENT:
            return _nan_fit(k, n, n_clusters, iterations)
        if np.max(np.abs(step)) < tol:
            converged = True
            break
    if not converged:
        return _nan_fit(k, n, n_clusters, iterations)
    p = expit(x @ beta)
    info = x.T @ (x * (p * (1.0 - p))[:, None])
    bread = np.linalg.inv(info)
    if groups is None:
        cov = bread
    else:
        scores = np.zeros((n_clusters, k))
        np.add.at(scores, groups, x * (y - p)[:, None])
        correction = n_clusters / max(n_clusters - 1, 1) * (n - 1) / (n - k)
        cov = correction * bread @ (scores.T @ scores) @ bread
    se = np.sqrt(np.clip(np.diag(cov), 0.0, None))
    z = float(norm.ppf(0.5 + level / 2.0))
    with np.errstate(divide="ignore", invalid="ignore"):
        p_value = 2.0 * norm.sf(np.abs(beta / se))
    return LogisticFit(beta, se, beta - z * se, beta + z * se, p_value, n, n_clusters,
                       iterations, False)  # fmt: skip
