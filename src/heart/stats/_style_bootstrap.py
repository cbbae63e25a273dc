"""Bootstrap of the style-controlled fit that resamples whole conversations, all rounds at once:
each round refitted to convergence, or, on large designs, one Newton step from the full fit."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

import numpy as np
import scipy.sparse as sp
from scipy.special import expit

from heart.stats._bootstrap import _centred_on_present, conversation_draws
from heart.stats._bradley_terry import SEPARATION_RIDGE, bradley_terry_mle_exists
from heart.stats._intervals import _check_level, percentile_interval
from heart.stats._style import StyleControlledFit, StyleDesign, _gauges, fit_style_design
from heart.stats._types import BoolArray, FloatArray, IntArray

ROUND_TOL = 1e-8
"""Convergence of a bootstrap round's refit: far below what a percentile interval can show
(1e-8 in θ is under 2e-6 Elo), and a step fewer than the full fit's 1e-10."""
_ROUND_STEPS = 30
"""Newton steps a round may take in the batch before it is refitted alone."""
_BLOCK = 500_000
"""Rows × rounds held in memory at once."""
ONE_STEP_FROM = 10_000_000
"""Rows × rounds from which the ``auto`` method takes one Newton step per round instead of
refitting it: below, refitting takes well under a second; above, the steps are small (a round
moves the estimate by about its interval's spread, which shrinks as rows grow) and one step's
error, about the square of its size, is a fraction of an Elo point."""
ONE_STEP_LIMIT = 0.25
"""The largest first step (in θ and coefficients, 43 Elo) a one-step round keeps; a round that
moves further is refitted to convergence."""

StyleBootstrapMethod = Literal["auto", "one-step", "refit"]
STYLE_BOOTSTRAP_METHODS: tuple[StyleBootstrapMethod, ...] = ("auto", "one-step", "refit")


@dataclass(frozen=True, eq=False)
class StyleBootstrap:
    """Per round, the style-controlled Elo (NaN for a system the round left out) and the
    features' coefficients, with their percentile intervals. ``separated_rounds`` counts the
    rounds whose fit needed the ridge guard."""

    elo_rounds: FloatArray
    low: FloatArray
    high: FloatArray
    coefficient_rounds: FloatArray
    coefficient_low: FloatArray
    coefficient_high: FloatArray
    level: float
    rounds: int
    separated_rounds: int
    method: str = "refit"
    stepped_rounds: int = 0


def bootstrap_style_controlled(
    design: StyleDesign,
    *,
    conversations: int,
    rounds: int = 1000,
    seed: int = 0,
    level: float = 0.95,
    anchor: BoolArray | None = None,
    method: StyleBootstrapMethod = "auto",
    full: StyleControlledFit | None = None,
) -> StyleBootstrap:
    """Percentile intervals for the style-controlled Elo and coefficients from resampling whole
    conversations: the same multinomial draws as the plain Elo bootstrap (``conversation_draws``
    with the same seed), each round refitted from the full data's estimate with the features'
    scaling kept fixed, so the coefficients of every round are on one scale.

    Every round's fit is the maximum-likelihood estimate ``fit_style_design`` finds for the
    round's weights, each coefficient to within ``ROUND_TOL`` (times one plus the largest);
    nothing is approximated. It is found faster: a round's first Newton step from the full
    estimate is a sum of per-conversation statistics (each conversation's gradient and
    information there, times how often the round drew it), and the further steps run for all
    rounds together, each with the guard ``fit_style_design`` would choose (the ridge where the
    round's win graph is not strongly connected). A round stops once its step, or what its
    shrinking steps leave after it (``_settled``), is within the tolerance. A round that does
    not settle within ``_ROUND_STEPS`` steps, such as one where a feature alone separates the
    outcomes, is refitted alone by ``fit_style_design`` with its step-halving and fallbacks.

    ``method="one-step"`` keeps each round's first Newton step from the full estimate (a k-step
    bootstrap with k = 1), which needs no pass over the rows for any round: its error is about
    the square of the step, a fraction of an Elo point on a large design, far below the
    bootstrap's own Monte Carlo error; a round whose step exceeds ``ONE_STEP_LIMIT`` or that
    needs the ridge guard is refitted to convergence as above. ``auto`` takes one step from
    ``ONE_STEP_FROM`` rows × rounds and refits below. ``full``, the design's fit when the caller
    has it, spares fitting it again."""
    _check_level(level)
    if rounds < 1:
        raise ValueError(f"rounds must be a positive integer, got {rounds}")
    if method not in STYLE_BOOTSTRAP_METHODS:
        raise ValueError(
            f"method must be one of {', '.join(STYLE_BOOTSTRAP_METHODS)}, got {method!r}"
        )
    if method == "auto":
        method = "one-step" if design.x.shape[0] * rounds >= ONE_STEP_FROM else "refit"
    conv = design.conversation
    if conv.size and (conv.min() < 0 or conv.max() >= conversations):
        raise ValueError(f"the design's conversations must be numbered 0 to {conversations - 1}")
    counts = conversation_draws(conversations, rounds=rounds, seed=seed)
    if full is None:
        full = fit_style_design(design)
    k = design.n_systems
    start = np.concatenate([full.theta, full.coefficients])
    wins = _round_wins(design, counts, conversations)
    present = (wins.sum(axis=1) + wins.sum(axis=2)) > 0
    ridge = np.where(bradley_terry_mle_exists(wins), 0.0, SEPARATION_RIDGE)
    one_step = method == "one-step"
    beta, settled, stepped = _batched_newton(
        design, counts, start, present, ridge, conversations, one_step=one_step
    )
    separated = int(np.count_nonzero(settled & (ridge > 0)))
    for i in np.flatnonzero(~settled):
        fit = fit_style_design(design, row_weight=counts[i, conv], start=start, tol=ROUND_TOL)
        beta[i] = np.concatenate([fit.theta, fit.coefficients])
        present[i] = fit.compared
        separated += fit.separated
    elo = _centred_on_present(beta[:, :k], present, anchor)
    coefficients = beta[:, k:]
    low, high = percentile_interval(elo, level)
    c_low, c_high = percentile_interval(coefficients, level)
    return StyleBootstrap(
        elo_rounds=elo,
        low=low,
        high=high,
        coefficient_rounds=coefficients,
        coefficient_low=c_low,
        coefficient_high=c_high,
        level=level,
        rounds=rounds,
        separated_rounds=separated,
        method=method,
        stepped_rounds=stepped,
    )


