"""Classic sequential Elo, averaged over random orders of the comparisons."""

from __future__ import annotations

import math

import numpy as np

from heart.stats._bradley_terry import ELO_BASE
from heart.stats._types import BoolArray, FloatArray, IntArray
from heart.stats._wins import _check_pairs, _check_tie


def online_elo(
    winner: IntArray,
    loser: IntArray,
    tie: BoolArray | None,
    n_systems: int,
    *,
    k_factor: float = 4.0,
    permutations: int = 100,
    seed: int = 0,
) -> FloatArray:
    """Sequential Elo ratings (K,), the mean over ``permutations`` random comparison orders.

    Every system starts at 1500; after each comparison the winner gains k·(s − E) and the loser
    loses as much, with E = 1/(1 + 10^((R_loser − R_winner)/400)) and s = 1, or 0.5 for a tie.
    Orders come from numpy PCG64 seeded by ``seed``; ``permutations=0`` uses the given order
    once. Online Elo depends on order and ignores outcome strength: an alternate ranker only.
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
    per_elo = math.log(10.0) / 400.0  # 10^(x/400) = e^(x·per_elo)
    exp = math.exp
    total = np.zeros(n_systems)
    for order in orders:  # plain floats in one order's sequence: faster than arrays
        ratings = [ELO_BASE] * n_systems
        sequence = zip(w[order].tolist(), lo[order].tolist(), scores[order].tolist(), strict=True)
        for a, b, score in sequence:
            ra, rb = ratings[a], ratings[b]
            delta = k_factor * (score - 1.0 / (1.0 + exp((rb - ra) * per_elo)))
            ratings[a], ratings[b] = ra + delta, rb - delta
        total += ratings
    result: FloatArray = total / len(orders)
    return result
