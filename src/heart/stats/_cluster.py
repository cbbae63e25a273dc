"""Cluster-robust (sandwich) Elo interval for Bradley–Terry, with conversations as clusters."""

from __future__ import annotations

import numpy as np
from scipy.sparse.csgraph import connected_components
from scipy.special import expit
from scipy.stats import norm

from heart.stats._bradley_terry import ELO_SCALE, _as_wins, elo_from_theta
from heart.stats._intervals import _check_level
from heart.stats._types import BoolArray, FloatArray


def cluster_robust_interval(
    theta: FloatArray,
    per_conversation_wins: FloatArray,
    level: float = 0.95,
    anchor: BoolArray | None = None,
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Elo ± z·SE with the cluster-robust sandwich SE, clusters being conversations.

    ``theta`` (K,) is the weighted Bradley–Terry MLE and ``per_conversation_wins`` (C, K, K) the
    win matrices it was fitted to. Per conversation c the score is
    g_c[i] = Σ_j (W_c[i, j] − N_c[i, j]·p_ij) with N_c = W_c + W_cᵀ and p_ij = σ(θi − θj);
    the bread H is the negative Hessian (the Laplacian of N·p·(1 − p)). The covariance of θ
    centred over the compared systems is H⁺ (Σ_c g_c g_cᵀ) H⁺, with H⁺ the pseudo-inverse on
    the mean-zero subspace. No small-sample correction (such as C/(C − 1)) is applied.
    Returns (low, high, se) on the Elo scale. A system never compared gets (-inf, inf) and an
    infinite SE; so does every system when the compared ones form more than one connected group,
    since centred Elo is then not identified. The formula assumes the unpenalised MLE; at a
    ridge-guarded fit it is only indicative. With ``anchor`` Elo is centred on the anchored
    systems (``elo_from_theta``) and the covariance is that of θ minus their mean.
    """
    _check_level(level)
    w = _as_wins(per_conversation_wins, 3)
    c, k, _ = w.shape
    t = np.asarray(theta, dtype=np.float64)
    if t.shape != (k,):
        raise ValueError(f"theta must have shape ({k},) to match the win matrices, got {t.shape}")
    if not np.all(np.isfinite(t)):
        raise ValueError("theta must be finite")
    if c < 1:
        raise ValueError("per_conversation_wins must hold at least one conversation")

    n_c = w + w.transpose(0, 2, 1)
    n = n_c.sum(axis=0)
    compared = n.sum(axis=1) > 0
    se = np.full(k, np.inf)
    idx = np.flatnonzero(compared)
    m = idx.size
    if m >= 2 and connected_components(n[np.ix_(idx, idx)] > 0, directed=False)[0] == 1:
        ts = t[idx]
        p = expit(ts[:, None] - ts[None, :])
        ws, ns = w[:, idx][:, :, idx], n_c[:, idx][:, :, idx]
        scores = ws.sum(axis=2) - (ns * p).sum(axis=2)  # (C, m)
        meat = scores.T @ scores
        curv = n[np.ix_(idx, idx)] * p * (1.0 - p)
        bread = np.diag(curv.sum(axis=1)) - curv
        # For a connected Laplacian, (H + J)⁻¹ − J is its pseudo-inverse, with J = 11ᵀ/m.
        gauge = np.full((m, m), 1.0 / m)
        bread_pinv = np.linalg.inv(bread + gauge) - gauge
        cov = bread_pinv @ meat @ bread_pinv
        if anchor is not None:
            on = np.asarray(anchor, dtype=bool)[idx]
            if on.any():  # θ minus the anchored mean: a linear map of the centred θ
                centre = np.eye(m) - np.outer(np.ones(m), on / on.sum())
                cov = centre @ cov @ centre.T
        se[idx] = ELO_SCALE * np.sqrt(np.clip(np.diag(cov), 0.0, None))

    elo = elo_from_theta(t, anchor)
    half = float(norm.ppf(0.5 + level / 2.0)) * se
    return elo - half, elo + half, se
