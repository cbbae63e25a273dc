"""Factor structure of a set of scores: parallel analysis for the number of factors, maximum-
likelihood exploratory factor analysis with an oblimin rotation, regression factor scores,
Cronbach's α, and conversation-bootstrap intervals for α and for correlations."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import minimize
from scipy.stats import wishart

from heart.stats._intervals import _check_level, percentile_interval
from heart.stats._types import FloatArray, IntArray

PARALLEL_PERCENTILE = 95.0
"""Parallel analysis keeps a factor while its eigenvalue beats this percentile of random data's."""
PARALLEL_DRAWS = 1000
MIN_UNIQUENESS = 0.005
"""The lowest uniqueness the maximum-likelihood fit may reach (a Heywood case sits on it)."""


def _as_scores(scores: FloatArray, min_rows: int = 2) -> FloatArray:
    x = np.asarray(scores, dtype=np.float64)
    if x.ndim != 2 or x.shape[1] < 2:
        raise ValueError(f"scores must have shape (observations, variables >= 2), got {x.shape}")
    if x.shape[0] < min_rows:
        raise ValueError(f"need at least {min_rows} observations, got {x.shape[0]}")
    if not np.all(np.isfinite(x)):
        raise ValueError("scores must be finite (leave out observations with a missing score)")
    return x


def _as_correlation(correlation: FloatArray) -> FloatArray:
    r = np.asarray(correlation, dtype=np.float64)
    if r.ndim != 2 or r.shape[0] != r.shape[1] or r.shape[0] < 2:
        raise ValueError(
            f"correlation must be a square matrix of 2 variables or more, got {r.shape}"
        )
    if not np.all(np.isfinite(r)) or not np.allclose(r, r.T) or not np.allclose(np.diag(r), 1.0):
        raise ValueError("correlation must be finite and symmetric with ones on the diagonal")
    return r


def standardise(scores: FloatArray) -> FloatArray:
    """Each column as z-scores (mean 0, SD 1 with n − 1); a column with no spread is an error."""
    x = _as_scores(scores)
    sd = x.std(axis=0, ddof=1)
    flat = np.flatnonzero(~(sd > 0)).tolist()
    if flat:
        raise ValueError(f"columns {flat} have no spread, so they have no z-scores")
    z: FloatArray = np.asarray((x - x.mean(axis=0)) / sd, dtype=np.float64)
    return z


# --- how many factors ----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class ParallelAnalysis:
    """Eigenvalues of the observed correlation matrix (largest first) against the same
    percentile of the eigenvalues of random, uncorrelated data of the same shape; ``factors``
    counts the leading observed eigenvalues that beat their threshold."""

    eigenvalues: FloatArray
    thresholds: FloatArray
    factors: int
    percentile: float
    draws: int
    observations: int


def correlation_eigenvalues(correlation: FloatArray) -> FloatArray:
    """Eigenvalues of a correlation matrix, largest first."""
    values = np.asarray(np.linalg.eigvalsh(_as_correlation(correlation))[::-1], dtype=np.float64)
    return values


def random_correlation_eigenvalues(
    observations: int, variables: int, *, draws: int = PARALLEL_DRAWS, seed: int = 0
) -> FloatArray:
    """(draws, variables) eigenvalues, largest first, of the correlation matrices of
    ``observations`` × ``variables`` independent normal data.

    Each draw takes the data's centred cross-product matrix straight from its distribution,
    Wishart(observations − 1, I) (Bartlett's construction, seeded PCG64): the same correlation
    matrix as simulating the data, at a cost that does not grow with ``observations``.
    """
    if observations < variables + 1:
        raise ValueError(f"need more observations ({observations}) than variables ({variables})")
    if draws < 1:
        raise ValueError(f"draws must be a positive integer, got {draws}")
    rng = np.random.Generator(np.random.PCG64(seed))
    cross = np.asarray(
        wishart(df=observations - 1, scale=np.eye(variables)).rvs(size=draws, random_state=rng)
    ).reshape(draws, variables, variables)
    sd = np.sqrt(np.einsum("dii->di", cross))
    corr = cross / sd[:, :, None] / sd[:, None, :]
    values: FloatArray = np.linalg.eigvalsh(corr)[:, ::-1]
    return values


