"""Judge-assisted Bradley–Terry (prediction-powered inference, PPI++): people's strengths with
the variance the judges' predictions explain taken out, and the judges' bias measured on the
pairs people also judged and removed.

Three stacks of per-conversation win matrices (C, K, K) describe a study:

- ``labelled_y``: people's verdicts, outcome y (ties half), each with its weight w;
- ``labelled_f``: the same points with the judges' prediction f in place of y;
- ``unlabelled_f``: every pair the judges judged, outcome f, weight one each.

With n and N their total weights, θ̂(λ) minimises
L_y(θ) + λ·[L_u(θ; f) − L_l(θ; f)], each L the weighted mean Bradley–Terry log-loss of its
points. Multiplied through by n this is the log-likelihood of one matrix
M = Y + λ·(n/N·F_u − F_l), whose entries may be negative but whose pair totals M + Mᵀ =
(1 − λ)(Y + Yᵀ) + λ·n/N·(F_u + F_uᵀ) are not, for λ in [0, 1]: the fit is the board's Newton
loop on M. λ = 0 is people alone.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.special import expit

from heart.stats._bootstrap import REPLICATE_TOL, _centred_on_present, conversation_draws
from heart.stats._bradley_terry import (
    SEPARATION_RIDGE,
    _newton,
    bradley_terry_mle_exists,
)
from heart.stats._intervals import _check_level, percentile_interval
from heart.stats._types import BoolArray, FloatArray


@dataclass(frozen=True, eq=False)
class AssistedBootstrap:
    """People's Elo with and without the judges' help, per bootstrap round.

    ``assisted_rounds`` and ``alone_rounds`` are (rounds, K), NaN where a round left a system
    out; ``low``/``high`` the assisted percentile interval; ``alone_low``/``alone_high``
    people's alone on the same points."""

    assisted_rounds: FloatArray
    alone_rounds: FloatArray
    low: FloatArray
    high: FloatArray
    alone_low: FloatArray
    alone_high: FloatArray
    separated_rounds: int


def _stack(*stacks: FloatArray) -> list[FloatArray]:
    shaped = [np.asarray(s, dtype=np.float64) for s in stacks]
    first = shaped[0].shape
    if len(first) != 3 or first[1] != first[2]:
        raise ValueError(f"win matrices must be stacked (C, K, K), got {first}")
    for s in shaped:
        if s.shape != first:
            raise ValueError(
                f"the three stacks must have one shape, got {[x.shape for x in shaped]}"
            )
        if not np.all(np.isfinite(s)) or np.any(s < 0):
            raise ValueError("win matrices must be finite and non-negative")
    return shaped


def assisted_matrix(
    labelled_y: FloatArray, labelled_f: FloatArray, unlabelled_f: FloatArray, lam: float
) -> FloatArray:
    """M = Y + λ·(n/N·F_u − F_l) for summed (K, K) matrices or stacks of them (…, K, K),
    n and N the weights each stack holds (zero unlabelled weight: Y alone)."""
    if not 0.0 <= lam <= 1.0:
        raise ValueError(f"lambda must lie in [0, 1], got {lam}")
    y, fl, fu = (np.asarray(m, dtype=np.float64) for m in (labelled_y, labelled_f, unlabelled_f))
    n = y.sum(axis=(-2, -1), keepdims=True)
    big_n = fu.sum(axis=(-2, -1), keepdims=True)
    scale = np.divide(n, big_n, out=np.zeros_like(n), where=big_n > 0)
    matrix: FloatArray = y + lam * (scale * fu - fl)
    return matrix


def _guard(matrix: FloatArray) -> tuple[FloatArray, BoolArray]:
    """Per matrix of a stack, the ridge its fit needs: none when every entry is non-negative and
    the maximum exists (the board's rule), else the board's guard (a rectified share outside
    [0, 1] can leave the loss without a minimum)."""
    negative = (matrix < -1e-12).any(axis=(-2, -1))
    exists = bradley_terry_mle_exists(np.maximum(matrix, 0.0))
    guarded = negative | ~exists
    return np.where(guarded, SEPARATION_RIDGE, 0.0), guarded


def fit_assisted(
    labelled_y: FloatArray, labelled_f: FloatArray, unlabelled_f: FloatArray, lam: float
) -> tuple[FloatArray, bool]:
    """θ̂(λ) (K,), mean zero over the compared systems, and whether the ridge guard was needed.
    Each argument is a (K, K) matrix (the conversations summed) or a (C, K, K) stack."""
    y, fl, fu = (_summed(m) for m in (labelled_y, labelled_f, unlabelled_f))
    matrix = assisted_matrix(y, fl, fu, lam)[None]
    ridge, guarded = _guard(matrix)
    theta, _, _ = _newton(matrix, ridge, tol=1e-10, max_iter=200)
    return theta[0], bool(guarded[0])


def _summed(m: FloatArray) -> FloatArray:
    a = np.asarray(m, dtype=np.float64)
    return a.sum(axis=0) if a.ndim == 3 else a


def _gradients(stack: FloatArray, theta: FloatArray) -> FloatArray:
    """Per conversation, the gradient of its Bradley–Terry log-loss at θ (C, K):
    Σ_j T_ij·σ(θi − θj) − Σ_j W_ij, T = W + Wᵀ."""
    p = expit(theta[:, None] - theta[None, :])
    total = stack + stack.transpose(0, 2, 1)
    grads: FloatArray = (total * p).sum(axis=2) - stack.sum(axis=2)
    return grads


