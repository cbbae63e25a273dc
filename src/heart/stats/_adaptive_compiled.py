"""The adaptive design's pick loop in machine code (numba): each pick weighs every pair of
systems by its variance gain (``heart.stats._adaptive``), a sum over all P² couples of pairs of
systems, tens of thousands of times a round in a simulated study of 300 items. The covariance's
rank-one updates are numpy's arithmetic to the bit; a gain may differ from numpy's in its last
digits (its sum is added up in the loop's own order, as a BLAS differs between processors, and Φ
comes from the C library's erf), about 1e-15 of the largest gain, far inside the ``TIE`` within
which gains count as tied. Imported only when pairs are chosen: loading numba and the cached
machine code costs about 0.4 s, compiling it the first time about two seconds. Without numba
(the ``fast`` extra) the same picks come from ``heart.stats._adaptive_plain``."""

from __future__ import annotations

import math

import numba
import numpy as np

from heart.stats._adaptive_plain import TIE
from heart.stats._types import FloatArray, IntArray


@numba.njit(cache=True, nogil=True)
def _ndtr(a: float) -> float:  # Φ(a), in the way of scipy.special.ndtr (cephes)
    x = a * 0.7071067811865476
    z = abs(x)
    if z < 1.0:
        return 0.5 + 0.5 * math.erf(x)
    y = 0.5 * math.erfc(z)
    return 1.0 - y if x > 0.0 else y


@numba.njit(cache=True, nogil=True)
def _variance_gains(
    cov: FloatArray, negap: FloatArray, lo: IntArray, hi: IntArray, weight: FloatArray,
    s: FloatArray, u: FloatArray, gain: FloatArray,
) -> None:  # fmt: skip
    """For each pair of systems x: Σ over pairs (k, l) of doubt(k, l) · Δvar(θₖ − θₗ) /
    var(θₖ − θₗ) when x is judged once more, into ``gain`` (``s`` and ``u`` are scratch)."""
    k, p = cov.shape[0], lo.shape[0]
    for x in range(p):
        a, b = lo[x], hi[x]
        var = cov[a, a] + cov[b, b] - 2.0 * cov[a, b]
        u[x] = _ndtr(negap[x] / math.sqrt(max(var, 1e-12))) / var
    for i in range(k):  # s[:, x] = Σx
        for x in range(p):
            s[i, x] = cov[i, lo[x]] - cov[i, hi[x]]
    gain[:] = 0.0
    for r in range(p):  # gain[x] += u(k, l) · (cₖₗᵀ Σ x)²
        ur, sk, sl = u[r], s[lo[r]], s[hi[r]]
        for x in range(p):
            d = sk[x] - sl[x]
            gain[x] += ur * (d * d)
    for x in range(p):
        q = s[lo[x], x] - s[hi[x], x]  # xᵀΣx
        gain[x] = gain[x] * weight[x] / (1.0 + weight[x] * q)


@numba.njit(cache=True, nogil=True)
def pick_loop(
    cov: FloatArray, negap: FloatArray, lo: IntArray, hi: IntArray, weight: FloatArray,
    uses: FloatArray, least: float, pair_tie: IntArray, pool: IntArray, start: IntArray,
    left: IntArray, item_of: IntArray, tie: IntArray, item_load: IntArray, size: int,
) -> IntArray:  # fmt: skip
    """The candidates chosen, in order, at most ``size`` (the rule of ``heart.stats._adaptive``).

    ``pool[start[x]:start[x] + left[x]]`` are the candidates of pair of systems x not chosen
    yet; ``cov``, ``uses``, ``pool``, ``left`` and ``item_load`` are updated in place."""
    k, p = cov.shape[0], lo.shape[0]
    scale = tie.shape[0] + 1
    s, u, gain, col = np.empty((k, p)), np.empty(p), np.empty(p), np.empty(k)
    chosen = np.empty(size, np.int64)
    count = 0
    while count < size:
        pick, opened = -1, False
        for x in range(p):  # a pair of systems below its floor: the least compared first
            if left[x] > 0:
                opened = True
                if uses[x] < least and (
                    pick < 0
                    or uses[x] < uses[pick]
                    or (uses[x] == uses[pick] and pair_tie[x] < pair_tie[pick])
                ):
                    pick = x
        if not opened:
            break
        if pick < 0:  # the largest variance gain, ties by the seeded permutation
            _variance_gains(cov, negap, lo, hi, weight, s, u, gain)
            best = -np.inf
            for x in range(p):
                if left[x] > 0 and gain[x] > best:
                    best = gain[x]
            near = best - TIE * max(1.0, abs(best))
            for x in range(p):
                if left[x] > 0 and gain[x] >= near and (pick < 0 or pair_tie[x] < pair_tie[pick]):
                    pick = x
            if pick < 0:
                raise ValueError("the variance gains of the open pairs of systems are not finite")
        # the least loaded item, ties by the seeded permutation (tie < scale)
        first, at, key = start[pick], -1, 0
        for j in range(first, first + left[pick]):
            n = pool[j]
            here = item_load[item_of[n]] * scale + tie[n]
            if at < 0 or here < key:
                at, key = j, here
        n = pool[at]
        last = first + left[pick] - 1
        pool[at], pool[last] = pool[last], n
        left[pick] -= 1
        chosen[count] = n
        count += 1
        item_load[item_of[n]] += 1
        uses[pick] += 1.0
        a, b, w = lo[pick], hi[pick], weight[pick]  # rank-one update of the covariance
        for i in range(k):
            col[i] = cov[i, a] - cov[i, b]
        denom = 1.0 + w * (col[a] - col[b])
        for i in range(k):
            for j in range(k):
                cov[i, j] = cov[i, j] - w * (col[i] * col[j]) / denom
    return chosen[:count]
