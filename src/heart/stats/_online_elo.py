"""Classic sequential Elo, averaged over random orders of the comparisons."""

from __future__ import annotations

import math
from collections.abc import Callable

import numpy as np

from heart.stats._bradley_terry import ELO_BASE
from heart.stats._types import BoolArray, FloatArray, IntArray
from heart.stats._wins import _check_pairs, _check_tie

COMPILED_STEPS = 2_000_000
"""Comparison updates (comparisons × orders) from which the orders are played by the compiled
loop (``heart.stats._online_elo_compiled``): below it, loading numba costs more than it saves."""


def online_elo(
    winner: IntArray,
    loser: IntArray,
    tie: BoolArray | None,
    n_systems: int,
    *,
    k_factor: float = 4.0,
    permutations: int = 100,
    seed: int = 0,
    compiled_steps: int = COMPILED_STEPS,
) -> FloatArray:
    """Sequential Elo ratings (K,), the mean over ``permutations`` random comparison orders.

    Every system starts at 1500; after each comparison the winner gains k·(s − E) and the loser
    loses as much, with E = 1/(1 + 10^((R_loser − R_winner)/400)) and s = 1, or 0.5 for a tie.
    Orders come from numpy PCG64 seeded by ``seed``; ``permutations=0`` uses the given order
    once. Online Elo depends on order and ignores outcome strength: an alternate ranker only.

    From ``compiled_steps`` updates in all, the orders are played in machine code where numba
    is installed (the ``fast`` extra), with the same arithmetic in the same order: the same
    ratings to the bit.
    """
    w, lo = _check_pairs(winner, loser, n_systems)
    t = _check_tie(tie, w.size)
    if not (math.isfinite(k_factor) and k_factor > 0):
        raise ValueError(f"k_factor must be a positive number, got {k_factor}")
    if permutations < 0:
        raise ValueError(f"permutations must be zero or a positive integer, got {permutations}")

    n = w.size
    if permutations == 0:
        orders = np.arange(n)[None, :]
    else:
        rng = np.random.Generator(np.random.PCG64(seed))
        orders = rng.permuted(np.tile(np.arange(n), (permutations, 1)), axis=1)
    scores = np.where(t, 0.5, 1.0)
    along = _compiled_along() if n * len(orders) >= compiled_steps else None
    each = (along or ratings_along)(w, lo, scores, orders, n_systems, k_factor, ELO_BASE)
    total = np.zeros(n_systems)
    for ratings in each:  # summed one order at a time, in the orders' order
        total += ratings
    result: FloatArray = total / len(orders)
    return result


def ratings_along(
    winner: IntArray,
    loser: IntArray,
    score: FloatArray,
    orders: IntArray,
    n_systems: int,
    k_factor: float,
    start: float,
) -> FloatArray:
    """The ratings (orders, K) after the comparisons in each order of ``orders`` (one order a
    row), every system starting at ``start``: after each comparison, the winner gains k·(s − E)
    and the loser loses as much."""
    per_elo = math.log(10.0) / 400.0  # 10^(x/400) = e^(x·per_elo)
    exp = math.exp
    out = np.empty((len(orders), n_systems))
    for row, order in enumerate(orders):  # plain floats in one order's sequence: faster
        ratings = [start] * n_systems
        sequence = zip(
            winner[order].tolist(), loser[order].tolist(), score[order].tolist(), strict=True
        )
        for a, b, s in sequence:
            ra, rb = ratings[a], ratings[b]
            delta = k_factor * (s - 1.0 / (1.0 + exp((rb - ra) * per_elo)))
            ratings[a], ratings[b] = ra + delta, rb - delta
        out[row] = ratings
    return out


def _compiled_along() -> Callable[..., FloatArray] | None:
    """``ratings_along`` in machine code, or None without numba (the ``fast`` extra)."""
    try:
        from heart.stats._online_elo_compiled import compiled_ratings_along
    except ImportError:
        return None
    return compiled_ratings_along