def _sandwich_parts(
    y: FloatArray, fl: FloatArray, fu: FloatArray, theta: FloatArray
) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per conversation A_c and B_c (centred), and the bread H⁺ (see ``power_tuned_lambda``)."""
    n, big_n = y.sum(), fu.sum()
    a = _gradients(y, theta) / n
    b = _gradients(fu, theta) / big_n - _gradients(fl, theta) / n
    a -= a.mean(axis=0)
    b -= b.mean(axis=0)
    pooled = y.sum(axis=0)
    total = pooled + pooled.T
    p = expit(theta[:, None] - theta[None, :])
    curvature = total * p * (1.0 - p) / n
    hessian = np.diag(curvature.sum(axis=1)) - curvature
    bread: FloatArray = np.linalg.pinv(hessian, hermitian=True)
    return a, b, bread


def power_tuned_lambda(
    labelled_y: FloatArray, labelled_f: FloatArray, unlabelled_f: FloatArray
) -> float:
    """PPI++'s λ in [0, 1] that minimises the trace of θ̂(λ)'s estimated covariance, the
    conversations taken as clusters (a conversation's labelled and unlabelled points move
    together).

    At people's own fit θ̂(0), per conversation c: A_c = ∇ of its labelled y-loss over n, and
    B_c = ∇ of its unlabelled f-loss over N minus ∇ of its labelled f-loss over n. θ̂(λ)'s
    covariance is H⁺ Σ_c (A_c + λB_c)(A_c + λB_c)ᵀ H⁺ (centred over conversations), H people's
    Hessian over n; its trace is least at λ = −tr(H⁺ S_AB H⁺)/tr(H⁺ S_BB H⁺), clipped to
    [0, 1]. Zero when the judges predict nothing (no unlabelled weight, or no spread in B: say
    people judged every item-pair the judges did, as often each)."""
    y, fl, fu = _stack(labelled_y, labelled_f, unlabelled_f)
    if y.sum() <= 0 or fu.sum() <= 0 or y.shape[0] < 2:
        return 0.0
    theta, _ = fit_assisted(y, fl, fu, 0.0)
    a, b, bread = _sandwich_parts(y, fl, fu, theta)
    sab = a.T @ b
    denominator = float(np.trace(bread @ (b.T @ b) @ bread))
    scale = float(np.trace(bread @ (a.T @ a) @ bread))
    if not np.isfinite(denominator) or denominator <= 1e-12 * max(scale, 1e-300):
        return 0.0  # the judges' points repeat people's own: nothing to learn from them
    numerator = float(np.trace(bread @ (sab + sab.T) @ bread)) / 2.0
    return float(np.clip(-numerator / denominator, 0.0, 1.0)) + 0.0  # never -0.0


def assisted_covariance(
    labelled_y: FloatArray, labelled_f: FloatArray, unlabelled_f: FloatArray, lam: float
) -> FloatArray:
    """The estimated covariance (K, K) of θ̂(λ), centred, the conversations as clusters:
    H⁺ Σ_c (A_c + λB_c)(A_c + λB_c)ᵀ H⁺ at θ̂(λ) (see ``power_tuned_lambda``); at λ = 0 people's
    own cluster-robust covariance. Infinite for a system people never compared."""
    y, fl, fu = _stack(labelled_y, labelled_f, unlabelled_f)
    k = y.shape[-1]
    if y.sum() <= 0:
        return np.full((k, k), np.inf)
    theta, _ = fit_assisted(y, fl, fu, lam)
    if fu.sum() <= 0:
        lam = 0.0
        fu = np.ones_like(fu)  # any weight: λ = 0 leaves it out
    a, b, bread = _sandwich_parts(y, fl, fu, theta)
    scores = a + lam * b
    covariance: FloatArray = bread @ (scores.T @ scores) @ bread
    pooled = y.sum(axis=0)
    missing = (pooled.sum(axis=0) + pooled.sum(axis=1)) <= 0
    covariance[missing[:, None] | missing[None, :]] = np.inf
    return covariance


def bootstrap_assisted(
    labelled_y: FloatArray,
    labelled_f: FloatArray,
    unlabelled_f: FloatArray,
    lam: float,
    *,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    anchor: BoolArray | None = None,
) -> AssistedBootstrap:
    """The conversation bootstrap of θ̂(λ) and of people alone (θ̂(0)) on the same draws: each
    round resamples conversations (the project's ``conversation_draws``), labelled and
    unlabelled points together, and refits both; Elo centred per round as the boards centre it
    (``anchor``: the systems the scale rests on)."""
    _check_level(level)
    y, fl, fu = _stack(labelled_y, labelled_f, unlabelled_f)
    c, k, _ = y.shape
    counts = conversation_draws(c, rounds=rounds, seed=seed)

    def drawn(stack: FloatArray) -> FloatArray:
        out: FloatArray = (counts @ stack.reshape(c, k * k)).reshape(rounds, k, k)
        return out

    dy, dfl, dfu = drawn(y), drawn(fl), drawn(fu)
    matrices = np.concatenate([assisted_matrix(dy, dfl, dfu, lam), dy])
    ridge, guarded = _guard(matrices)
    start, _ = fit_assisted(y, fl, fu, lam)
    theta, _, _ = _newton(
        matrices, ridge, tol=REPLICATE_TOL, max_iter=200, start=np.tile(start, (2 * rounds, 1))
    )
    present = np.concatenate([(dy.sum(axis=1) + dy.sum(axis=2)) > 0] * 2)
    assisted = _centred_on_present(theta[:rounds], present[:rounds], anchor)
    alone = _centred_on_present(theta[rounds:], present[rounds:], anchor)
    low, high = percentile_interval(assisted, level)
    alone_low, alone_high = percentile_interval(alone, level)
    return AssistedBootstrap(
        assisted_rounds=assisted,
        alone_rounds=alone,
        low=low,
        high=high,
        alone_low=alone_low,
        alone_high=alone_high,
        separated_rounds=int(guarded[:rounds].sum()),
    )
