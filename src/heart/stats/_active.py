"""Which item-pairs people judge, drawn with known chances (active statistical inference,
Zrnic and Candès, 2024): more often where the LLM judges are unsure or disagree, never below a
floor, so that a board weighing each people's verdict by one over its pair's chance stays
unbiased."""

from __future__ import annotations

import numpy as np

from heart.stats._types import FloatArray

SURE_AT_MOST = 0.9
"""No judge verdict is taken as surer than a 95% chance for its side: even a sure judge is
sometimes wrong, and a pair it is sure of must keep a chance of being checked."""
FULL_STRENGTH = 5.0
"""A judge verdict's strength at which it is sure: strength s makes the judge's chance for the
side it picked 1/2 + s/(2·FULL_STRENGTH)."""


def judge_doubt(
    share_a: FloatArray, strength: FloatArray, pair: np.ndarray, pairs: int
) -> FloatArray:
    """Per item-pair, how unsure its LLM judges are: √(q(1 − q)), q the judges' mean chance
    that a wins, each verdict's chance 1/2 ± strength/(2·5) toward its side (a tie 1/2). Zero
    when every judge is sure of one side; 1/2 when they are split or undecided; 1/2 too for a
    pair no judge judged."""
    share = np.asarray(share_a, dtype=np.float64)
    sure = np.clip(np.asarray(strength, dtype=np.float64) / FULL_STRENGTH, 0.0, 1.0)
    chance = 0.5 + (share - 0.5) * sure * SURE_AT_MOST
    count = np.bincount(pair, minlength=pairs).astype(np.float64)
    total = np.bincount(pair, weights=chance, minlength=pairs)
    q = np.divide(total, count, out=np.full(pairs, 0.5), where=count > 0)
    doubt: FloatArray = np.sqrt(q * (1.0 - q))
    return doubt


def active_chances(doubt: FloatArray, budget: float, floor: float) -> FloatArray:
    """Each item-pair's chance of being judged by people: proportional to its ``doubt``, at
    least ``floor`` times the uniform chance budget/N, at most 1, summing to ``budget`` (all
    pairs when the budget covers them)."""
    d = np.asarray(doubt, dtype=np.float64)
    n = d.size
    d = np.maximum(d, 1e-9 * max(float(d.max(initial=0.0)), 1.0))  # every pair can reach 1
    if n == 0:
        return d.copy()
    if budget >= n:
        return np.ones(n)
    if not 0.0 <= floor <= 1.0:
        raise ValueError(f"the floor must lie in [0, 1], got {floor}")
    low = floor * budget / n

    def chances(scale: float) -> FloatArray:
        out: FloatArray = np.clip(scale * d, low, 1.0)
        return out

    lo, hi = 0.0, 1.0
    while chances(hi).sum() < budget:
        hi *= 2.0
    for _ in range(100):  # the sum grows with the scale: bisect it onto the budget
        middle = (lo + hi) / 2.0
        if chances(middle).sum() < budget:
            lo = middle
        else:
            hi = middle
    return chances(hi)
