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
choice. ``choose_pairs_from_arrays`` applies the same rule to arrays (a simulated study's tens
of thousands of pairs a round); the picks themselves run in machine code
(``heart.stats._adaptive_compiled``) where numba is installed, else in numpy
(``heart.stats._adaptive_plain``), with the same picks.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr

from heart.stats._bradley_terry import SEPARATION_RIDGE, fit_bradley_terry
from heart.stats._types import FloatArray, IntArray

PickLoop = Callable[..., IntArray]
"""``heart.stats._adaptive_compiled.pick_loop`` or ``heart.stats._adaptive_plain.pick_loop``."""

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
    return _fitted(_wins(systems, comparisons), strengths)


def _wins(systems: int, comparisons: Sequence[Comparison]) -> FloatArray:
    wins = np.zeros((systems, systems))
    for c in comparisons:
        wins[c.a, c.b] += c.score
        wins[c.b, c.a] += 1.0 - c.score
    return wins


def _fitted(wins: FloatArray, strengths: FloatArray | None) -> tuple[FloatArray, FloatArray]:
    systems = wins.shape[0]
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
    _check_settings(size, floor, explore, verdicts_per_pair)
    names = sorted({c.item for c in candidates} | {v.item for v in comparisons})
    code = {name: n for n, name in enumerate(names)}
    judged = _rows([(code[v.item], v.a, v.b) for v in comparisons])
    offered = _rows([(code[c.item], c.a, c.b) for c in candidates])
    _check_systems(systems, judged, offered)
    chosen = _choose(
        _wins(systems, comparisons), judged, offered, size,
        seed=seed, floor=floor, explore=explore, verdicts_per_pair=verdicts_per_pair,
        strengths=strengths,
    )  # fmt: skip
    return [int(n) for n in chosen]


def choose_pairs_from_arrays(
    wins: FloatArray,
    judged: IntArray,
    candidates: IntArray,
    size: int,
    *,
    seed: int,
    floor: int = 1,
    explore: float = EXPLORE,
    verdicts_per_pair: int = 1,
    strengths: FloatArray | None = None,
) -> IntArray:
    """``choose_pairs`` on arrays, for studies too large for one object per verdict.

    ``wins`` (K×K) holds the verdicts so far (``wins[a, b]``: a's wins over b, a tie half to
    each), ``judged`` (n, 3) the pairs they were given on and ``candidates`` (m, 3) the pairs
    not judged yet, each row (item, a, b) with the item as an integer code; ties between items
    go in the order of their codes, as between ``Candidate`` items in the order of their
    names. Returns the indices into ``candidates`` that ``choose_pairs`` would return for the
    same verdicts, candidates and settings.
    """
    _check_settings(size, floor, explore, verdicts_per_pair)
    w = np.asarray(wins, dtype=np.float64)
    if w.ndim != 2 or w.shape[0] != w.shape[1] or w.shape[0] < 1:
        raise ValueError(f"wins must be a square K×K matrix, got shape {w.shape}")
    judged_rows, offered = _rows(judged), _rows(candidates)
    _check_systems(w.shape[0], judged_rows, offered)
    return _choose(
        w, judged_rows, offered, size,
        seed=seed, floor=floor, explore=explore, verdicts_per_pair=verdicts_per_pair,
        strengths=strengths,
    )  # fmt: skip


def _check_settings(size: int, floor: int, explore: float, verdicts_per_pair: int) -> None:
    if size < 0 or floor < 0 or not 0 <= explore <= 1 or verdicts_per_pair < 1:
        raise ValueError(
            "size and floor must be non-negative, explore within [0, 1] and verdicts_per_pair "
            "positive"
        )


def _rows(rows: object) -> IntArray:
    """(n, 3) int64 rows (item, a, b)."""
    r = np.asarray(rows)
    if r.size == 0:
        return np.empty((0, 3), dtype=np.int64)
    if r.ndim != 2 or r.shape[1] != 3 or not np.issubdtype(r.dtype, np.integer):
        raise ValueError(f"pairs must be integer rows (item, a, b), got shape {r.shape}")
    return r.astype(np.int64)


