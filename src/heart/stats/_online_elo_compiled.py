"""The online-Elo loop compiled to machine code (numba), for boards where the plain loop of
``heart.stats._online_elo`` would take seconds. Imported only then: loading numba and the cached
machine code costs about a second, compiling it the first time about three."""

from __future__ import annotations

import math

import numba
import numpy as np

from heart.stats._types import FloatArray, IntArray


@numba.njit(cache=True, nogil=True)
def _along(
    winner: IntArray, loser: IntArray, score: FloatArray, orders: IntArray, n_systems: int,
    k_factor: float, start: float,
) -> FloatArray:  # fmt: skip
    per_elo = math.log(10.0) / 400.0
    out = np.empty((orders.shape[0], n_systems))
    ratings = np.empty(n_systems)
    a_seq, b_seq = np.empty(orders.shape[1], np.int64), np.empty(orders.shape[1], np.int64)
    s_seq = np.empty(orders.shape[1])
    for row in range(orders.shape[0]):
        for j in range(orders.shape[1]):  # gathered first: reads that need not wait in turn
            i = orders[row, j]
            a_seq[j], b_seq[j], s_seq[j] = winner[i], loser[i], score[i]
        ratings[:] = start
        for j in range(orders.shape[1]):
            a, b = a_seq[j], b_seq[j]
            ra, rb = ratings[a], ratings[b]
            delta = k_factor * (s_seq[j] - 1.0 / (1.0 + math.exp((rb - ra) * per_elo)))
            ratings[a], ratings[b] = ra + delta, rb - delta
        out[row] = ratings
    return out


def compiled_ratings_along(
    winner: IntArray, loser: IntArray, score: FloatArray, orders: IntArray, n_systems: int,
    k_factor: float, start: float,
) -> FloatArray:  # fmt: skip
    """``heart.stats._online_elo.ratings_along`` in machine code: the same arithmetic in the
    same order, so the same ratings."""
    as_ints = [np.ascontiguousarray(x, dtype=np.int64) for x in (winner, loser, orders)]
    result: FloatArray = _along(
        as_ints[0], as_ints[1], np.ascontiguousarray(score, dtype=np.float64), as_ints[2],
        int(n_systems), float(k_factor), float(start),
    )  # fmt: skip
    return result
