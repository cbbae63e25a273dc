"""Small samples: how honest the board's 95% intervals and clear pairs are when a system met the
others in few conversations, before and after the evidence rule.

Simulated studies with known strengths. Five systems, θ = (0.8, 0.4, 0.0, -0.6, 0.0); the last
is as strong as the third, so that pair is never truly different. Every conversation has two
items; on each item every pair of the systems present is judged once by each of three LLM
judges, in a random order, with a strength of 1–5. Replies vary by context: each system's θ moves
by N(0, 0.4²) per conversation and N(0, 0.3²) per item, so verdicts within a conversation are
correlated, as in real studies. The truth is the Elo of the Bradley–Terry fit to the expected
win shares over that variation.

* ``all``: every system met the others in C conversations.
* ``new``: four systems share 40 conversations; the last, added late, took part in C of them.

Per setting and C in (1, 2, 5, 10, 30):

* before: the board as it was (the plain percentile interval from resampling conversations, Elo
  centred on every system, "clear" meaning a Benjamini–Hochberg adjusted bootstrap p < 0.05);
* after: ``heart.analyses.build_leaderboard`` (intervals only from 5 conversations, widened for
  few of them, Elo anchored on the systems with intervals, clear pairs where the intervals lie
  apart), and how often each system is marked preliminary.

Coverage is the share of intervals shown that hold the true Elo (centred on the same systems
as the board). The false clear rate is the share of studies calling the equal pair clear.

    .venv/bin/python bench/small_samples.py [--studies 300] [--rounds 500]

Target: coverage of 92–98% for every system not marked preliminary. Prints the worst such
coverage last.
"""

from __future__ import annotations

import argparse
import itertools
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from heart.analyses import Comparisons, build_leaderboard, per_conversation_wins  # noqa: E402
from heart.stats import (  # noqa: E402
    bootstrap_by_conversation,
    elo_differences,
    elo_from_theta,
    fit_bradley_terry,
)

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]

THETA = np.array([0.8, 0.4, 0.0, -0.6, 0.0])
EQUAL = (2, 4)  # the pair of equal strength
NAMES = [f"s{i}" for i in range(THETA.size)]
CONVERSATION_SD, ITEM_SD = 0.4, 0.3
ITEMS, JUDGES = 2, 3
ESTABLISHED = 40  # conversations of the four systems in the "new" setting
DEPTHS = (1, 2, 5, 10, 30)


def true_elo(anchor: npt.NDArray[np.bool_]) -> FloatArray:
    """Elo of the Bradley–Terry fit to the expected win shares, centred on ``anchor``."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(80)
    weights = weights / weights.sum()
    spread = np.sqrt(2.0 * (CONVERSATION_SD**2 + ITEM_SD**2))
    gap = THETA[:, None] - THETA[None, :]
    share = (weights / (1.0 + np.exp(-(gap[..., None] + spread * nodes)))).sum(axis=-1)
    np.fill_diagonal(share, 0.0)
    theta = fit_bradley_terry(1000.0 * share).theta
    return elo_from_theta(theta, anchor)


def simulate(rng: np.random.Generator, setting: str, depth: int) -> Comparisons:
    """One study's verdicts as the board reads them."""
    k = THETA.size
    if setting == "all":
        conversations = depth
        member = np.ones((depth, k), dtype=bool)
    else:
        conversations = ESTABLISHED
        member = np.ones((ESTABLISHED, k), dtype=bool)
        member[:, -1] = False
        member[rng.choice(ESTABLISHED, depth, replace=False), -1] = True
    a, b, outcome, judge, conversation, item = [], [], [], [], [], []
    for c in range(conversations):
        shift = rng.normal(0.0, CONVERSATION_SD, k)
        present = np.flatnonzero(member[c])
        for i in range(ITEMS):
            theta = THETA + shift + rng.normal(0.0, ITEM_SD, k)
            for x, y in itertools.combinations(present, 2):
                for j in range(JUDGES):
                    first, second = (x, y) if rng.random() < 0.5 else (y, x)
                    won = rng.random() < 1.0 / (1.0 + np.exp(theta[second] - theta[first]))
                    a.append(first)
                    b.append(second)
                    outcome.append(0 if won else 1)
                    judge.append(j)
                    conversation.append(c)
                    item.append(c * ITEMS + i)
    n = len(a)
    ints = np.asarray
    av, bv, it = ints(a, dtype=np.int64), ints(b, dtype=np.int64), ints(item, dtype=np.int64)
    items = int(it.max()) + 1
    return Comparisons(
        systems=list(NAMES),
        judges=[f"j{j}" for j in range(JUDGES)],
        conversations=[f"c{c}" for c in range(conversations)],
        a=av,
        b=bv,
        outcome=ints(outcome, dtype=np.int64),
        strength=rng.integers(1, 6, n).astype(np.float64),
        axis_outcome=np.full((n, 5), 2, dtype=np.int64),
        judge=ints(judge, dtype=np.int64),
        conversation=ints(conversation, dtype=np.int64),
        first_won=ints(outcome) == 0,
        length_a=np.full(n, 30, dtype=np.int64),
        length_b=np.full(n, 30, dtype=np.int64),
        pair=it * k * k + av * k + bv,
        order_ab=np.ones(n, dtype=bool),
        system_kinds=["model"] * k,
        system_families=NAMES,
        judge_families=["llm"] * JUDGES,
        judge_sources=["llm"] * JUDGES,
        items=[f"i{i}" for i in range(items)],
        item=it,
        item_subsets=["regular"] * items,
        completions=[f"i{i}/{s}" for i in range(items) for s in NAMES],
        completion_a=it * k + av,
        completion_b=it * k + bv,
        axis_strength=np.zeros((n, 5)),
        axis_given=np.zeros((n, 5), dtype=bool),
        judgments=[f"v{r}" for r in range(n)],
    )


