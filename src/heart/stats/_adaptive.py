"""The adaptive pair design's selection rule: which pairs to judge next so the ranking gets
certain with the fewest verdicts.

Each round refits Bradley–Terry to the verdicts so far and takes its covariance (the inverse
Fisher information, with the weak prior of the separation guard). A pair of systems (i, j)
judged once more adds information w·xxᵀ, x = eᵢ − eⱼ, w = p(1 − p) per verdict, which lowers
the variance of every Elo difference by a known amount (a rank-one update). The rule picks, one
pair at a time, the system pair that lowers most the variances of the differences, each weighted
by the chance that the fitted order of its two systems is wrong, Φ(−|θₖ − θₗ|/sd): pairs whose
order is already clear (far apart, or well measured) count for nothing, close neighbours count
most. Before that, every pair of systems is compared ``floor`` times (a balanced warm-up), so
every system meets all the others, and no pair of systems falls below ``explore`` times its
equal share. Each chosen system pair goes to the item with the fewest pairs
so far, so items stay balanced; judges are balanced by the schedule that assigns them to pairs.
Ties are broken by a permutation seeded by ``seed``: the same verdicts and seed give the same
choice.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from heart.stats._bradley_terry import SEPARATION_RIDGE, fit_bradley_terry
from heart.stats._types import FloatArray

EXPLORE = 0.3
"""The share of each pair of systems' equal share that the rule keeps for it whatever the
doubt: estimates early on are rough, and a system pair starved on a wrong estimate would keep
its wrong order (and its interval its few verdicts)."""


@dataclass(frozen=True)
class Comparison:
    """One verdict: on ``item``, system ``a`` (index) against system ``b``; ``score`` is 1
    when a won, 0 when b won, 0.5 for a tie."""

    item: str
    a: int
    b: int
    score: float
    judge: str = ""


@dataclass(frozen=True)
class Candidate:
    """A pair not judged yet: on ``item``, system ``a`` (index) against system ``b``."""

    item: str
    a: int
    b: int


def rank_covariance(
    systems: int, comparisons: Sequence[Comparison], strengths: FloatArray | None = None
) -> tuple[FloatArray, FloatArray]:
    """θ fitted to ``comparisons`` and its covariance, the inverse of the Fisher information
    plus the separation guard's weak prior (finite even for systems never compared).
    ``strengths`` (θ known, as in a simulation) replace the fit."""
    wins = np.zeros((systems, systems))
    for c in comparisons:
        wins[c.a, c.b] += c.score
        wins[c.b, c.a] += 1.0 - c.score
    if strengths is not None:
        theta = np.asarray(strengths, dtype=np.float64)
    else:
        theta = fit_bradley_terry(wins).theta if wins.any() else np.zeros(systems)
    p = 1.0 / (1.0 + np.exp(-(theta[:, None] - theta[None, :])))
    curv = (wins + wins.T) * p * (1.0 - p)
    info = np.diag(curv.sum(axis=1)) - curv + SEPARATION_RIDGE * np.eye(systems)
    cov: FloatArray = np.asarray(np.linalg.inv(info), dtype=np.float64)
    return theta, cov


def order_doubt(theta: FloatArray, covariance: FloatArray) -> FloatArray:
    """Φ(−|θₖ − θₗ|/sd(θₖ − θₗ)) for every pair of systems (K×K, zero diagonal): the chance
    that the fitted order of k and l is wrong."""
    var = _difference_variances(covariance)
    gap = np.abs(theta[:, None] - theta[None, :])
    sd = np.sqrt(np.maximum(var, 1e-12))
    doubt: FloatArray = ndtr(-gap / sd)
    np.fill_diagonal(doubt, 0.0)
    return doubt


def _difference_variances(covariance: FloatArray) -> FloatArray:
    d = np.diag(covariance)
    var: FloatArray = d[:, None] + d[None, :] - 2.0 * covariance
    return var


def choose_pairs(
    systems: int,
    comparisons: Sequence[Comparison],
    candidates: Sequence[Candidate],
    size: int,
    *,
    seed: int,
    floor: int = 1,
    explore: float = EXPLORE,
    verdicts_per_pair: int = 1,
    strengths: FloatArray | None = None,
) -> list[int]:
    """Indices into ``candidates`` of the ``size`` pairs to judge next (fewer when the
    candidates run out), in the order chosen.

    ``comparisons`` are the verdicts so far; a pair of systems with fewer than ``floor`` pairs
    (judged or chosen) is served first, the least compared first, and so is one with fewer
    than ``explore`` times its equal share of the pairs judged and chosen by the end of the
    round; after that the rule of the module docstring chooses. ``verdicts_per_pair`` is how
    many verdicts a chosen pair will get (judges per pair times orders). ``strengths``, the
    true θ where it is known (a simulation's oracle), replace the fitted ones. Deterministic
    for ``seed``, the comparisons and the set of candidates (their order does not matter).
    """
    if size < 0 or floor < 0 or not 0 <= explore <= 1 or verdicts_per_pair < 1:
        raise ValueError(
            "size and floor must be non-negative, explore within [0, 1] and verdicts_per_pair "
            "positive"
        )
    k = systems
    theta, cov = rank_covariance(k, comparisons, strengths)
    lo, hi = np.triu_indices(k, 1)
    index = {(int(i), int(j)): n for n, (i, j) in enumerate(zip(lo, hi, strict=True))}

    rng = np.random.Generator(np.random.PCG64(seed))
    canonical = sorted(range(len(candidates)), key=lambda n: _key(candidates[n]))
    tie = np.empty(len(candidates), dtype=np.int64)
    tie[canonical] = rng.permutation(len(canonical))
    pair_tie = rng.permutation(lo.size)
    item_index = {item: n for n, item in enumerate(sorted({c.item for c in candidates}))}
    item_of = np.array([item_index[c.item] for c in candidates], dtype=np.int64)
    members: dict[int, list[int]] = defaultdict(list)  # system pair -> candidate indices
    for n in canonical:
        c = candidates[n]
        if c.a != c.b:
            members[index[_ordered(c.a, c.b)]].append(n)
    pool = {pair: np.array(ns, dtype=np.int64) for pair, ns in members.items()}

    judged: set[tuple[int, int, str]] = set()
    item_load = np.zeros(len(item_index), dtype=np.int64)
    uses = np.zeros(lo.size)
    for v in comparisons:
        key = (*_ordered(v.a, v.b), v.item)
        if key not in judged:
            judged.add(key)
            if v.item in item_index:
                item_load[item_index[v.item]] += 1
            uses[index[key[:2]]] += 1

    least = max(float(floor), explore * (uses.sum() + min(size, len(candidates))) / lo.size)
    p = 1.0 / (1.0 + np.exp(-(theta[lo] - theta[hi])))
    weight = verdicts_per_pair * p * (1.0 - p)
    chosen: list[int] = []
    left = np.array([len(pool.get(n, ())) for n in range(lo.size)])
    while len(chosen) < size:
        open_pairs = left > 0
        if not open_pairs.any():
            break
        short = open_pairs & (uses < least)
        if short.any():
            pick = int(min(np.flatnonzero(short), key=lambda n: (uses[n], pair_tie[n])))
        else:
            gain = _variance_gain(theta, cov, lo, hi, weight)
            gain[~open_pairs] = -np.inf
            best = gain.max()
            ties = np.flatnonzero(gain >= best - 1e-12 * max(1.0, abs(best)))
            pick = int(min(ties, key=lambda n: pair_tie[n]))
        # the least loaded item, ties by the seeded permutation (tie < len(candidates))
        ns = pool[pick]
        at = int(np.argmin(item_load[item_of[ns]] * (len(candidates) + 1) + tie[ns]))
        n = int(ns[at])
        pool[pick] = np.delete(ns, at)
        left[pick] -= 1
        chosen.append(n)
        item_load[item_of[n]] += 1
        uses[pick] += 1
        x = np.zeros(k)
        x[lo[pick]], x[hi[pick]] = 1.0, -1.0
        s = cov @ x
        cov = cov - weight[pick] * np.outer(s, s) / (1.0 + weight[pick] * (x @ s))
    return chosen


def _variance_gain(
    theta: FloatArray, cov: FloatArray, lo: np.ndarray, hi: np.ndarray, weight: FloatArray
) -> FloatArray:
    """For each system pair: Σ over pairs (k, l) of doubt(k, l) · Δvar(θₖ − θₗ)/var(θₖ − θₗ)
    when that system pair is judged once more."""
    diag = np.diag(cov)
    var = diag[lo] + diag[hi] - 2.0 * cov[lo, hi]
    doubt = ndtr(-np.abs(theta[lo] - theta[hi]) / np.sqrt(np.maximum(var, 1e-12)))
    s = cov[:, lo] - cov[:, hi]  # Σx for every system pair x (K × P)
    d = s[lo, :] - s[hi, :]  # (k, l) × x: cₖₗᵀ Σ x
    q = np.diagonal(d)  # xᵀΣx
    gain: FloatArray = (doubt / var) @ (d * d) * weight / (1.0 + weight * q)
    return gain


def _ordered(a: int, b: int) -> tuple[int, int]:
    return (a, b) if a < b else (b, a)


def _key(c: Candidate) -> tuple[str, int, int]:
    return (c.item, *_ordered(c.a, c.b))
