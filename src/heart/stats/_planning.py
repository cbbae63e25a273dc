"""A study's size from a pilot: studies of m conversations simulated by resampling the pilot's
conversations (so verdicts stay clustered as they were), each judged by the interval its board
would show, and the smallest m at which enough of them meet a target."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from scipy.special import expit
from scipy.stats import norm

from heart.stats._bradley_terry import ELO_SCALE, fit_bradley_terry_batch
from heart.stats._few_conversations import few_conversations_factor
from heart.stats._ppi import assisted_covariance, power_tuned_lambda
from heart.stats._types import FloatArray

MAX_CONVERSATIONS = 1_000_000
"""The largest study a plan looks at; a target out of reach below it has no size."""


def resampled_counts(
    conversations: int, size: int, studies: int, rng: np.random.Generator
) -> FloatArray:
    """(studies, conversations): how often each pilot conversation is drawn into each simulated
    study of ``size`` conversations (with replacement)."""
    p = np.full(conversations, 1.0 / conversations)
    counts: FloatArray = rng.multinomial(size, p, size=studies).astype(np.float64)
    return counts


def board_covariances(per_conversation: FloatArray, counts: FloatArray) -> FloatArray:
    """(studies, K, K): for each simulated study (a row of ``counts`` over the pilot's
    conversations, ``per_conversation`` (C, K, K) their win matrices), the cluster-robust
    covariance of its fitted Bradley–Terry θ, centred (H⁺ Σ_c g_c g_cᵀ H⁺, the conversations as
    clusters, as ``cluster_robust_interval`` computes it for one board)."""
    w = np.asarray(per_conversation, dtype=np.float64)
    c, k, _ = w.shape
    wins = (counts @ w.reshape(c, k * k)).reshape(-1, k, k)
    theta = fit_bradley_terry_batch(wins)
    p = expit(theta[:, :, None] - theta[:, None, :])
    per_total = w + w.transpose(0, 2, 1)
    # per study and conversation, the score of its verdicts at the study's fit
    scores = w.sum(axis=2)[None] - np.einsum("cij,sij->sci", per_total, p)
    meat = np.einsum("sc,sci,scj->sij", counts, scores, scores)
    curvature = (wins + wins.transpose(0, 2, 1)) * p * (1.0 - p)
    hessian = -curvature
    hessian[:, np.arange(k), np.arange(k)] += curvature.sum(axis=2)
    bread = np.linalg.pinv(hessian, hermitian=True)
    covariance: FloatArray = bread @ meat @ bread
    played = (wins.sum(axis=1) + wins.sum(axis=2)) > 0
    missing = ~played
    covariance[missing[:, :, None] | missing[:, None, :]] = np.inf
    return covariance


def half_widths(covariance: FloatArray, conversations: int, level: float) -> FloatArray:
    """(…, K) Elo half-widths from θ covariances at ``level``, widened for ``conversations``
    clusters as the boards widen theirs."""
    z = float(norm.ppf(0.5 + level / 2.0))
    variance = np.diagonal(covariance, axis1=-2, axis2=-1)
    factor = float(few_conversations_factor(np.array([conversations]), level)[0])
    out: FloatArray = z * ELO_SCALE * np.sqrt(np.maximum(variance, 0.0)) * factor
    return out


def gap_power(covariance: FloatArray, gap: float, level: float) -> FloatArray:
    """(studies,): the chance each simulated study tells apart two systems ``gap`` Elo apart
    (their difference's interval leaves out zero), at the median standard error of a
    difference between two of its systems: Φ(gap/SE − z)."""
    z = float(norm.ppf(0.5 + level / 2.0))
    k = covariance.shape[-1]
    i, j = np.triu_indices(k, 1)
    var = covariance[:, i, i] + covariance[:, j, j] - 2.0 * covariance[:, i, j]
    se = ELO_SCALE * np.sqrt(np.maximum(np.median(var, axis=1), 0.0))
    with np.errstate(divide="ignore"):
        power: FloatArray = norm.cdf(np.where(se > 0, gap / se, np.inf) - z)
    return power


def assisted_covariances(
    labelled: tuple[FloatArray, FloatArray, FloatArray],
    judged: FloatArray,
    people: int,
    judges: int,
    studies: int,
    rng: np.random.Generator,
) -> FloatArray:
    """(studies, K, K): θ covariances of the judge-assisted board (PPI++, λ power-tuned each
    time) for simulated studies in which people judge ``people`` conversations drawn from the
    pilot's ``labelled`` ones (their y, f and unlabelled-f matrices, each (L, K, K)) and the
    judges ``judges`` conversations in all: those and more drawn from ``judged`` (U, K, K, the
    judges' matrices of conversations people did not judge; none: from the labelled ones'
    unlabelled matrices)."""
    y, fl, fu = (np.asarray(m, dtype=np.float64) for m in labelled)
    extra = np.asarray(judged, dtype=np.float64)
    pool = extra if extra.shape[0] else fu
    out = []
    for _ in range(studies):
        picked = rng.integers(0, y.shape[0], people)
        more = rng.integers(0, pool.shape[0], max(judges - people, 0))
        zeros = np.zeros((more.size, *y.shape[1:]))
        stacks = (
            np.concatenate([y[picked], zeros]),
            np.concatenate([fl[picked], zeros]),
            np.concatenate([fu[picked], pool[more]]),
        )
        lam = power_tuned_lambda(*stacks)
        out.append(assisted_covariance(*stacks, lam))
    return np.asarray(out)


def smallest_size(
    share_meeting: Callable[[int], float], goal: float, start: int, cap: int = MAX_CONVERSATIONS
) -> int | None:
    """The smallest size m ≥ 2 with ``share_meeting(m)`` ≥ ``goal``, by doubling from ``start``
    then halving the bracket (None when even ``cap`` falls short)."""
    low, high = 1, max(2, start)
    while share_meeting(high) < goal:
        if high >= cap:
            return None
        low, high = high, min(cap, high * 2)
    while high - low > 1 and high > 2:
        middle = (low + high) // 2
        if middle < 2:
            break
        if share_meeting(middle) >= goal:
            high = middle
        else:
            low = middle
    return high
