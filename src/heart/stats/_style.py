"""Style-controlled Bradley–Terry: system strengths fitted together with style covariates (how
much longer, more questioning, more formatted or more stock-warm one reply is than the other),
so that a win bought with style is credited to the style, not to the system."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt
from scipy.special import expit

from heart.stats._bradley_terry import (
    SEPARATION_RIDGE,
    bradley_terry_mle_exists,
    elo_from_theta,
)
from heart.stats._types import BoolArray, FloatArray, IntArray

_MAX_HALVINGS = 60
COLLINEAR = 1e-9
"""A feature whose z-scores the system terms and earlier features reproduce to within this share
of their norm adds nothing the fit could identify, and is dropped."""


def style_differences(values_a: npt.ArrayLike, values_b: npt.ArrayLike) -> FloatArray:
    """Normalised difference (a − b)/(a + b + 1) of non-negative counts, element by element:
    in (−1, 1), zero when both replies agree, and the same whichever is called a (up to sign)."""
    a = np.asarray(values_a, dtype=np.float64)
    b = np.asarray(values_b, dtype=np.float64)
    if a.shape != b.shape:
        raise ValueError(
            f"style values of a and b must have the same shape, got {a.shape}, {b.shape}"
        )
    if not (np.all(np.isfinite(a)) and np.all(np.isfinite(b))) or np.any(a < 0) or np.any(b < 0):
        raise ValueError("style values must be finite non-negative counts")
    d: FloatArray = (a - b) / (a + b + 1.0)
    return d


@dataclass(frozen=True, eq=False)
class StyleDesign:
    """The comparisons reduced to distinct rows (same conversation, systems and style), ready to
    fit: ``x`` holds the system terms (+1 for a, −1 for b) and then the kept features' z-scores,
    ``won_a``/``won_b`` the weight each side won, ``conversation`` each row's conversation.
    ``scale`` is each kept feature's spread (the root mean square of its differences: its
    standard deviation over the comparisons taken in both orders); ``dropped`` names each
    feature left out and why."""

    x: FloatArray
    won_a: FloatArray
    won_b: FloatArray
    conversation: IntArray
    n_systems: int
    features: tuple[str, ...]
    scale: FloatArray
    dropped: tuple[tuple[str, str], ...]

    def wins(self, row_weight: FloatArray | None = None) -> FloatArray:
        """The K×K weighted win matrix behind the rows (each row's weights times ``row_weight``)."""
        k = self.n_systems
        a = np.argmax(self.x[:, :k] > 0, axis=1)
        b = np.argmax(self.x[:, :k] < 0, axis=1)
        scale = np.ones(self.won_a.size) if row_weight is None else row_weight
        w = np.bincount(a * k + b, weights=self.won_a * scale, minlength=k * k)
        w = w + np.bincount(b * k + a, weights=self.won_b * scale, minlength=k * k)
        wins: FloatArray = w.reshape(k, k).astype(np.float64)
        return wins


def style_design(
    a: IntArray,
    b: IntArray,
    outcome: IntArray,
    weight: FloatArray | None,
    n_systems: int,
    style_a: npt.ArrayLike,
    style_b: npt.ArrayLike,
    features: Sequence[str],
    conversation: IntArray | None = None,
) -> StyleDesign:
    """Build the design of a style-controlled fit from one row per comparison.

    ``outcome`` is 0 when a won, 1 when b won, 2 for a tie (half the weight to each side);
    ``weight`` the verdict's strength (default 1); ``style_a``/``style_b`` (n, F) the replies'
    counts of each of ``features``. Each feature enters as its normalised difference
    (``style_differences``) divided by its spread over the comparisons in both orders: a z-score
    whose mean is zero by symmetry, so the result does not depend on which reply is called a and
    the scaling adds no hidden first-reply term. A feature that never differs, or that the system
    terms and the features before it already determine, is dropped and named in ``dropped``.
    """
    aa, bb = np.asarray(a).reshape(-1), np.asarray(b).reshape(-1)
    n = aa.size
    out = np.asarray(outcome).reshape(-1)
    if bb.size != n or out.size != n:
        raise ValueError(f"a, b and outcome must have one entry per comparison ({n})")
    if n_systems < 1:
        raise ValueError(f"n_systems must be a positive integer, got {n_systems}")
    if n and (min(aa.min(), bb.min()) < 0 or max(aa.max(), bb.max()) >= n_systems):
        raise ValueError(f"system indices must lie in [0, {n_systems - 1}]")
    if np.any(aa == bb):
        raise ValueError(
            f"row {int(np.flatnonzero(aa == bb)[0])}: a system is compared with itself"
        )
    if not np.all(np.isin(out, (0, 1, 2))):
        raise ValueError("outcome must be 0 (a won), 1 (b won) or 2 (tie)")
    w = np.ones(n) if weight is None else np.asarray(weight, dtype=np.float64).reshape(-1)
    if w.size != n or not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError(f"weight must hold {n} finite non-negative values")
    names = tuple(features)
    sa = np.asarray(style_a, dtype=np.float64).reshape(n, len(names))
    sb = np.asarray(style_b, dtype=np.float64).reshape(n, len(names))
    conv = np.zeros(n, dtype=np.int64) if conversation is None else np.asarray(conversation)
    if conv.shape != (n,):
        raise ValueError(f"conversation must label the {n} comparisons")

    won_a = np.where(out == 0, w, np.where(out == 2, 0.5 * w, 0.0))
    won_b = np.where(out == 1, w, np.where(out == 2, 0.5 * w, 0.0))
    diff = style_differences(sa, sb)
    # One row per conversation, systems in order and style differences, counted: the checks
    # below weigh each by how many comparisons it stands for, as if they were repeated.
    first, inverse = _distinct_rows(np.column_stack([conv, aa, bb, diff]))
    repeats = np.bincount(inverse, minlength=first.size).astype(np.float64)
    won = np.bincount(inverse, weights=won_a, minlength=first.size).astype(np.float64)
    lost = np.bincount(inverse, weights=won_b, minlength=first.size).astype(np.float64)
    conv, aa, bb, diff = conv[first], aa[first], bb[first], diff[first]
    m = first.size
    system = np.zeros((m, n_systems))
    system[np.arange(m), aa] = 1.0
    system[np.arange(m), bb] = -1.0
    spread = np.sqrt(repeats @ (diff * diff) / n) if n else np.zeros(len(names))
    root = np.sqrt(repeats)[:, None]
    kept: list[int] = []
    dropped: list[tuple[str, str]] = []
    for j, name in enumerate(names):
        if not spread[j] > 0:
            dropped.append((name, "the same in both replies of every comparison"))
            continue
        column = root[:, 0] * diff[:, j] / spread[j]
        basis = root * np.hstack([system, diff[:, kept] / spread[kept]])
        fitted = basis @ np.linalg.lstsq(basis, column, rcond=None)[0]
        if np.linalg.norm(column - fitted) <= COLLINEAR * np.linalg.norm(column):
            dropped.append((name, "determined by the systems compared and the other features"))
            continue
        kept.append(j)
    x = np.hstack([system, diff[:, kept] / spread[kept]])
    if len(kept) < len(names):  # rows that differ only in a dropped feature are one row
        first, inverse = _distinct_rows(np.column_stack([conv, aa, bb, diff[:, kept]]))
        won = np.bincount(inverse, weights=won, minlength=first.size).astype(np.float64)
        lost = np.bincount(inverse, weights=lost, minlength=first.size).astype(np.float64)
        x, conv = x[first], conv[first]
    used = won + lost > 0
    return StyleDesign(
        x=np.ascontiguousarray(x[used]),
        won_a=won[used],
        won_b=lost[used],
        conversation=conv[used].astype(np.int64),
        n_systems=n_systems,
        features=tuple(names[j] for j in kept),
        scale=spread[kept],
        dropped=tuple(dropped),
    )


def _distinct_rows(key: FloatArray) -> tuple[IntArray, IntArray]:
    """The first row of each distinct row of ``key``, in sorted order, and each row's place
    among them: the rows of one conversation, pair of systems in one order and style
    differences are one row of the design."""
    n = key.shape[0]
    order = np.lexsort(key.T[::-1]) if n else np.zeros(0, dtype=np.int64)
    ordered = key[order]
    new = np.ones(n, dtype=bool)
    new[1:] = np.any(ordered[1:] != ordered[:-1], axis=1)
    inverse = np.empty(n, dtype=np.int64)
    inverse[order] = np.cumsum(new) - 1
    first: IntArray = order[new]
    return first, inverse


def _log_likelihood(
    beta: FloatArray, x: FloatArray, won_a: FloatArray, total: FloatArray, ridge: float
) -> tuple[float, FloatArray]:
    """The penalised log-likelihood and the linear predictor it was computed at:
    won_a·log σ(η) + won_b·log σ(−η) = won_a·η − (won_a + won_b)·log(1 + e^η)."""
    eta = x @ beta
    ll = won_a @ eta - total @ np.logaddexp(0.0, eta)
    return float(ll - 0.5 * ridge * beta @ beta), eta


def _gauge(compared: BoolArray, width: int, ridge: float) -> FloatArray:
    """What a Newton step adds to the information matrix: J = 11ᵀ/K_c on the compared systems
    (their mean is not identified), identity for the others, and the ridge on every
    coefficient."""
    gauge: FloatArray = _gauges(compared[None], width, np.array([ridge]))[0]
    return gauge


def _gauges(compared: BoolArray, width: int, ridge: FloatArray) -> FloatArray:
    """``_gauge`` for R fits at once: ``compared`` (R, K) and ``ridge`` (R,)."""
    c = compared.astype(np.float64)
    rounds, k = c.shape
    gauge = np.zeros((rounds, width, width))
    share = c / np.maximum(c.sum(axis=1, keepdims=True), 1.0)
    gauge[:, :k, :k] = c[:, :, None] * share[:, None, :]
    diagonal = np.arange(width)
    gauge[:, diagonal, diagonal] += ridge[:, None]
    gauge[:, diagonal[:k], diagonal[:k]] += 1.0 - c
    return gauge


def _newton(
    design: StyleDesign,
    row_weight: FloatArray,
    ridge: float,
    start: FloatArray,
    tol: float,
    max_iter: int,
) -> tuple[FloatArray, int, bool]:
    """Maximise Σ r·(won_a log σ(xβ) + won_b log σ(−xβ)) − (ridge/2)·|β|² by Newton–Raphson
    with step-halving, the gauge of the system terms pinned as in the plain fit (a J = 11ᵀ/K_c
    block on the compared systems, identity for the others). θ is returned centred."""
    k = design.n_systems
    on = row_weight > 0  # rows a resample left out weigh nothing
    x, row = design.x[on], row_weight[on]
    wa = design.won_a[on] * row
    total = wa + design.won_b[on] * row
    compared: BoolArray = np.asarray((np.abs(x[:, :k]) > 0).any(axis=0))
    gauge = _gauge(compared, x.shape[1], ridge)
    beta = np.where(np.concatenate([compared, np.ones(x.shape[1] - k, dtype=bool)]), start, 0.0)
    value, eta = _log_likelihood(beta, x, wa, total, ridge)
    converged = False
    iterations = 0
    while iterations < max_iter:
        iterations += 1
        p = expit(eta)
        grad = x.T @ (wa - total * p) - ridge * beta
        info = x.T @ (x * (total * p * (1.0 - p))[:, None])
        try:
            step = np.linalg.solve(info + gauge, grad)
        except np.linalg.LinAlgError:  # a feature the rows do not identify: not converged
            break
        slack = 1e-13 * (1.0 + abs(value))
        scale, cand = 1.0, beta + step
        new, new_eta = _log_likelihood(cand, x, wa, total, ridge)
        for _ in range(_MAX_HALVINGS):
            if new >= value - slack:
                break
            scale *= 0.5
            cand = beta + scale * step
            new, new_eta = _log_likelihood(cand, x, wa, total, ridge)
        else:
            cand, new, new_eta = beta, value, eta
        done = np.abs(step).max() <= tol * (1.0 + np.abs(beta).max())
        beta, value, eta = cand, new, new_eta
        if done:
            converged = True
            break
    theta = beta[:k]
    beta[:k] = np.where(compared, theta - theta[compared].mean() if compared.any() else 0.0, 0.0)
    return beta, iterations, converged


@dataclass(frozen=True, eq=False)
class StyleControlledFit:
    """A style-controlled Bradley–Terry fit: θ and Elo per system (on the plain fit's scale and
    anchor), and per kept feature its coefficient, the log-odds of winning bought by one spread
    (one z unit) of the normalised difference. ``dropped`` names the features left out and why;
    ``separated``: the ridge guard was needed."""

    theta: FloatArray
    elo: FloatArray
    features: tuple[str, ...]
    coefficients: FloatArray
    scale: FloatArray
    dropped: tuple[tuple[str, str], ...]
    ridge_used: float
    separated: bool
    iterations: int
    converged: bool
    compared: BoolArray


def fit_style_design(
    design: StyleDesign,
    *,
    ridge: float | None = None,
    anchor: BoolArray | None = None,
    tol: float = 1e-10,
    max_iter: int = 200,
    row_weight: FloatArray | None = None,
    start: FloatArray | None = None,
) -> StyleControlledFit:
    """Fit a :class:`StyleDesign` by maximum likelihood. With ``ridge=None`` the separation
    guard of the plain fit applies: ridge 0 where the win graph is strongly connected, else
    ``SEPARATION_RIDGE`` on every coefficient (also when the unpenalised search does not
    converge, as when a feature alone separates the outcomes or a resample leaves one
    unidentified)."""
    r = np.ones(design.won_a.size) if row_weight is None else row_weight
    width = design.x.shape[1]
    begin = np.zeros(width) if start is None else start
    wins = design.wins(r)
    exists = bool(bradley_terry_mle_exists(wins[None])[0])
    lam = (0.0 if exists else SEPARATION_RIDGE) if ridge is None else float(ridge)
    if not (np.isfinite(lam) and lam >= 0):
        raise ValueError(f"ridge must be finite and non-negative, got {ridge!r}")
    beta, iterations, converged = _newton(design, r, lam, begin, tol, max_iter)
    if ridge is None and lam == 0.0 and not converged:
        lam = SEPARATION_RIDGE
        beta, iterations, converged = _newton(design, r, lam, begin, tol, max_iter)
    k = design.n_systems
    compared = (wins.sum(axis=0) + wins.sum(axis=1)) > 0
    return StyleControlledFit(
        theta=beta[:k],
        elo=elo_from_theta(beta[:k], anchor),
        features=design.features,
        coefficients=beta[k:],
        scale=design.scale,
        dropped=design.dropped,
        ridge_used=lam,
        separated=lam > 0 and ridge is None,
        iterations=iterations,
        converged=converged,
        compared=compared,
    )


def fit_style_controlled(
    a: IntArray,
    b: IntArray,
    outcome: IntArray,
    weight: FloatArray | None,
    n_systems: int,
    style_a: npt.ArrayLike,
    style_b: npt.ArrayLike,
    features: Sequence[str],
    *,
    ridge: float | None = None,
    anchor: BoolArray | None = None,
) -> StyleControlledFit:
    """Bradley–Terry with style covariates, Pr(a beats b) = σ(θa − θb + Σ_f γ_f·z_f), from one
    row per comparison (see ``style_design`` for the inputs and the features' scaling). Ties
    and strengths count as in the plain fit; Elo uses its scale and ``anchor``."""
    design = style_design(a, b, outcome, weight, n_systems, style_a, style_b, features)
    return fit_style_design(design, ridge=ridge, anchor=anchor)