def parallel_analysis(
    scores: FloatArray,
    *,
    draws: int = PARALLEL_DRAWS,
    percentile: float = PARALLEL_PERCENTILE,
    seed: int = 0,
) -> ParallelAnalysis:
    """Horn's parallel analysis on the correlation matrix of ``scores`` (observations,
    variables): keep the leading factors whose eigenvalue exceeds the ``percentile`` of the
    same-rank eigenvalue of random data (Glorfeld's 95th rather than Horn's mean)."""
    x = _as_scores(scores, min_rows=3)
    if not 0.0 < percentile < 100.0:
        raise ValueError(f"percentile must lie strictly between 0 and 100, got {percentile}")
    n, p = x.shape
    observed = correlation_eigenvalues(np.asarray(np.corrcoef(x, rowvar=False)))
    thresholds: FloatArray = np.percentile(
        random_correlation_eigenvalues(n, p, draws=draws, seed=seed), percentile, axis=0
    )
    beaten = observed > thresholds
    factors = p if beaten.all() else int(np.argmin(beaten))
    return ParallelAnalysis(observed, thresholds, factors, percentile, draws, n)


def max_factors(variables: int) -> int:
    """The most factors a maximum-likelihood fit of ``variables`` can identify: the model's
    degrees of freedom, ((p − m)² − (p + m)) / 2, must not be negative (2 for 5 variables)."""
    m = 0
    while ((variables - m - 1) ** 2 - (variables + m + 1)) >= 0:
        m += 1
    return m


# --- the factor model ----------------------------------------------------------------------


@dataclass(frozen=True, eq=False)
class FactorSolution:
    """An exploratory factor analysis of p variables with m factors.

    ``loadings`` (p, m) is the rotated pattern (for oblimin, the variable's regression on each
    factor), factors ordered by their sum of squared loadings and signed so that their
    loadings sum to a positive number; ``factor_correlation`` (m, m) Φ is the identity for one
    factor; ``heywood`` says some uniqueness sits on its lower bound.
    """

    loadings: FloatArray
    uniquenesses: FloatArray
    factor_correlation: FloatArray
    rotation: str
    converged: bool
    heywood: bool

    @property
    def factors(self) -> int:
        return int(self.loadings.shape[1])

    @property
    def communalities(self) -> FloatArray:
        """The share of each variable's variance the factors explain: 1 − uniqueness."""
        out: FloatArray = 1.0 - self.uniquenesses
        return out

    @property
    def structure(self) -> FloatArray:
        """Correlations of the variables with the factors: pattern · Φ."""
        out: FloatArray = self.loadings @ self.factor_correlation
        return out


def _ml_parts(psi: FloatArray, r: FloatArray, m: int) -> tuple[FloatArray, FloatArray]:
    """Eigenvalues (ascending) and vectors of Ψ^-1/2 R Ψ^-1/2, and the loadings they give."""
    scale = 1.0 / np.sqrt(psi)
    values, vectors = np.linalg.eigh(r * scale[:, None] * scale[None, :])
    top, top_vectors = values[::-1][:m], vectors[:, ::-1][:, :m]
    loadings = np.sqrt(psi)[:, None] * top_vectors * np.sqrt(np.maximum(top - 1.0, 0.0))
    return values, loadings


def _ml_discrepancy(psi: FloatArray, r: FloatArray, m: int) -> float:
    """The maximum-likelihood discrepancy at uniquenesses ψ, loadings profiled out (Jöreskog)."""
    values, _ = _ml_parts(psi, r, m)
    rest = values[: r.shape[0] - m]
    return float(-(np.sum(np.log(rest) - rest) - m + r.shape[0]))


def _ml_gradient(psi: FloatArray, r: FloatArray, m: int) -> FloatArray:
    _, loadings = _ml_parts(psi, r, m)
    residual = loadings @ loadings.T + np.diag(psi) - r
    out: FloatArray = np.diag(residual) / psi**2
    return out


def _quartimin(loadings: FloatArray) -> tuple[float, FloatArray]:
    """Direct quartimin (oblimin with γ = 0): the criterion and its gradient in the loadings."""
    squared = loadings**2
    others = squared @ (np.ones((loadings.shape[1],) * 2) - np.eye(loadings.shape[1]))
    return float(np.sum(squared * others) / 4.0), loadings * others


