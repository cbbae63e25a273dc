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
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from heart.stats._bradley_terry import fit_bradley_terry
from heart.stats._types import FloatArray, IntArray
from heart.stats._wins import share_wins

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


class FlipSearch:
    """One board's verdicts, fitted once, for searching the fewest removals that flip each of
    its orders (``count``): the fit, the bread H⁺ and each verdict's residual w(s − p_ab) do
    not depend on the two systems, so a board's searches share them."""

    def __init__(
        self, a: IntArray, b: IntArray, share_a: FloatArray, weight: FloatArray, k: int
    ) -> None:
        self.a, self.b = np.asarray(a, dtype=np.int64), np.asarray(b, dtype=np.int64)
        self.share = np.asarray(share_a, dtype=np.float64)
        self.weight = np.asarray(weight, dtype=np.float64)
        self.k = k
        self.wins = share_wins(self.a, self.b, self.share, self.weight, k)[0]
        self.theta = fit_bradley_terry(self.wins).theta
        p = expit(self.theta[:, None] - self.theta[None, :])
        total = self.wins + self.wins.T
        curvature = total * p * (1.0 - p)
        hessian = np.diag(curvature.sum(axis=1)) - curvature
        self.bread = np.linalg.pinv(hessian, hermitian=True)
        self.residual = self.weight * (self.share - p[self.a, self.b])
        self._layouts: dict[int, tuple[IntArray, IntArray, IntArray]] = {}

    def count(
        self, unit: IntArray, upper: int, lower: int, max_refits: int = MAX_REFITS
    ) -> Removal:
        """The fewest units (``unit``: each verdict's, as in ``fewest_removals``) whose
        verdicts, removed, leave θ_lower ≥ θ_upper."""
        theta = self.theta
        if theta[lower] >= theta[upper] - LEVEL:
            return Removal(0)
        v = self.bread[:, upper] - self.bread[:, lower]
        # removing a verdict moves the gap by about −vᵀ∇ℓ, ∇ℓ = w(s − p_ab)(e_a − e_b)
        moved = -self.residual * (v[self.a] - v[self.b])
        unit = np.asarray(unit, dtype=np.int64)
        units = int(unit.max()) + 1 if unit.size else 0
        by_unit = np.bincount(unit, weights=moved, minlength=units).astype(np.float64)
        negative = int((by_unit < 0).sum())
        if not negative:
            return Removal(None)
        gap = theta[upper] - theta[lower]
        order = _most_closing(by_unit, min(negative, FIRST_LOOK))
        refits = 0

        rows_of = self._rows_of(unit, units)

        def flips(count: int) -> bool:
            nonlocal refits
            refits += 1
            gone = rows_of(order[:count])
            removed = share_wins(self.a[gone], self.b[gone], self.share[gone],
                                 self.weight[gone], self.k)[0]  # fmt: skip
            left = np.maximum(self.wins - removed, 0.0)
            played = left.sum(axis=0) + left.sum(axis=1)
            if played[upper] <= 0 or played[lower] <= 0:
                return False  # a system with nothing left is not rated, so not above or below
            fitted = fit_bradley_terry(left).theta
            return bool(fitted[lower] >= fitted[upper] - LEVEL)

        predicted = int(np.searchsorted(-np.cumsum(by_unit[order]), gap)) + 1
        # grow from the first-order guess until the order flips, then narrow down
        low, high = 0, min(max(predicted, 1), negative)
        while True:
            if high > order.size:  # look further down the removal order
                order = _most_closing(by_unit, min(negative, max(high, 4 * order.size)))
            if flips(high):
                break
            if high == negative or refits >= max_refits:
                return Removal(None)
            low, high = high, min(negative, max(high + 1, math.ceil(high * 1.5)))
        while high - low > 1 and refits < max_refits:
            middle = (low + high) // 2
            if flips(middle):
                high = middle
            else:
                low = middle
        return Removal(high, narrowed=high - low <= 1)

    def _rows_of(self, unit: IntArray, units: int) -> Callable[[IntArray], IntArray]:
        """How to find the verdicts of some units: their own rows when each verdict is its
        own unit, else through the verdicts sorted by unit (made once per unit array)."""
        if units == unit.size and np.array_equal(unit, np.arange(units)):
            return lambda chosen: chosen
        key = id(unit)
        if key not in self._layouts:
            by_unit = np.argsort(unit, kind="stable").astype(np.int64)
            firsts = np.searchsorted(unit[by_unit], np.arange(units + 1)).astype(np.int64)
            self._layouts[key] = (unit, by_unit, firsts)
        _, rows, starts = self._layouts[key]

        def verdicts_of(chosen: IntArray) -> IntArray:
            parts = [rows[starts[u] : starts[u + 1]] for u in chosen.tolist()]
            return np.concatenate(parts) if parts else np.zeros(0, dtype=np.int64)

        return verdicts_of


FIRST_LOOK = 4096
"""Units ordered at first by how much they close a gap (the rest only if the search needs
them): a full sort of a large board's verdicts would cost more than its refits."""


def _most_closing(by_unit: FloatArray, m: int) -> IntArray:
    """The ``m`` units that close the gap most, most first."""
    everything = m >= by_unit.size
    picked = np.arange(by_unit.size) if everything else np.argpartition(by_unit, m - 1)[:m]
    order: IntArray = picked[np.argsort(by_unit[picked], kind="stable")]
    return order[by_unit[order] < 0]


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
    comparison does not count as a flip. (A board's searches share a ``FlipSearch``.)"""
    return FlipSearch(a, b, share_a, weight, k).count(unit, upper, lower, max_refits)
