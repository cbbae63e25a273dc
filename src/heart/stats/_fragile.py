"""How much an order rests on: the fewest verdicts (or conversations) whose removal puts one
system at or above another on a Bradley–Terry board.

Each unit's first-order influence on the gap θ_upper − θ_lower is −dᵀH⁺∇ℓ_u, with d = e_upper −
e_lower, H the negative Hessian of the log-likelihood at the fit and ∇ℓ_u the gradient of the
unit's own log-likelihood; units are removed greedily, the most gap-closing first, and each
candidate count is confirmed by refitting. The count is the fewest along that order: an upper
bound on the true fewest (finding it exactly is a subset search), and marked as a bound again
when the refits ran out before the count was narrowed to one."""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from heart.stats._bradley_terry import fit_bradley_terry
from heart.stats._types import FloatArray, IntArray

LEVEL = 1e-9
"""Two fitted strengths this close are level (a fit of equal records is equal only to rounding)."""
MAX_REFITS = 40
"""Refits one search may take before it settles for the count it has confirmed."""


@dataclass(frozen=True)
class Removal:
    """How many units (verdicts or conversations) removed put the lower system at or above the
    upper: ``count`` (None: no removal of the gap-closing units flips the order), and
    ``narrowed`` whether the search confirmed that one unit fewer along its order does not."""

    count: int | None
    narrowed: bool = True


def _matrix(a: IntArray, b: IntArray, share: FloatArray, weight: FloatArray, k: int) -> FloatArray:
    out = np.bincount(a * k + b, weights=weight * share, minlength=k * k)
    out += np.bincount(b * k + a, weights=weight * (1.0 - share), minlength=k * k)
    matrix: FloatArray = out.astype(np.float64).reshape(k, k)
    return matrix


def _influence(
    wins: FloatArray, theta: FloatArray, upper: int, lower: int
) -> tuple[FloatArray, FloatArray]:
    """v = H⁺(e_upper − e_lower) and the fitted p = σ(θi − θj)."""
    k = theta.size
    p = expit(theta[:, None] - theta[None, :])
    total = wins + wins.T
    curvature = total * p * (1.0 - p)
    hessian = np.diag(curvature.sum(axis=1)) - curvature
    direction = np.zeros(k)
    direction[upper], direction[lower] = 1.0, -1.0
    v: FloatArray = np.linalg.pinv(hessian, hermitian=True) @ direction
    return v, p


def fewest_removals(
    a: IntArray,
    b: IntArray,
    share_a: FloatArray,
    weight: FloatArray,
    unit: IntArray,
    k: int,
    upper: int,
    lower: int,
    *,
    max_refits: int = MAX_REFITS,
) -> Removal:
    """The fewest units whose verdicts, removed, leave θ_lower ≥ θ_upper.

    One row per verdict: systems ``a`` and ``b`` (indices below ``k``), the share of a (1, 0,
    half for a tie), its ``weight``, and the ``unit`` it belongs to (its own index to remove
    verdicts one by one, its conversation to remove conversations). 0 when the order already
    has the lower system at or above the upper; a removal that leaves either system without a
    comparison does not count as a flip."""
    a, b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
    share, w = np.asarray(share_a, dtype=np.float64), np.asarray(weight, dtype=np.float64)
    unit = np.asarray(unit, dtype=np.int64)
    wins = _matrix(a, b, share, w, k)
    theta = fit_bradley_terry(wins).theta
    if theta[lower] >= theta[upper] - LEVEL:
        return Removal(0)
    v, p = _influence(wins, theta, upper, lower)
    # removing a verdict moves the gap by about −vᵀ∇ℓ, ∇ℓ = w(s − p_ab)(e_a − e_b)
    moved = -w * (share - p[a, b]) * (v[a] - v[b])
    units = int(unit.max()) + 1 if unit.size else 0
    by_unit = np.bincount(unit, weights=moved, minlength=units)
    closing = np.flatnonzero(by_unit < 0)
    if not closing.size:
        return Removal(None)
    closing = closing[np.argsort(by_unit[closing], kind="stable")]
    rank = np.full(units, closing.size, dtype=np.int64)
    rank[closing] = np.arange(closing.size)
    row_rank = rank[unit]  # the place of each verdict's unit in the removal order
    gap = theta[upper] - theta[lower]
    predicted = int(np.searchsorted(-np.cumsum(by_unit[closing]), gap)) + 1
    refits = 0

    def flips(count: int) -> bool:
        nonlocal refits
        refits += 1
        gone = row_rank < count
        left = np.maximum(wins - _matrix(a[gone], b[gone], share[gone], w[gone], k), 0.0)
        played = left.sum(axis=0) + left.sum(axis=1)
        if played[upper] <= 0 or played[lower] <= 0:
            return False  # a system with nothing left is not rated, so not above or below
        fitted = fit_bradley_terry(left).theta
        return bool(fitted[lower] >= fitted[upper] - LEVEL)

    # grow from the first-order guess until the order flips, then narrow down
    low, high = 0, min(max(predicted, 1), closing.size)
    while not flips(high):
        if high == closing.size or refits >= max_refits:
            return Removal(None)
        low, high = high, min(closing.size, max(high + 1, math.ceil(high * 1.5)))
    while high - low > 1 and refits < max_refits:
        middle = (low + high) // 2
        if flips(middle):
            high = middle
        else:
            low = middle
    return Removal(high, narrowed=high - low <= 1)