def oblimin_rotation(
    loadings: FloatArray, *, tol: float = 1e-8, max_iter: int = 1000
) -> tuple[FloatArray, FloatArray, bool]:
    """Rotate ``loadings`` (p, m) obliquely to direct quartimin (oblimin, γ = 0) by gradient
    projection (Bernaards and Jennrich 2005), started at no rotation and with no Kaiser
    normalisation (as R's GPArotation and statsmodels do).

    Returns the pattern loadings, the factor correlations Φ and whether it converged.
    """
    a = np.asarray(loadings, dtype=np.float64)
    m = a.shape[1]
    t = np.eye(m)
    if m == 1:
        return a.copy(), np.eye(1), True
    rotated = a.copy()
    value, grad_q = _quartimin(rotated)
    inverse = np.eye(m)
    gradient = -(rotated.T @ grad_q @ inverse).T
    step, converged = 1.0, False
    for _ in range(max_iter):
        projected = gradient - t @ np.diag(np.sum(t * gradient, axis=0))
        size = float(np.linalg.norm(projected))
        if size < tol:
            converged = True
            break
        step *= 2.0
        for _ in range(11):
            x = t - step * projected
            candidate = x / np.sqrt(np.sum(x**2, axis=0))
            inverse = np.linalg.inv(candidate)
            rotated = a @ inverse.T
            new_value, grad_q = _quartimin(rotated)
            if new_value < value - 0.5 * size**2 * step:
                break
            step /= 2.0
        t, value = candidate, new_value
        gradient = -(rotated.T @ grad_q @ inverse).T
    return rotated, t.T @ t, converged


def fit_factor_analysis(correlation: FloatArray, factors: int) -> FactorSolution:
    """Maximum-likelihood exploratory factor analysis of a correlation matrix with ``factors``
    factors, rotated by oblimin (direct quartimin) when there are two or more.

    The uniquenesses minimise the maximum-likelihood discrepancy with the loadings profiled out
    (Jöreskog's method, as R's factanal: L-BFGS-B from (1 − m/2p)/diag(R⁻¹), uniquenesses
    bounded to [0.005, 1]). The correlation matrix must be positive definite.
    """
    r = _as_correlation(correlation)
    p = r.shape[0]
    if not 1 <= factors <= max_factors(p):
        raise ValueError(
            f"factors must lie in [1, {max_factors(p)}] for {p} variables, got {factors}"
        )
    if np.linalg.eigvalsh(r)[0] <= 1e-10:
        raise ValueError("the correlation matrix is singular: some variables are collinear")
    start = (1.0 - 0.5 * factors / p) / np.diag(np.linalg.inv(r))
    result = minimize(
        _ml_discrepancy,
        np.clip(start, MIN_UNIQUENESS, 1.0),
        args=(r, factors),
        jac=_ml_gradient,
        method="L-BFGS-B",
        bounds=[(MIN_UNIQUENESS, 1.0)] * p,
        options={"maxiter": 1000, "ftol": 1e-12, "gtol": 1e-10},
    )
    psi = np.asarray(result.x, dtype=np.float64)
    _, unrotated = _ml_parts(psi, r, factors)
    pattern, phi, rotated_ok = oblimin_rotation(unrotated)
    order = np.argsort(-np.sum(pattern**2, axis=0), kind="stable")
    signs = np.where(pattern[:, order].sum(axis=0) < 0, -1.0, 1.0)
    pattern = pattern[:, order] * signs
    phi = phi[np.ix_(order, order)] * np.outer(signs, signs)
    return FactorSolution(
        loadings=pattern,
        uniquenesses=psi,
        factor_correlation=phi,
        rotation="oblimin" if factors > 1 else "none",
        converged=bool(result.success) and rotated_ok,
        heywood=bool(np.any(psi <= MIN_UNIQUENESS * (1 + 1e-6))),
    )


def factor_scores(z: FloatArray, correlation: FloatArray, solution: FactorSolution) -> FloatArray:
    """Regression (Thurstone) factor scores of standardised data ``z`` (n, p): z · R⁻¹ · Λ · Φ,
    the least-squares prediction of each factor from the variables."""
    weights = np.linalg.solve(_as_correlation(correlation), solution.structure)
    out: FloatArray = np.asarray(z, dtype=np.float64) @ weights
    return out


# --- reliability ---------------------------------------------------------------------------


def _alpha_from_covariance(covariance: FloatArray) -> FloatArray:
    """Cronbach's α of each (..., k, k) covariance matrix: k/(k−1)·(1 − Σ var / var of sum)."""
    c = np.asarray(covariance, dtype=np.float64)
    k = c.shape[-1]
    items = np.trace(c, axis1=-2, axis2=-1)
    total = c.sum(axis=(-2, -1))
    out: FloatArray = (k / (k - 1)) * (
        1.0 - np.divide(items, total, out=np.full(np.shape(total), np.nan), where=total > 0)
    )
    return out


def cronbach_alpha(scores: FloatArray) -> float:
    """Cronbach's α of the columns (items) of ``scores`` (observations, items): k/(k − 1) ·
    (1 − Σ item variances / variance of the row sums). On z-scores it is the standardised α,
    k·r̄ / (1 + (k − 1)·r̄). NaN when the row sums do not vary."""
    x = _as_scores(scores)
    return float(_alpha_from_covariance(np.cov(x, rowvar=False)))


