"""Style-control speed: the 1,000-round conversation bootstrap of the style-controlled
Bradley–Terry fit as a board runs it (``bootstrap_style_controlled`` with its default method,
which on this design takes one Newton step per round from the full fit), against refitting
every round to convergence, all rounds batched (``method="refit"``), and against refitting the
model alone on every round (``fit_style_design`` per round from the full estimate, to the same
tolerance: the method before the rounds were batched).

The data are simulated: 15 systems, 300 conversations, all 105 pairs judged once per
conversation (31,500 comparisons), each with a strength of 1–5; every reply has a word count,
questions, markdown elements and warmth drawn around its system's habits, and the verdicts
follow strength plus length.

    .venv/bin/python bench/style_speed.py [--rounds 1000] [--reference-rounds 1000]

The per-round refit runs ``--reference-rounds`` rounds (its 1,000-round time projected from
them when fewer); the batched refit agrees with it round by round on those, and the default's
interval ends are compared with the refit's. Prints the default's speed-up over the per-round
refit last.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from heart.stats import (  # noqa: E402
    StyleDesign,
    bootstrap_style_controlled,
    conversation_draws,
    fit_style_design,
    style_design,
    style_differences,
)

FloatArray = npt.NDArray[np.float64]

SYSTEMS = 15
CONVERSATIONS = 300
FEATURES = ("length", "questions", "markdown", "warmth")


def simulate(seed: int) -> StyleDesign:
    """Every pair of every conversation judged once, in random a/b order."""
    rng = np.random.default_rng(seed)
    theta = rng.normal(0.0, 0.7, SYSTEMS)
    habits = np.column_stack(
        [
            rng.uniform(15, 120, SYSTEMS),  # words
            rng.uniform(0.2, 1.5, SYSTEMS),  # questions
            rng.uniform(0.0, 1.0, SYSTEMS) ** 3 * 4,  # markdown elements
            rng.uniform(0.0, 3.0, SYSTEMS),  # word pairs shared with stock warmth
        ]
    )
    pairs = np.array(list(itertools.combinations(range(SYSTEMS), 2)))
    flip = rng.random((CONVERSATIONS, len(pairs))) < 0.5
    a = np.where(flip, pairs[:, 1], pairs[:, 0]).ravel()
    b = np.where(flip, pairs[:, 0], pairs[:, 1]).ravel()
    style_a = rng.poisson(habits[a]).astype(np.float64)
    style_b = rng.poisson(habits[b]).astype(np.float64)
    d = style_differences(style_a[:, 0], style_b[:, 0])
    p = 1.0 / (1.0 + np.exp(-(theta[a] - theta[b] + 0.6 * d / np.sqrt((d * d).mean()))))
    outcome = np.where(rng.random(a.size) < p, 0, 1)
    strength = rng.integers(1, 6, a.size).astype(np.float64)
    conversation = np.repeat(np.arange(CONVERSATIONS), len(pairs))
    return style_design(a, b, outcome, strength, SYSTEMS, style_a, style_b, FEATURES, conversation)


def per_round_refit(
    design: StyleDesign, rounds: int, of: int, seed: int
) -> tuple[FloatArray, float]:
    """Elo of the first ``rounds`` of ``of`` rounds, each refitted alone, and the seconds
    taken."""
    begin = time.perf_counter()
    full = fit_style_design(design)
    start = np.concatenate([full.theta, full.coefficients])
    counts = conversation_draws(CONVERSATIONS, rounds=of, seed=seed)
    elo = np.empty((rounds, SYSTEMS))
    for i in range(rounds):
        fit = fit_style_design(
            design, row_weight=counts[i, design.conversation], start=start, tol=1e-8
        )
        elo[i] = fit.elo
    return elo, time.perf_counter() - begin


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=1000)
    parser.add_argument("--reference-rounds", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    if not 1 <= args.reference_rounds <= args.rounds:
        parser.error("--reference-rounds must lie between 1 and --rounds")

    design = simulate(args.seed)
    print(
        f"{SYSTEMS} systems, {CONVERSATIONS} conversations, {design.x.shape[0]:,} distinct "
        f"comparison rows, {len(design.features)} features, {args.rounds:,} rounds"
    )
    begin = time.perf_counter()
    default = bootstrap_style_controlled(
        design, conversations=CONVERSATIONS, rounds=args.rounds, seed=args.seed
    )
    fast = time.perf_counter() - begin
    print(
        f"default ({default.method}): {fast:.2f} s ({default.stepped_rounds} rounds settled by "
        "one step)"
    )
    begin = time.perf_counter()
    boot = bootstrap_style_controlled(
        design, conversations=CONVERSATIONS, rounds=args.rounds, seed=args.seed, method="refit"
    )
    batched = time.perf_counter() - begin
    print(f"batched refit: {batched:.2f} s ({boot.separated_rounds} separated rounds)")
    ends = max(np.abs(default.low - boot.low).max(), np.abs(default.high - boot.high).max())
    rounds_gap = float(np.nanmax(np.abs(default.elo_rounds - boot.elo_rounds)))
    print(
        f"default against refit: interval ends within {ends:.3f} Elo, rounds within "
        f"{rounds_gap:.3f} Elo"
    )

    elo, reference = per_round_refit(design, args.reference_rounds, args.rounds, args.seed)
    projected = reference * args.rounds / args.reference_rounds
    gap = float(np.abs(elo - boot.elo_rounds[: args.reference_rounds]).max())
    print(
        f"per-round refit: {reference:.2f} s for {args.reference_rounds:,} rounds"
        + ("" if args.reference_rounds == args.rounds else f", {projected:.1f} s projected")
    )
    print(f"sanity: batched and per-round refits, round by round, max abs difference {gap:.2e} Elo")
    print(f"batched refit {projected / batched:.0f}x faster than per-round refit")
    print(
        f"{projected / fast:.0f}x faster by default than per-round refit "
        f"({projected:.1f} s -> {fast:.2f} s)"
    )


if __name__ == "__main__":
    main()
