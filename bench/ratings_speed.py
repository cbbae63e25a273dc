"""Ratings speed: heart's Bradley–Terry fit and conversation bootstrap vs the usual approach, a
scikit-learn logistic regression refitted on every bootstrap round.

The data are simulated from known strengths: 22 systems, 300 conversations, all 231 pairs judged
once per conversation (69,300 comparisons), each with a strength of 1–5.

* heart: per-conversation win matrices built from the rows with ``heart.stats.win_matrix``,
  ``fit_bradley_terry`` on their sum, then ``bootstrap_by_conversation`` (all rounds batched);
  the time is the median of ``--repeats`` runs of all three steps.
* baseline: ``LogisticRegression`` (lbfgs, no intercept, no penalty, tol 1e-6) on the doubled design
  (each comparison once as winner − loser with outcome 1 and once negated with outcome 0,
  sample weight = strength), refitted on the rows of each round's resampled conversations.
  Only ``--baseline-rounds`` rounds are run; the 1,000-round time is projected from them.

    .venv/bin/python bench/ratings_speed.py [--rounds 1000] [--baseline-rounds 20] [--repeats 3]

Targets: heart under 0.5 s and at least 500x faster than the baseline. Prints the ratio last.
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from heart.stats import (  # noqa: E402
    bootstrap_by_conversation,
    elo_from_theta,
    fit_bradley_terry,
    win_matrix,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

SYSTEMS = 22
CONVERSATIONS = 300


@dataclass(frozen=True)
class Rows:
    """One row per comparison, grouped by conversation."""

    winner: IntArray
    loser: IntArray
    strength: FloatArray
    conversation: IntArray


def simulate(seed: int) -> tuple[FloatArray, Rows]:
    """True strengths and every pair of every conversation judged once, in random a/b order."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 0.7, SYSTEMS)
    pairs = np.array(list(itertools.combinations(range(SYSTEMS), 2)))
    flip = rng.random((CONVERSATIONS, len(pairs))) < 0.5
    a = np.where(flip, pairs[:, 1], pairs[:, 0])
    b = np.where(flip, pairs[:, 0], pairs[:, 1])
    a_won = rng.random(a.shape) < 1.0 / (1.0 + np.exp(theta[b] - theta[a]))
    rows = Rows(
        winner=np.where(a_won, a, b).ravel(),
        loser=np.where(a_won, b, a).ravel(),
        strength=rng.integers(1, 6, a.shape).astype(np.float64).ravel(),
        conversation=np.repeat(np.arange(CONVERSATIONS), len(pairs)),
    )
    return theta, rows


def conversation_bounds(rows: Rows) -> IntArray:
    """Start of each conversation's rows, plus the end (rows are grouped by conversation)."""
    sizes = np.bincount(rows.conversation, minlength=CONVERSATIONS)
    return np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)


def heart_ratings(rows: Rows, rounds: int, seed: int) -> tuple[FloatArray, FloatArray]:
    """Point Elo and the bootstrap's Elo per round, the way heart computes them."""
    bounds = conversation_bounds(rows)
    per_conversation = np.stack(
        [
            win_matrix(
                rows.winner[start:end], rows.loser[start:end], rows.strength[start:end], SYSTEMS
            )
            for start, end in itertools.pairwise(bounds)
        ]
    )
    fit = fit_bradley_terry(per_conversation.sum(axis=0))
    boot = bootstrap_by_conversation(per_conversation, rounds=rounds, seed=seed)
    return fit.elo, boot.elo_rounds


def resample_counts(rounds: int, seed: int) -> IntArray:
    """How often each conversation is drawn per round: the same draws heart's bootstrap makes."""
    rng = np.random.Generator(np.random.PCG64(seed))
    counts: IntArray = rng.multinomial(
        CONVERSATIONS, np.full(CONVERSATIONS, 1.0 / CONVERSATIONS), size=rounds
    )
    return counts


@dataclass(frozen=True)
class DoubledDesign:
    """Each comparison twice: winner − loser with outcome 1, then negated with outcome 0."""

    x: FloatArray
    y: IntArray
    weight: FloatArray