def alpha_if_dropped(scores: FloatArray) -> FloatArray:
    """Cronbach's α of the other items, each item left out in turn (NaN with under 3 items)."""
    x = _as_scores(scores)
    k = x.shape[1]
    if k < 3:
        return np.full(k, np.nan)
    cov = np.cov(x, rowvar=False)
    keep = ~np.eye(k, dtype=bool)
    return np.asarray(
        [_alpha_from_covariance(cov[np.ix_(keep[i], keep[i])]) for i in range(k)], dtype=np.float64
    )


# --- intervals from resampling conversations -----------------------------------------------


def _round_covariances(
    values: FloatArray, conversation: IntArray, rounds: int, seed: int
) -> FloatArray:
    """(rounds, q, q) covariance matrices of the columns of ``values`` (n, q), each round drawing
    conversations with replacement (multinomial counts, PCG64 seeded) and weighting every row
    by its conversation's count. NaN where a round holds fewer than two rows."""
    v = np.asarray(values, dtype=np.float64)
    conv = np.asarray(conversation).reshape(-1)
    if v.ndim != 2 or conv.size != v.shape[0]:
        raise ValueError(
            f"conversation must give one index per row ({v.shape[0]}), got {conv.size}"
        )
    if not np.issubdtype(conv.dtype, np.integer) or (conv.size and conv.min() < 0):
        raise ValueError("conversation must hold non-negative integer indices")
    if rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds}")
    _, conv = np.unique(conv, return_inverse=True)
    c, q = int(conv.max()) + 1 if conv.size else 0, v.shape[1]
    centred = v - v.mean(axis=0)
    rows = np.bincount(conv, minlength=c).astype(np.float64)
    sums = np.zeros((c, q))
    np.add.at(sums, conv, centred)
    products = np.zeros((c, q * q))
    np.add.at(products, conv, (centred[:, :, None] * centred[:, None, :]).reshape(-1, q * q))
    rng = np.random.Generator(np.random.PCG64(seed))
    counts = rng.multinomial(c, np.full(c, 1.0 / c), size=rounds).astype(np.float64)
    n = counts @ rows
    mean = (counts @ sums) / np.where(n > 1, n, np.nan)[:, None]
    second = (counts @ products).reshape(rounds, q, q)
    cov = (second - n[:, None, None] * mean[:, :, None] * mean[:, None, :]) / (n - 1)[:, None, None]
    cov[n < 2] = np.nan
    out: FloatArray = cov
    return out


def bootstrap_alpha_by_conversation(
    scores: FloatArray,
    conversation: IntArray,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of Cronbach's α when the conversations the rows belong to are
    resampled with replacement (all rounds at once)."""
    _check_level(level)
    x = _as_scores(scores)
    alphas = _alpha_from_covariance(_round_covariances(x, conversation, rounds, seed))
    low, high = percentile_interval(alphas[:, None], level)
    return float(low[0]), float(high[0])


def bootstrap_correlations_by_conversation(
    x: FloatArray,
    y: FloatArray,
    conversation: IntArray,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Pearson r of each column of ``x`` (n, q) with ``y`` (n,), and its percentile interval
    when the conversations the rows belong to are resampled with replacement (all rounds at
    once). NaN where a column or ``y`` does not vary."""
    _check_level(level)
    xs = np.asarray(x, dtype=np.float64)
    xs = xs[:, None] if xs.ndim == 1 else xs
    ys = np.asarray(y, dtype=np.float64).reshape(-1)
    if xs.ndim != 2 or xs.shape[0] != ys.size:
        raise ValueError(f"x must have one row per value of y ({ys.size}), got shape {xs.shape}")
    if not (np.all(np.isfinite(xs)) and np.all(np.isfinite(ys))):
        raise ValueError("x and y must be finite")
    values = np.column_stack([xs, ys])
    full = _correlations_with_last(np.cov(values, rowvar=False)[None])[0]
    rounds_r = _correlations_with_last(_round_covariances(values, conversation, rounds, seed))
    low, high = percentile_interval(rounds_r, level)
    return full, low, high


def _correlations_with_last(cov: FloatArray) -> FloatArray:
    """(rounds, q) correlations of the first q variables with the last, from (rounds, q+1, q+1)."""
    sd = np.sqrt(np.einsum("rii->ri", cov))
    with np.errstate(invalid="ignore", divide="ignore"):
        r = cov[:, :-1, -1] / (sd[:, :-1] * sd[:, -1:])
    out: FloatArray = np.where(np.isfinite(r), np.clip(r, -1.0, 1.0), np.nan)
    return out