def _round_wins(design: StyleDesign, counts: FloatArray, conversations: int) -> FloatArray:
    """(rounds, K, K) weighted win matrices of the rounds: each conversation's matrix, summed
    with the round's counts."""
    k = design.n_systems
    a = np.argmax(design.x[:, :k] > 0, axis=1)
    b = np.argmax(design.x[:, :k] < 0, axis=1)
    cell = design.conversation * k * k
    per = np.bincount(cell + a * k + b, weights=design.won_a, minlength=conversations * k * k)
    per += np.bincount(cell + b * k + a, weights=design.won_b, minlength=conversations * k * k)
    wins: FloatArray = (counts @ per.reshape(conversations, k * k)).reshape(-1, k, k)
    return wins


@dataclass(frozen=True, eq=False)
class _Information:
    """The information matrix Σ w·x·xᵀ of the rows for columns of row weights w, built from
    its upper triangle: each row's cells touching a system (its two systems with each other and
    with the features, 3 + 2F cells) by a sparse product, the features' own cells (z_f·z_g) by
    a dense one, never the P² products of a dense row."""

    systems: Any  # scipy.sparse (system cells, rows)
    system_cells: IntArray
    features: FloatArray  # (rows, feature cells)
    feature_cells: IntArray
    width: int

    @classmethod
    def of(cls, design: StyleDesign) -> _Information:
        k = design.n_systems
        n, width = design.x.shape
        a = np.argmax(design.x[:, :k] > 0, axis=1)
        b = np.argmax(design.x[:, :k] < 0, axis=1)
        f = np.arange(k, width)
        z = design.x[:, k:]
        cell = np.column_stack(
            [a * (width + 1), b * (width + 1), np.minimum(a, b) * width + np.maximum(a, b),
             a[:, None] * width + f, b[:, None] * width + f]
        )  # fmt: skip
        value = np.column_stack([np.ones(n), np.ones(n), -np.ones(n), z, -z])
        cells, at = np.unique(cell, return_inverse=True)
        row = np.broadcast_to(np.arange(n)[:, None], cell.shape)
        systems = sp.csr_matrix((value.ravel(), (at.ravel(), row.ravel())), shape=(cells.size, n))
        i, j = np.triu_indices(width - k)
        return cls(systems, cells, z[:, i] * z[:, j], (k + i) * width + k + j, width)

    def __call__(self, weight: Any) -> FloatArray:
        """(R, P, P) for row weights (rows, R), dense or sparse."""
        on_systems = self.systems @ weight
        if sp.issparse(on_systems):
            on_systems = on_systems.toarray()
        upper = np.zeros((weight.shape[1], self.width * self.width))
        upper[:, self.system_cells] = on_systems.T
        upper[:, self.feature_cells] = np.asarray(weight.T @ self.features)
        square = upper.reshape(-1, self.width, self.width)
        full: FloatArray = square + square.transpose(0, 2, 1)
        diagonal = np.arange(self.width)
        full[:, diagonal, diagonal] = square[:, diagonal, diagonal]
        return full