@dataclass
class Tally:
    """Counts over the studies of one setting, per system."""

    shown_before: IntArray
    covered_before: IntArray
    shown: IntArray  # intervals shown after
    covered: IntArray
    firm: IntArray  # not preliminary
    covered_firm: IntArray
    clear_before: int = 0
    clear_after: int = 0

    @classmethod
    def empty(cls) -> Tally:
        def zero() -> IntArray:
            return np.zeros(THETA.size, dtype=np.int64)

        return cls(zero(), zero(), zero(), zero(), zero(), zero())


def score(tally: Tally, comparisons: Comparisons, rounds: int, seed: int) -> None:
    """Add one study's intervals and clear pairs, before and after, to ``tally``."""
    everyone = np.ones(THETA.size, dtype=bool)
    boot = bootstrap_by_conversation(per_conversation_wins(comparisons), rounds=rounds, seed=seed)
    truth = true_elo(everyone)
    shown = np.isfinite(boot.low)
    tally.shown_before += shown
    tally.covered_before += shown & (boot.low <= truth) & (truth <= boot.high)
    fit = fit_bradley_terry(per_conversation_wins(comparisons).sum(axis=0))
    before = elo_differences(fit.elo, boot.elo_rounds)
    tally.clear_before += any(d.significant for d in before if (d.i, d.j) == EQUAL)

    board = build_leaderboard(comparisons, rounds=rounds, seed=seed)
    at = np.asarray([NAMES.index(s.system) for s in board.standings])
    low = np.full(THETA.size, np.nan)
    high = np.full(THETA.size, np.nan)
    low[at] = [s.low for s in board.standings]
    high[at] = [s.high for s in board.standings]
    firm = np.zeros(THETA.size, dtype=bool)
    firm[at] = [not s.preliminary for s in board.standings]
    shown = np.isfinite(low)
    truth = true_elo(shown if shown.sum() >= 2 else everyone)
    inside = shown & (low <= truth) & (truth <= high)
    tally.shown += shown
    tally.covered += inside
    tally.firm += firm
    tally.covered_firm += firm & inside
    equal = {NAMES[EQUAL[0]], NAMES[EQUAL[1]]}
    tally.clear_after += any(
        {board.systems[d.i], board.systems[d.j]} == equal for d in board.clear_pairs
    )


def share(hits: IntArray | int, n: IntArray | int) -> str:
    total_n = int(np.sum(n))
    return f"{np.sum(hits) / total_n:6.1%}" if total_n else "     –"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--studies", type=int, default=300, help="simulated studies per setting")
    parser.add_argument("--rounds", type=int, default=500, help="bootstrap rounds per board")
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    if args.studies < 1 or args.rounds < 1:
        parser.error("--studies and --rounds must be at least 1")
    started = time.perf_counter()
    print(
        "setting  C  systems      coverage before  coverage after (shown)  "
        "marked preliminary  coverage after (not preliminary)  false clear before  after"
    )
    worst = 1.0
    for setting in ("all", "new"):
        for depth in DEPTHS:
            rng = np.random.default_rng([args.seed, depth, setting == "new"])
            tally = Tally.empty()
            for study in range(args.studies):
                score(tally, simulate(rng, setting, depth), args.rounds, study)
            groups = [("all five", slice(None))]
            if setting == "new":
                groups = [("the four", slice(0, 4)), ("the new one", slice(4, 5))]
            for label, cut in groups:
                firm = int(tally.firm[cut].sum())
                if firm:
                    worst = min(worst, tally.covered_firm[cut].sum() / firm)
                prelim = 1.0 - firm / (args.studies * len(THETA[cut]))
                clear = label != "the four"
                print(
                    f"{setting:7}  {depth:2d}  {label:11}  "
                    f"{share(tally.covered_before[cut], tally.shown_before[cut]):>15}  "
                    f"{share(tally.covered[cut], tally.shown[cut]):>22}  "
                    f"{prelim:18.0%}  "
                    f"{share(tally.covered_firm[cut], tally.firm[cut]):>32}  "
                    + (
                        f"{tally.clear_before / args.studies:18.1%}  "
                        f"{tally.clear_after / args.studies:5.1%}"
                        if clear
                        else f"{'':18}  {'':5}"
                    ),
                    flush=True,
                )
    print(
        f"{args.studies} studies per setting, {args.rounds} bootstrap rounds each, "
        f"{time.perf_counter() - started:.0f} s"
    )
    print(f"{worst:.3f} worst coverage of the 95% intervals among systems not marked preliminary")


if __name__ == "__main__":
    main()
