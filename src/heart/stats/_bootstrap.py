"""Bootstrap of Bradley–Terry Elo that resamples whole conversations."""

from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from heart.stats._bradley_terry import (
    ELO_BASE,
    ELO_SCALE,
    _as_wins,
    _newton,
    _ridges,
)
from heart.stats._intervals import _check_level, percentile_interval
from heart.stats._types import BoolArray, FloatArray


def conversation_draws(conversations: int, *, rounds: int, seed: int) -> FloatArray:
    """How often each of ``conversations`` conversations is drawn in each bootstrap round:
    (rounds, conversations) multinomial counts, each row summing to ``conversations``, from
    numpy's PCG64 seeded by ``seed``. Every conversation bootstrap of the project draws here.
    The array is shared between callers asking the same (read-only)."""
    if rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds}")
    if conversations < 1:
        raise ValueError("a bootstrap needs at least one conversation")
    return _draws(conversations, rounds, seed)


@functools.lru_cache(maxsize=16)
def _draws(conversations: int, rounds: int, seed: int) -> FloatArray:
    rng = np.random.Generator(np.random.PCG64(seed))
    p = np.full(conversations, 1.0 / conversations)
    counts = rng.multinomial(conversations, p, size=rounds).astype(np.float64)
    counts.flags.writeable = False
    return counts


@dataclass(frozen=True, eq=False)
class BootstrapResult:
    """Elo per bootstrap round and its percentile interval.

    ``elo_rounds[r, i]`` is NaN when system i had no comparison in round r; ``separated_rounds``
    counts rounds that needed the separation guard.
    """

    elo_rounds: FloatArray
    low: FloatArray
    high: FloatArray
    level: float
    rounds: int
    separated_rounds: int


def bootstrap_by_conversation(
    per_conversation_wins: FloatArray,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    ridge: float | None = None,
    anchor: BoolArray | None = None,
) -> BootstrapResult:
    """Percentile interval for Elo from resampling conversations with replacement.

    ``per_conversation_wins`` is (C, K, K), one weighted win matrix per conversation. Each round
    draws multinomial counts over conversations (numpy PCG64 seeded by ``seed``), sums the
    matrices with those counts and refits; all rounds go through one batched Newton fit started
    at the full data's estimate, each with the rules of ``fit_bradley_terry`` (``ridge=None``:
    guard only where separated). Each round's Elo is centred on the systems of ``anchor``
    (default: all) that the round's conversations compared, so a system a round left out does
    not move the others.
    """
    (result,) = bootstrap_stack_by_conversation(
        np.asarray(per_conversation_wins, dtype=np.float64)[None],
        rounds=rounds, seed=seed, level=level, ridge=ridge,
        anchors=None if anchor is None else np.asarray(anchor, dtype=bool)[None],
    )  # fmt: skip
    return result


REPLICATE_TOL = 1e-8
"""Newton's stopping step for a bootstrap round: started from the fit on every conversation,
a round stops once its step is this small, its Elo then within about 1e-12 of the optimum
(Newton's error squares at each step), one step sooner than the point fit's 1e-10."""


def bootstrap_stack_by_conversation(
    per_conversation_wins: FloatArray,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    ridge: float | None = None,
    anchors: BoolArray | None = None,
) -> list[BootstrapResult]:
    """``bootstrap_by_conversation`` for S fits over the same conversations at once (say the
    five axes of one board): ``per_conversation_wins`` is (S, C, K, K) and ``anchors`` (S, K)
    or None. Every fit's round r draws the same conversations, so a sum over the fits within a
    round has the spread of the sum; all S × rounds fits share one batched Newton loop."""
    _check_level(level)
    if rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds}")
    w = _as_wins(per_conversation_wins, 4)
    n, c, k, _ = w.shape
    if c < 1:
        raise ValueError("per_conversation_wins must hold at least one conversation")
    if anchors is not None and np.shape(anchors) != (n, k):
        raise ValueError(f"anchors must mask the {k} systems of each of the {n} fits")
    counts = conversation_draws(c, rounds=rounds, seed=seed)
    # (rounds, S·K·K) → (S·rounds, K, K): fit s's rounds are rows s·rounds … (s + 1)·rounds − 1
    drawn = counts @ w.transpose(1, 0, 2, 3).reshape(c, n * k * k)
    replicates = drawn.reshape(rounds, n, k, k).transpose(1, 0, 2, 3).reshape(n * rounds, k, k)
    lam, separated = _ridges(replicates, ridge)
    pooled = w.sum(axis=1)
    start, _, _ = _newton(pooled, _ridges(pooled, None)[0], tol=1e-10, max_iter=200)
    theta, _, _ = _newton(  # from the pooled fit a step this small leaves ~1e-14 to go
        replicates, lam, tol=REPLICATE_TOL, max_iter=200, start=np.repeat(start, rounds, axis=0)
    )
    present = (replicates.sum(axis=1) + replicates.sum(axis=2)) > 0
    results = []
    for s in range(n):
        mine = slice(s * rounds, (s + 1) * rounds)
        elo = _centred_on_present(
            theta[mine], present[mine], None if anchors is None else anchors[s]
        )
        low, high = percentile_interval(elo, level)
        results.append(
            BootstrapResult(
                elo_rounds=elo,
                low=low,
                high=high,
                level=level,
                rounds=rounds,
                separated_rounds=int(separated[mine].sum()),
            )
        )
    return results


def _centred_on_present(
    theta: FloatArray, present: BoolArray, anchor: BoolArray | None
) -> FloatArray:
    """Elo per round, centred on the anchored systems present in that round (on every present
    system where none is); NaN for a system the round left out."""
    k = theta.shape[-1]
    mask = np.ones(k, dtype=bool) if anchor is None else np.asarray(anchor, dtype=bool)
    if mask.shape != (k,) or not mask.any():
        raise ValueError(f"anchor must mask the {k} systems and hold at least one")
    centre = present & mask
    centre = np.where(centre.any(axis=1, keepdims=True), centre, present)
    counted = np.maximum(centre.sum(axis=1, keepdims=True), 1)
    mean = (theta * centre).sum(axis=1, keepdims=True) / counted
    elo: FloatArray = ELO_SCALE * (theta - mean) + ELO_BASE
    elo[~present] = np.nan
    return elo


def bootstrap_share_by_conversation(
    hits: FloatArray,
    totals: FloatArray,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
) -> tuple[float, float]:
    """Percentile interval of the pooled share Σhits/Σtotals when conversations are resampled.

    ``hits[c]`` and ``totals[c]`` count the successes and trials of conversation c. Every round
    draws multinomial counts over conversations (PCG64 seeded by ``seed``), all rounds at once.
    NaNs when there are no trials.
    """
    _check_level(level)
    h = np.asarray(hits, dtype=np.float64).reshape(-1)
    t = np.asarray(totals, dtype=np.float64).reshape(-1)
    if h.shape != t.shape:
        raise ValueError(f"hits and totals must have the same length, got {h.size} and {t.size}")
    if np.any(h < 0) or np.any(h > t):
        raise ValueError("need 0 <= hits <= totals for every conversation")
    if rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds}")
    if t.sum() == 0:
        return (float("nan"), float("nan"))
    counts = conversation_draws(h.size, rounds=rounds, seed=seed)
    drawn_t = counts @ t
    shares = np.divide(counts @ h, drawn_t, out=np.full(rounds, np.nan), where=drawn_t > 0)
    low, high = percentile_interval(shares[:, None], level)
    return float(low[0]), float(high[0])