def _check_systems(systems: int, judged: IntArray, candidates: IntArray) -> None:
    for what, rows in (("comparisons", judged), ("candidates", candidates)):
        if rows.size and (rows[:, 1:].min() < 0 or rows[:, 1:].max() >= systems):
            raise ValueError(f"the {what}' system indices must lie in [0, {systems - 1}]")
    same = np.flatnonzero(judged[:, 1] == judged[:, 2])
    if same.size:
        row = int(same[0])
        raise ValueError(f"comparison {row}: system {int(judged[row, 1])} is compared with itself")


def _choose(
    wins: FloatArray,
    judged: IntArray,
    candidates: IntArray,
    size: int,
    *,
    seed: int,
    floor: int,
    explore: float,
    verdicts_per_pair: int,
    strengths: FloatArray | None,
) -> IntArray:
    """The rule of the module docstring on checked arrays; the picks themselves are made by
    `pick_loop`."""
    k = wins.shape[0]
    theta, cov = _fitted(wins, strengths)
    lo, hi = np.triu_indices(k, 1)
    if lo.size == 0:
        return np.empty(0, dtype=np.int64)
    pair_of = np.full((k, k), -1, dtype=np.int64)
    pair_of[lo, hi] = np.arange(lo.size)

    # items as dense indices in the order of their codes
    codes = np.concatenate([judged[:, 0], candidates[:, 0]])
    items, item_of = np.unique(codes, return_inverse=True)
    judged_item, candidate_item = item_of[: len(judged)], item_of[len(judged) :]

    rng = np.random.Generator(np.random.PCG64(seed))
    a = np.minimum(candidates[:, 1], candidates[:, 2])
    b = np.maximum(candidates[:, 1], candidates[:, 2])
    canonical = np.lexsort((b, a, candidate_item))  # by (item, a, b), stable
    tie = np.empty(len(candidates), dtype=np.int64)
    tie[canonical] = rng.permutation(len(candidates))
    pair_tie = rng.permutation(lo.size)
    members = canonical[a[canonical] != b[canonical]]
    member_pair = pair_of[a[members], b[members]]
    pool = members[np.argsort(member_pair, kind="stable")]  # grouped by pair of systems
    left = np.bincount(member_pair, minlength=lo.size)
    start = np.concatenate(([0], np.cumsum(left)[:-1]))

    ja = np.minimum(judged[:, 1], judged[:, 2])
    jb = np.maximum(judged[:, 1], judged[:, 2])
    distinct = np.unique(judged_item * lo.size + pair_of[ja, jb])  # (item, pair of systems)
    uses = np.bincount(distinct % lo.size, minlength=lo.size).astype(np.float64)
    item_load = np.bincount(distinct // lo.size, minlength=items.size)

    least = max(float(floor), explore * (uses.sum() + min(size, len(candidates))) / lo.size)
    p = 1.0 / (1.0 + np.exp(-(theta[lo] - theta[hi])))
    weight = verdicts_per_pair * p * (1.0 - p)
    chosen: IntArray = pick_loop()(
        np.array(cov, dtype=np.float64, order="C"), -np.abs(theta[lo] - theta[hi]),
        lo.astype(np.int64), hi.astype(np.int64), weight, uses, float(least), pair_tie, pool,
        start.astype(np.int64), left.astype(np.int64), candidate_item.astype(np.int64), tie,
        item_load.astype(np.int64), int(min(size, pool.size)),
    )  # fmt: skip
    return chosen


def pick_loop() -> PickLoop:
    """The pick loop: compiled where numba is installed (the ``fast`` extra), else numpy's."""
    try:
        from heart.stats._adaptive_compiled import pick_loop as compiled
    except ImportError:
        from heart.stats._adaptive_plain import pick_loop as plain

        return plain
    return compiled
