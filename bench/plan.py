"""Does a study of the size `heart plan` names meet its target?

Pilots of 30 conversations are simulated (systems of known strength, an LLM judge on every
item-pair, people on a fifth of them); a plan is made from each; then fresh studies of each
planned size are simulated from the same model and fitted as the boards fit them. For a
half-width target, the share of studies whose every interval is that narrow (the LLM judges'
board and the people's board); for a gap target, the share that tell apart the two systems that
gap apart (their difference's interval leaves out zero). Both shares should sit near 80%.

    python bench/plan.py [--studies 200] [--rounds 500]

Last line: the share of planned studies meeting the half-width target on the judges' board.
"""

from __future__ import annotations

import argparse
import time
from dataclasses import replace

import numpy as np
from _people_and_judges import Design, simulate, true_people_elo

from heart.analyses import PlanTarget, Prices, build_board, plan_study

PRICES = Prices(float("nan"), 60.0, False, None, "£")


def widest(board) -> float:  # type: ignore[no-untyped-def]
    return float(max((s.high - s.low) / 2 for s in board.leaderboard.standings))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--seed", type=int, default=11)
    parser.add_argument("--pilots", type=int, default=5)
    args = parser.parse_args()
    start = time.perf_counter()
    rng = np.random.default_rng(args.seed)
    design = Design(conversations=30, people_share=0.2, bias_elo=0.0)
    truth = true_people_elo(design)
    width, gap = 40.0, float(truth[0] - truth[1])
    judge_met = people_met = told_apart = 0
    sizes = []
    per_pilot = max(args.studies // args.pilots, 1)
    for _ in range(args.pilots):  # a plan rests on its pilot: several pilots, fresh studies each
        pilot = simulate(design, rng)
        plan = plan_study(pilot, PlanTarget(half_width=width), PRICES, seed=args.seed)
        power_plan = plan_study(pilot, PlanTarget(gap=gap), PRICES, seed=args.seed)
        assert plan.conversations and plan.people_conversations and power_plan.conversations
        sizes.append((plan.conversations, plan.people_conversations, power_plan.conversations))
        for _ in range(per_pilot):
            seed = int(rng.integers(1 << 30))
            fit = {"rounds": args.rounds, "seed": seed, "ablations": False,
                   "axis_intervals": False}  # fmt: skip
            study = simulate(replace(design, conversations=plan.conversations), rng)
            judge_met += widest(build_board(study.by_source("llm"), "llm", "all", **fit)) <= width
            people = simulate(replace(design, conversations=plan.people_conversations), rng)
            people_board = build_board(people.by_source("human"), "human", "all", **fit)
            people_met += widest(people_board) <= width
            powered = simulate(replace(design, conversations=power_plan.conversations), rng)
            board = build_board(powered.by_source("llm"), "llm", "all", **fit).leaderboard
            names = board.systems
            (difference,) = [d for d in board.differences
                             if {names[d.i], names[d.j]} == {"s0", "s1"}]  # fmt: skip
            told_apart += difference.low > 0 or difference.high < 0
    n = per_pilot * args.pilots
    print(f"planned conversations per pilot (judges ±{width:g}, people ±{width:g}, a {gap:.0f} "
          f"Elo gap): {sizes}")  # fmt: skip
    print(
        f"at the planned sizes: judges' board within ±{width:g} in {judge_met / n:.1%}, "
        f"people's board in {people_met / n:.1%}; s0 and s1 told apart in {told_apart / n:.1%} "
        f"({args.pilots} pilots, {n} studies each, {args.rounds} rounds, "
        f"{time.perf_counter() - start:.0f} s)"
    )
    print(f"{judge_met / n:.3f} share of planned studies meeting the half-width target (judges)")


if __name__ == "__main__":
    main()
