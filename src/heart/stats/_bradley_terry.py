"""Weighted Bradley–Terry by Newton–Raphson on aggregated win matrices, with a separation guard."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from heart.stats._types import BoolArray, FloatArray, IntArray

SEPARATION_RIDGE = 0.1
"""Ridge used when the MLE does not exist: penalty (0.1/2)·Σθ², a N(0, 10) prior on each θ."""

ELO_SCALE = 400.0 / math.log(10.0)
ELO_BASE = 1500.0

_MAX_HALVINGS = 60


@dataclass(frozen=True, eq=False)
class BradleyTerryFit:
    """A fitted Bradley–Terry model.

    ``theta`` is on the natural-log scale with mean zero; ``compared`` marks systems that took
    part in at least one comparison (the others get θ = 0, i.e. Elo 1500, by convention).
    """

    theta: FloatArray
    elo: FloatArray
    ridge_used: float
    separated: bool
    iterations: int
    converged: bool
    compared: BoolArray


def elo_from_theta(theta: FloatArray, anchor: BoolArray | None = None) -> FloatArray:
    """Elo = 400·(θ − mean θ)/ln 10 + 1500, along the last axis; with ``anchor`` (a mask over
    the last axis) the mean is taken over the anchored systems only, so the others sit on the
    same scale without moving it."""
    t = np.asarray(theta, dtype=np.float64)
    mean = t.mean(axis=-1, keepdims=True) if anchor is None else _anchor_mean(t, anchor)
    centred: FloatArray = t - mean
    return ELO_SCALE * centred + ELO_BASE


def _anchor_mean(theta: FloatArray, anchor: BoolArray) -> FloatArray:
    mask = np.asarray(anchor, dtype=bool)
    if mask.shape != theta.shape[-1:] or not mask.any():
        raise ValueError(
            f"anchor must mask the {theta.shape[-1]} systems and hold at least one, "
            f"got shape {mask.shape}"
        )
    mean: FloatArray = theta[..., mask].mean(axis=-1, keepdims=True)
    return mean


def _as_wins(wins: FloatArray, ndim: int) -> FloatArray:
    """Validated copy of a win matrix (or stack of them) with the diagonal zeroed."""
    w = np.array(wins, dtype=np.float64)
    if w.ndim != ndim or w.shape[-1] != w.shape[-2]:
        shape = "K×K" if ndim == 2 else "R×K×K"
        raise ValueError(f"wins must have shape {shape}, got {w.shape}")
    if not np.all(np.isfinite(w)) or np.any(w < 0):
        raise ValueError("wins must be finite and non-negative")
    k = w.shape[-1]
    if k < 1:
        raise ValueError("wins must cover at least one system")
    w[..., np.arange(k), np.arange(k)] = 0.0
    return w


def bradley_terry_mle_exists(wins: FloatArray) -> BoolArray:
    """Whether the unpenalised MLE exists, per K×K matrix in a stack (R, K, K).

    Zermelo/Ford condition: the directed graph with an edge i→j whenever W[i, j] > 0 must be
    strongly connected among the systems that were compared at all.
    """
    w = np.asarray(wins, dtype=np.float64)
    k = w.shape[-1]
    beat = w > 0
    beat[..., np.arange(k), np.arange(k)] = False
    compared: BoolArray = np.asarray(beat.any(axis=-1) | beat.any(axis=-2))
    reach = (beat | np.eye(k, dtype=bool)).astype(np.float32)
    span = 1
    while span < k - 1:  # after s squarings, paths of length up to 2**s are covered
        reach = (np.matmul(reach, reach) > 0).astype(np.float32)
        span *= 2
    must = compared[..., :, None] & compared[..., None, :]
    return np.asarray(np.all((reach > 0) | ~must, axis=(-2, -1)))


def _log_likelihood(theta: FloatArray, wins: FloatArray, ridge: FloatArray) -> FloatArray:
    """Penalised log-likelihood Σ W_ij log σ(θi − θj) − (ridge/2)·Σθ², per replicate."""
    diff = theta[:, :, None] - theta[:, None, :]
    ll = -(wins * np.logaddexp(0.0, -diff)).sum(axis=(1, 2))
    return np.asarray(ll - 0.5 * ridge * (theta * theta).sum(axis=1))


SURE_SPAN = 0.5
"""A Newton step s moving no logit difference by as much as this is uphill without a check:
along it each pair's curvature p(1 − p) grows at most by exp(max s − min s), so while that stays
under 2 the gain s·∇ outweighs the loss of the quadratic term (0.5 < ln 2 leaves room)."""


def _uphill(theta: FloatArray, step: FloatArray, wins: FloatArray, ridge: FloatArray) -> FloatArray:
    """θ + scale·step for the largest scale 1, 1/2, 1/4, … that does not lower the penalised
    log-likelihood (θ itself when none is found), per replicate."""
    f0 = _log_likelihood(theta, wins, ridge)
    slack = 1e-13 * (1.0 + np.abs(f0))
    scale = np.ones(theta.shape[0])
    cand = theta + step
    f1 = _log_likelihood(cand, wins, ridge)
    bad = ~(f1 >= f0 - slack)
    for _ in range(_MAX_HALVINGS):
        if not bad.any():
            break
        scale[bad] *= 0.5
        cand[bad] = theta[bad] + scale[bad, None] * step[bad]
        f1[bad] = _log_likelihood(cand[bad], wins[bad], ridge[bad])
        bad = ~(f1 >= f0 - slack)
    cand[bad] = theta[bad]  # no uphill step found: stay put
    return cand


def _newton(
    wins: FloatArray,
    ridge: FloatArray,
    tol: float,
    max_iter: int,
    start: FloatArray | None = None,
) -> tuple[FloatArray, IntArray, BoolArray]:
    """Maximise the penalised log-likelihood for each of R stacked matrices at once.

    ``start`` (K,), or (R, K) one per replicate, is where the search begins (default zero):
    the optimum is unique, so it changes only how many steps it takes.

    Newton steps solve (H + ridge·I + J)·δ = ∇, where H is the (Laplacian) negative Hessian and
    J = 11ᵀ/K_c on the compared systems pins the gauge (it does not change a step orthogonal to
    1, which every step is). Uncompared systems get an identity row and stay at θ = 0.
    Step-halving keeps each step uphill where it could go downhill (see ``SURE_SPAN``).
    """
    r, k, _ = wins.shape
    total = wins + wins.transpose(0, 2, 1)
    compared = total.sum(axis=2) > 0
    c = compared.astype(np.float64)
    n_c = np.maximum(c.sum(axis=1), 1.0)
    gauge = c[:, :, None] * c[:, None, :] / n_c[:, None, None]
    gauge[:, np.arange(k), np.arange(k)] += 1.0 - c + ridge[:, None]

    theta = np.zeros((r, k)) if start is None else np.where(compared, start.reshape(-1, k), 0.0)
    won = wins.sum(axis=2)
    iterations = np.zeros(r, dtype=np.int64)
    converged = np.zeros(r, dtype=bool)
    active = np.arange(r)
    diagonal = np.arange(k)
    for it in range(1, max_iter + 1):
        rows: slice | IntArray = slice(None) if active.size == r else active  # a view while all
        th, n, lam = theta[rows], total[rows], ridge[rows]
        p = expit(th[:, :, None] - th[:, None, :])
        hess = n * p
        grad = won[rows] - hess.sum(axis=2) - lam[:, None] * th
        hess *= 1.0 - p  # the curvature n·p(1 − p); the matrix is its Laplacian
        curvature = hess.sum(axis=2)
        np.negative(hess, out=hess)
        hess[:, diagonal, diagonal] += curvature
        hess += gauge[rows]
        step = np.linalg.solve(hess, grad[:, :, None])[:, :, 0]
        cand = th + step
        # A step that moves no pair's logit difference by SURE_SPAN or more is uphill for sure,
        # so only the others are checked (and halved while they go downhill).
        check = np.flatnonzero(step.max(axis=1) - step.min(axis=1) >= SURE_SPAN)
        if check.size:
            picked = active[check]
            cand[check] = _uphill(th[check], step[check], wins[picked], ridge[picked])

        # before θ moves: ``th`` is a view of it while every replicate is active
        done = np.abs(step).max(axis=1) <= tol * (1.0 + np.abs(th).max(axis=1))
        theta[rows] = cand
        iterations[rows] = it
        converged[active[done]] = True
        active = active[~done]
        if active.size == 0:
            break

    theta -= (theta * c).sum(axis=1, keepdims=True) / n_c[:, None] * c
    return theta, iterations, converged


def _ridges(wins: FloatArray, ridge: float | FloatArray | None) -> tuple[FloatArray, BoolArray]:
    """Per-replicate ridge (the guard where the MLE is missing) and the separation flags."""
    r = wins.shape[0]
    exists = bradley_terry_mle_exists(wins)
    if ridge is None:
        return np.where(exists, 0.0, SEPARATION_RIDGE), ~exists
    lam = np.broadcast_to(np.asarray(ridge, dtype=np.float64), (r,)).copy()
    if not np.all(np.isfinite(lam)) or np.any(lam < 0):
        raise ValueError(f"ridge must be finite and non-negative, got {ridge!r}")
    missing = (lam == 0) & ~exists
    if missing.any():
        raise ValueError(
            f"the maximum-likelihood estimate does not exist for {int(missing.sum())} of {r} "
            "win matrices (some system or group never loses or never wins against the rest); "
            "pass ridge=None for the separation guard or a positive ridge"
        )
    return lam, ~exists


def fit_bradley_terry(
    wins: FloatArray,
    *,
    ridge: float | None = None,
    tol: float = 1e-10,
    max_iter: int = 200,
) -> BradleyTerryFit:
    """Fit Pr(i beats j) = σ(θi − θj) to a K×K weighted win matrix by Newton–Raphson.

    Maximises Σ W_ij log σ(θi − θj) − (ridge/2)·Σθ²; θ is reported with mean zero.
    Separation guard: the MLE exists only if the "beat" graph (i→j when W[i, j] > 0) is
    strongly connected among the compared systems (Zermelo/Ford). With ``ridge=None`` the fit
    uses ridge 0 when it is, else ``SEPARATION_RIDGE`` = 0.1 (a weak N(0, 10) prior on each θ)
    and sets ``separated``. An explicit ``ridge=0`` on separated data raises ValueError.
    Systems with no comparisons get θ = 0 and ``compared[i] = False``. The diagonal is ignored.
    """
    w = _as_wins(wins, 2)[None]
    lam, separated = _ridges(w, ridge)
    theta, iterations, converged = _newton(w, lam, tol, max_iter)
    compared = (w[0].sum(axis=0) + w[0].sum(axis=1)) > 0
    return BradleyTerryFit(
        theta=theta[0],
        elo=elo_from_theta(theta[0]),
        ridge_used=float(lam[0]),
        separated=bool(separated[0]),
        iterations=int(iterations[0]),
        converged=bool(converged[0]),
        compared=compared,
    )


def fit_bradley_terry_batch(
    wins: FloatArray,
    *,
    ridge: float | FloatArray | None = None,
    tol: float = 1e-10,
    max_iter: int = 200,
) -> FloatArray:
    """θ (R, K) for R stacked win matrices (R, K, K), all fitted in one vectorised Newton loop.

    Same model and rules as ``fit_bradley_terry``: ``ridge`` is a float, one value per
    replicate, or None for the per-replicate separation guard. Each row equals the single fit.
    """
    w = _as_wins(wins, 3)
    lam, _ = _ridges(w, ridge)
    theta, _, _ = _newton(w, lam, tol, max_iter)
    return theta