def _steps(matrices: FloatArray, gradient: FloatArray) -> tuple[FloatArray, BoolArray]:
    """Newton steps matrix⁻¹·gradient for (R, P, P) and (R, P); a round whose matrix is singular
    gets a zero step and False."""
    try:
        step: FloatArray = np.asarray(
            np.linalg.solve(matrices, gradient[:, :, None])[:, :, 0], dtype=np.float64
        )
        ok = np.all(np.isfinite(step), axis=1)
    except np.linalg.LinAlgError:
        step = np.zeros_like(gradient)
        ok = np.zeros(gradient.shape[0], dtype=bool)
        for i in range(gradient.shape[0]):
            try:
                step[i] = np.linalg.solve(matrices[i], gradient[i])
            except np.linalg.LinAlgError:
                continue
            ok[i] = bool(np.all(np.isfinite(step[i])))
    return np.where(ok[:, None], step, 0.0), ok


def _settled(size: FloatArray, last: FloatArray, scale: FloatArray) -> BoolArray:
    """Whether a round has converged once it takes a Newton step of ``size`` after one of
    ``last``: the step itself is within ``ROUND_TOL`` (times ``scale``, one plus the largest
    coefficient), or the steps shrink so fast (ratio ρ) that what remains after it, at most
    about ρ/(1 − ρ) of it (Newton's steps shrink faster than geometrically), is. This spares the
    last pass over the rows, whose step would be of the order of ROUND_TOL squared."""
    ratio = np.divide(size, last, out=np.ones_like(size), where=last > 0)
    remaining = np.where(ratio < 1.0, ratio / np.maximum(1.0 - ratio, 1e-300), np.inf) * size
    settled: BoolArray = (size <= ROUND_TOL * scale) | (remaining <= ROUND_TOL * scale)
    return settled


def _batched_newton(
    design: StyleDesign,
    counts: FloatArray,
    start: FloatArray,
    present: BoolArray,
    ridge: FloatArray,
    conversations: int,
    *,
    one_step: bool = False,
) -> tuple[FloatArray, BoolArray, int]:
    """Newton–Raphson for all rounds at once (rows of ``counts``; round r compares the systems
    ``present[r]`` and is penalised by ``ridge[r]``) from ``start``, the full data's estimate
    (a system the round left out at 0); per round the estimate, θ centred, and whether it
    converged. The first step needs no pass over the rows: the rows of a system a round left
    out weigh nothing in it, so every round's gradient and information at its start are sums of
    each conversation's at ``start``, computed once. With ``one_step`` a round whose first step
    is at most ``ONE_STEP_LIMIT`` and that needs no ridge stops there; the count of those is
    returned third."""
    x, conv = design.x, design.conversation
    n, width = x.shape
    k = design.n_systems
    rounds = counts.shape[0]
    total = design.won_a + design.won_b
    gauge = _gauges(present, width, ridge)
    information = _Information.of(design)
    compared = present.any(axis=1)
    known = np.column_stack([present, np.ones((rounds, width - k), dtype=bool)])
    beta = np.where(known, start, 0.0)

    p = expit(x @ start)
    by_conversation = sp.csr_matrix((np.ones(n), (np.arange(n), conv)), shape=(n, conversations))
    gradient = by_conversation.T @ (x * (design.won_a - total * p)[:, None])
    per_conversation = information(by_conversation.multiply((total * p * (1.0 - p))[:, None]))
    step, ok = _steps(
        (counts @ per_conversation.reshape(conversations, -1)).reshape(rounds, width, width)
        + gauge,
        counts @ gradient - ridge[:, None] * beta,
    )
    moved = np.abs(step).max(axis=1)
    done = ok & (moved <= ROUND_TOL * (1.0 + np.abs(beta).max(axis=1)))
    stepped = 0
    if one_step:
        kept = ok & ~done & (moved <= ONE_STEP_LIMIT) & (ridge == 0) & compared
        stepped = int(np.count_nonzero(kept))
        done |= kept
    beta += step
    live = np.flatnonzero(ok & ~done & compared)  # packed into blocks: none holds a settled one

    block = max(1, _BLOCK // max(n, 1))
    for first in range(0, live.size, block):
        mine = live[first : first + block]
        weight = np.ascontiguousarray(counts[mine].T)[conv]  # (rows, rounds of the block)
        won = weight * design.won_a[:, None]
        played = np.multiply(weight, total[:, None], out=weight)
        last = moved[mine]
        for _ in range(_ROUND_STEPS - 1):
            if mine.size == 0:
                break
            now = beta[mine]
            p = expit(x @ now.T)
            share = played * p
            gradient = (won - share).T @ x - ridge[mine, None] * now
            share -= share * p
            step, ok = _steps(information(share) + gauge[mine], gradient)
            size = np.abs(step).max(axis=1)
            settled = _settled(size, last, 1.0 + np.abs(now).max(axis=1))
            beta[mine] += step
            done[mine] = ok & settled
            keep = ok & ~settled
            mine, won, played, last = mine[keep], won[:, keep], played[:, keep], size[keep]
    done &= compared
    theta = beta[:, :k]
    mean = (theta * present).sum(axis=1, keepdims=True) / np.maximum(
        present.sum(axis=1, keepdims=True), 1
    )
    beta[:, :k] = np.where(present, theta - mean, 0.0)
    return beta, done, stepped