def doubled_design(rows: Rows) -> DoubledDesign:
    n = rows.winner.size
    x = np.zeros((2 * n, SYSTEMS))
    index = np.arange(n)
    x[index, rows.winner] = 1.0
    x[index, rows.loser] = -1.0
    x[n + index] = -x[:n]
    y = np.concatenate([np.ones(n, dtype=np.int64), np.zeros(n, dtype=np.int64)])
    return DoubledDesign(x=x, y=y, weight=np.concatenate([rows.strength, rows.strength]))


def logistic_elo(design: DoubledDesign, take: IntArray | None = None) -> FloatArray:
    """Elo from an unpenalised logistic regression on the doubled design (rows ``take``)."""
    from sklearn.linear_model import LogisticRegression

    x, y, weight = design.x, design.y, design.weight
    if take is not None:
        x, y, weight = x[take], y[take], weight[take]
    model: Any = LogisticRegression(fit_intercept=False, C=np.inf, tol=1e-6, max_iter=1000)
    model.fit(x, y, sample_weight=weight)
    return elo_from_theta(np.asarray(model.coef_[0], dtype=np.float64))


def resampled_rows(counts: IntArray, bounds: IntArray, n: int) -> IntArray:
    """Rows of the doubled design for one round: each drawn conversation's rows, as often as
    it was drawn, in both copies."""
    drawn = np.repeat(np.arange(CONVERSATIONS), counts)
    single = np.concatenate([np.arange(bounds[c], bounds[c + 1]) for c in drawn])
    return np.concatenate([single, single + n]).astype(np.int64)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--baseline-rounds", type=int, default=20)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not 1 <= args.baseline_rounds <= args.rounds:
        parser.error("--baseline-rounds must lie between 1 and --rounds")
    if args.repeats < 1:
        parser.error("--repeats must be a positive integer")

    theta, rows = simulate(args.seed)
    n = rows.winner.size
    print(
        f"{SYSTEMS} systems, {CONVERSATIONS} conversations, {n:,} comparisons, "
        f"{args.rounds:,} bootstrap rounds"
    )

    heart_times = []
    for _ in range(args.repeats):
        start = time.perf_counter()
        heart_elo, heart_rounds = heart_ratings(rows, args.rounds, args.seed)
        heart_times.append(time.perf_counter() - start)
    heart_time = statistics.median(heart_times)

    start = time.perf_counter()
    design = doubled_design(rows)
    bounds = conversation_bounds(rows)
    baseline_elo = logistic_elo(design)
    setup_time = time.perf_counter() - start
    counts = resample_counts(args.rounds, args.seed)[: args.baseline_rounds]
    round_times, round_gaps = [], []
    for r in range(args.baseline_rounds):
        start = time.perf_counter()
        elo = logistic_elo(design, resampled_rows(counts[r], bounds, n))
        round_times.append(time.perf_counter() - start)
        round_gaps.append(float(np.abs(elo - heart_rounds[r]).max()))
    per_round = statistics.mean(round_times)
    baseline_time = setup_time + args.rounds * per_round

    true_gap = float(np.abs(heart_elo - elo_from_theta(theta)).max())
    point_gap = float(np.abs(heart_elo - baseline_elo).max())
    print(f"sanity: point Elo, heart vs baseline, max abs difference {point_gap:.2e} Elo")
    print(
        f"sanity: the {args.baseline_rounds} baseline rounds vs heart's same rounds, "
        f"max abs difference {max(round_gaps):.2e} Elo"
    )
    print(f"sanity: heart's point Elo vs the true Elo, max abs difference {true_gap:.1f} Elo")
    repeats = ", ".join(f"{t:.3f}" for t in heart_times)
    print(
        f"heart: {heart_time:.3f} s for the win matrices, the fit and {args.rounds:,} rounds "
        f"(median of {args.repeats}: {repeats} s)"
    )
    print(
        f"baseline: {per_round:.3f} s per round (mean of {args.baseline_rounds} measured "
        f"rounds), {setup_time:.3f} s for the design and the point fit"
    )
    print(
        f"baseline: {baseline_time:.1f} s for {args.rounds:,} rounds, PROJECTED from "
        f"{args.baseline_rounds} measured rounds (setup + {args.rounds:,} x per-round)"
    )
    print(f"{baseline_time / heart_time:.0f} ratio (baseline / heart)")


if __name__ == "__main__":
    main()
