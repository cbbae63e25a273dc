"""Pairwise outcomes aggregated into win matrices, and raw win rates."""

from __future__ import annotations

import numpy as np

from heart.stats._types import BoolArray, FloatArray, IntArray


def _check_pairs(winner: IntArray, loser: IntArray, n_systems: int) -> tuple[IntArray, IntArray]:
    if n_systems < 1:
        raise ValueError(f"n_systems must be a positive integer, got {n_systems}")
    w = np.asarray(winner).reshape(-1)
    lo = np.asarray(loser).reshape(-1)
    if w.shape != lo.shape:
        raise ValueError(f"winner and loser must have the same length, got {w.size} and {lo.size}")
    if not (np.issubdtype(w.dtype, np.integer) and np.issubdtype(lo.dtype, np.integer)):
        raise ValueError("winner and loser must be integer system indices")
    if w.size and (min(w.min(), lo.min()) < 0 or max(w.max(), lo.max()) >= n_systems):
        raise ValueError(f"system indices must lie in [0, {n_systems - 1}]")
    if np.any(w == lo):
        row = int(np.flatnonzero(w == lo)[0])
        raise ValueError(f"row {row}: system {int(w[row])} is compared with itself")
    return w, lo


def _check_tie(tie: BoolArray | None, n: int) -> BoolArray:
    if tie is None:
        return np.zeros(n, dtype=bool)
    t = np.asarray(tie, dtype=bool).reshape(-1)
    if t.size != n:
        raise ValueError(f"tie must have one entry per comparison ({n}), got {t.size}")
    return t


def win_matrix(
    winner: IntArray,
    loser: IntArray,
    weight: FloatArray | None,
    n_systems: int,
    *,
    tie: BoolArray | None = None,
) -> FloatArray:
    """K×K matrix W with W[i, j] = total weight of comparisons in which i beat j.

    One row per comparison; ``weight`` (default 1) is the outcome's strength. Where ``tie`` is
    true the row's weight is split half to ``winner`` over ``loser`` and half the other way.
    """
    w, lo = _check_pairs(winner, loser, n_systems)
    t = _check_tie(tie, w.size)
    if weight is None:
        weights = np.ones(w.size)
    else:
        weights = np.asarray(weight, dtype=np.float64).reshape(-1)
        if weights.size != w.size:
            raise ValueError(
                f"weight must have one entry per comparison ({w.size}), got {weights.size}"
            )
        if not np.all(np.isfinite(weights)) or np.any(weights < 0):
            raise ValueError("weights must be finite and non-negative")
    share = np.where(t, 0.5, 1.0) * weights
    size = n_systems * n_systems
    flat = np.bincount(w * n_systems + lo, weights=share, minlength=size).astype(np.float64)
    flat += np.bincount(lo[t] * n_systems + w[t], weights=share[t], minlength=size)
    return flat.reshape(n_systems, n_systems)


def conversation_win_matrices(
    conversation: IntArray,
    winner: IntArray,
    loser: IntArray,
    weight: FloatArray | None,
    n_systems: int,
    n_conversations: int,
    *,
    tie: BoolArray | None = None,
) -> FloatArray:
    """(C, K, K): one ``win_matrix`` per conversation, row r counted in conversation
    ``conversation[r]`` (what a conversation bootstrap resamples)."""
    c = np.asarray(conversation, dtype=np.int64).reshape(-1)
    if c.size and (c.min() < 0 or c.max() >= n_conversations):
        raise ValueError(f"conversation indices must lie in [0, {n_conversations - 1}]")
    k = n_systems
    w, lo = _check_pairs(winner, loser, k)
    if c.size != w.size:
        raise ValueError(
            f"conversation must have one entry per comparison ({w.size}), got {c.size}"
        )
    t = _check_tie(tie, w.size)
    weights = np.ones(w.size) if weight is None else np.asarray(weight, dtype=np.float64)
    share = np.where(t, 0.5, 1.0) * weights.reshape(-1)
    size = n_conversations * k * k
    flat = np.bincount((c * k + w) * k + lo, weights=share, minlength=size).astype(np.float64)
    flat += np.bincount((c[t] * k + lo[t]) * k + w[t], weights=share[t], minlength=size)
    return flat.reshape(n_conversations, k, k)


def share_wins(
    a: IntArray,
    b: IntArray,
    share_a: FloatArray,
    weight: FloatArray,
    n_systems: int,
    conversation: IntArray | None = None,
    n_conversations: int = 1,
) -> FloatArray:
    """(C, K, K): each row puts weight·share_a on a over b and weight·(1 − share_a) on b over
    a, in its ``conversation`` (all rows in one matrix without it). A share of a half is a tie,
    a fraction an outcome predicted rather than seen."""
    k = n_systems
    c = np.zeros(len(a), dtype=np.int64) if conversation is None else conversation
    share = np.asarray(share_a, dtype=np.float64)
    w = np.asarray(weight, dtype=np.float64)
    size = n_conversations * k * k
    out = np.bincount((c * k + a) * k + b, weights=w * share, minlength=size)
    out += np.bincount((c * k + b) * k + a, weights=w * (1.0 - share), minlength=size)
    matrices: FloatArray = out.astype(np.float64).reshape(n_conversations, k, k)
    return matrices


def win_rates(wins: FloatArray) -> FloatArray:
    """Per system, its weighted share of wins: Σ_j W[i, j] / Σ_j (W[i, j] + W[j, i]).

    NaN for a system with no comparisons.
    """
    w = np.asarray(wins, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] != w.shape[1]:
        raise ValueError(f"wins must be a square K×K matrix, got shape {w.shape}")
    w = w - np.diag(np.diag(w))
    won = w.sum(axis=1)
    total = won + w.sum(axis=0)
    rate = np.full(won.shape, np.nan)
    np.divide(won, total, out=rate, where=total > 0)
    return rate


def overall_win_rate(
    winner: IntArray, loser: IntArray, tie: BoolArray | None, n_systems: int
) -> FloatArray:
    """Per system, the raw share of its comparisons it won, ties counting half (unweighted).

    This is the paper's "overall win rate". NaN for a system with no comparisons.
    """
    w, lo = _check_pairs(winner, loser, n_systems)
    t = _check_tie(tie, w.size)
    score = np.bincount(w, weights=np.where(t, 0.5, 1.0), minlength=n_systems)
    score += np.bincount(lo, weights=np.where(t, 0.5, 0.0), minlength=n_systems)
    count = (np.bincount(w, minlength=n_systems) + np.bincount(lo, minlength=n_systems)).astype(
        np.float64
    )
    rate = np.full(n_systems, np.nan)
    np.divide(score, count, out=rate, where=count > 0)
    return rate
