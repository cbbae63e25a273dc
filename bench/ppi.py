"""The judge-assisted people's board on simulated studies: does it cover people's true Elo, and
how much narrower is it than people alone?

A judge agrees with people on most decisive pairs but rates one system 100 Elo above people's
view; people judge 10% of the item-pairs. Per study the assisted board (PPI++) and, on the same
conversations, people alone and the judge alone are fitted; coverage of people's true Elo is
counted per system. A second setting gives the judge coin flips: λ should fall near 0 and the
width stay near people alone's.

    python bench/ppi.py [--studies 200] [--rounds 500]

Last line: the mean width ratio, assisted over people alone.
"""

from __future__ import annotations

import argparse
import time

import numpy as np
from _people_and_judges import Design, simulate, true_people_elo

from heart.analyses import build_assisted_board, build_board


def agreement(comparisons) -> float:  # type: ignore[no-untyped-def]
    """Share of item-pairs both judged where the judge and the person picked the same reply."""
    human = np.asarray([s == "human" for s in comparisons.judge_sources])[comparisons.judge]
    judge_of = dict(
        zip(comparisons.pair[~human].tolist(), comparisons.outcome[~human].tolist(), strict=True)
    )
    same = [
        judge_of[p] == o
        for p, o in zip(comparisons.pair[human], comparisons.outcome[human], strict=True)
    ]
    return float(np.mean(same))


def tally(board, truth: np.ndarray, shown: np.ndarray, covered: np.ndarray) -> None:  # type: ignore[no-untyped-def]
    """Count, per system with an interval, whether it covers people's true Elo."""
    for s in board.leaderboard.standings:
        i = int(s.system[1:])
        if np.isfinite(s.low):
            shown[i] += 1
            covered[i] += s.low <= truth[i] <= s.high


def run(design: Design, studies: int, rounds: int, seed: int) -> dict[str, float]:
    truth = true_people_elo(design)
    rng = np.random.default_rng(seed)
    covered = np.zeros(truth.size)
    judge_covered = np.zeros(truth.size)
    alone_covered = np.zeros(truth.size)
    alone_shown = np.zeros(truth.size)
    shown = np.zeros(truth.size)
    ratios, lams, agreements, effective, widths, labelled = [], [], [], [], [], []
    for _ in range(studies):
        comparisons = simulate(design, rng)
        board = build_assisted_board(
            comparisons, "all", rounds=rounds, seed=int(rng.integers(1 << 30))
        )
        assert board is not None and board.assistance is not None
        judge = build_board(
            comparisons.by_source("llm"), "llm", "all", rounds=rounds, ablations=False,
            axis_intervals=False,
        )  # fmt: skip
        tally(board, truth, shown, covered)
        alone = build_board(
            comparisons.by_source("human"), "human", "all", rounds=rounds, ablations=False,
            axis_intervals=False,
        )  # fmt: skip
        tally(alone, truth, alone_shown, alone_covered)
        for s in judge.leaderboard.standings:
            i = int(s.system[1:])
            judge_covered[i] += s.low <= truth[i] <= s.high
        ratios.append(board.assistance.width_ratio)
        widths.append(np.nanmean([s.high - s.low for s in board.leaderboard.standings]))
        labelled.append(board.assistance.labelled)
        lams.append(board.assistance.lam)
        effective.append(board.assistance.effective_verdicts / board.assistance.labelled)
        agreements.append(agreement(comparisons))
    coverage = covered / np.maximum(shown, 1)
    alone_coverage = alone_covered / np.maximum(alone_shown, 1)
    return {
        "coverage_mean": float(covered.sum() / max(shown.sum(), 1)),
        "alone_mean": float(alone_covered.sum() / max(alone_shown.sum(), 1)),
        "alone_min": float(alone_coverage.min()),
        "alone_max": float(alone_coverage.max()),
        "coverage_min": float(coverage.min()),
        "coverage_max": float(coverage.max()),
        "coverage_favoured": float(coverage[1]),
        "judge_coverage_favoured": float(judge_covered[1] / studies),
        "width_ratio": float(np.mean(ratios)),
        "width": float(np.mean(widths)),
        "labelled": float(np.mean(labelled)),
        "lambda": float(np.mean(lams)),
        "effective_share": float(np.mean(effective)),
        "agreement": float(np.mean(agreements)),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=500)
    parser.add_argument("--seed", type=int, default=7)
    args = parser.parse_args()
    start = time.perf_counter()
    settings = {
        "biased judge": Design(),
        "two biased judges": Design(judges=2),
        "coin-flip judge": Design(judge_noise=1.0),
        "active seats": Design(seats="active"),
    }
    results = {}
    for name, design in settings.items():
        r = run(design, args.studies, args.rounds, args.seed)
        results[name] = r
        print(
            f"{name}: agreement with people {r['agreement']:.0%}, λ {r['lambda']:.2f}, "
            f"width ratio {r['width_ratio']:.3f}, people's verdicts worth ×"
            f"{r['effective_share']:.2f}, coverage of people's true Elo "
            f"{r['coverage_min']:.1%}–{r['coverage_max']:.1%}, mean {r['coverage_mean']:.1%} "
            "(favoured system "
            f"{r['coverage_favoured']:.1%}; the judge's own board covers it in "
            f"{r['judge_coverage_favoured']:.1%}; people alone cover "
            f"{r['alone_min']:.1%}–{r['alone_max']:.1%}, mean {r['alone_mean']:.1%})",
            flush=True,
        )
    uniform, active = results["biased judge"], results["active seats"]
    print(
        f"active seats (people.assist: active) against uniform, one biased judge: "
        f"{active['labelled']:.0f} against {uniform['labelled']:.0f} people's verdicts a study, "
        f"mean assisted interval {active['width']:.1f} against {uniform['width']:.1f} Elo wide "
        f"({active['width'] / uniform['width']:.3f}), coverage mean {active['coverage_mean']:.1%}"
        f" against {uniform['coverage_mean']:.1%}"
    )
    print(f"({args.studies} studies per setting, {args.rounds} rounds each, "
          f"{time.perf_counter() - start:.0f} s)")  # fmt: skip
    ratio = results["biased judge"]["width_ratio"]
    print(f"{ratio:.3f} mean interval width, judge-assisted over people alone (one biased judge)")


if __name__ == "__main__":
    main()
