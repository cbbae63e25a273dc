"""Adaptive pair design: how well the ranking is recovered with a third of the verdicts.

Simulated studies with known strengths, no model and no store. The systems' strengths are the
HEART Elo of the paper's Table 1 (15 systems), and a 22-system variant that adds seven systems
between them (each 40% of the way from one Table 1 system to the next plus 3 Elo), so more
neighbours are close. Every study draws, for each of ``--items`` items (one per conversation), a
per-system item effect θ + N(0, 0.35²) (a reply is better on some conversations than on
others, so verdicts within a conversation are correlated); each pair chosen is judged by each
of three judges, shown in a random A/B order, each judge with its own position bias
(N(0, 0.2²) in favour of reply A) and verdict noise N(0, 0.5²) on the logit. The truth is the
Elo of the Bradley–Terry fit to the expected win shares over that variation.

Designs, per study:

* ``all``: every pair of systems on every item, judged by every judge (the full budget);
* ``adaptive``: ``heart.stats.choose_pairs`` with its defaults (warm-up: every pair of
  systems once; every pair of systems kept at 0.3 of an equal share at least) in ten rounds of
  a tenth of a third of the full budget each, refitted between rounds;
* ``random``: a third of the full budget, pairs drawn uniformly at random from all (item, pair
  of systems).

Each design's Elo is the Bradley–Terry fit and its 95% interval the percentile interval of the
bootstrap that resamples conversations (``heart.stats.bootstrap_by_conversation``, the
interval the board reports). Printed per system set and design, over the studies: mean Kendall
τ with the true Elo, mean top-3 recall, and the coverage of the true Elo by the intervals. The
last line is the verdict-saving ratio: verdicts of ``all`` over verdicts of ``adaptive``.

    .venv/bin/python bench/adaptive_design.py [--studies 50] [--items 60] [--rounds 500]

Target: adaptive within 0.02 τ of all, coverage 92–98%, better τ than random. Measured (50
studies, 60 items): τ 0.904 adaptive, 0.935 all, 0.902 random for 15 systems; 0.899, 0.927,
0.891 for 22; coverage 92.3% and 93.3%. Coverage and "better than random" are met, within 0.02
τ is not: Table 1 is dense (every system has a neighbour within 30 Elo, so no system's place is
settled early), and a third of the budget can give one pair of systems at most three times its
equal share (it meets on each item once).
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np
import numpy.typing as npt
from scipy.special import expit
from scipy.stats import kendalltau

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))

from heart.stats import (  # noqa: E402
    ELO_SCALE,
    Candidate,
    Comparison,
    bootstrap_by_conversation,
    choose_pairs,
    fit_bradley_terry,
)

FloatArray = npt.NDArray[np.float64]

TABLE_1 = [1611.8, 1587.5, 1561.8, 1552.7, 1540.9, 1539.1, 1531.8, 1504.0, 1495.9, 1477.7,
           1471.0, 1441.2, 1427.9, 1415.0, 1384.6]  # fmt: skip
ITEM_SD = 0.35
NOISE_SD = 0.5
POSITION_SD = 0.2
JUDGES = 3
SHARE = 3  # adaptive and random get one verdict in SHARE of the full budget
ROUNDS = 10


def variant_22() -> list[float]:
    """Table 1 and seven systems placed between its neighbours."""
    extra = [a + 0.4 * (b - a) + 3.0 for a, b in zip(TABLE_1[:-1:2], TABLE_1[1::2], strict=True)]
    return sorted(TABLE_1 + extra, reverse=True)


def true_elo(theta: FloatArray) -> FloatArray:
    """The Elo of the Bradley–Terry fit to the expected win shares over item effects, verdict
    noise and the judges' position bias (Gauss–Hermite over the normal part)."""
    nodes, weights = np.polynomial.hermite_e.hermegauss(60)
    weights = weights / weights.sum()
    sd = np.sqrt(2 * ITEM_SD**2 + NOISE_SD**2 + POSITION_SD**2)
    gap = theta[:, None] - theta[None, :]
    share = (weights * expit(gap[..., None] + sd * nodes)).sum(axis=-1)
    np.fill_diagonal(share, 0.0)
    return fit_bradley_terry(share, ridge=0.0).elo


def judge(
    rng: np.random.Generator,
    strength: FloatArray,
    bias: FloatArray,
    item: int,
    a: int,
    b: int,
) -> list[Comparison]:
    """Every judge's verdict on one pair, each shown in a random order."""
    out = []
    for j in range(JUDGES):
        flip = rng.random() < 0.5
        logit = strength[item, a] - strength[item, b] + rng.normal(0, NOISE_SD)
        logit += -bias[j] if flip else bias[j]  # the bias favours the reply shown first
        won = rng.random() < expit(logit)
        out.append(Comparison(str(item), a, b, 1.0 if won else 0.0, f"j{j}"))
    return out


def score(
    verdicts: list[Comparison], items: int, k: int, truth: FloatArray, rounds: int, seed: int
) -> tuple[float, float, float]:
    """Kendall τ, top-3 recall and interval coverage of one design's board."""
    per = np.zeros((items, k, k))
    for v in verdicts:
        per[int(v.item), v.a, v.b] += v.score
        per[int(v.item), v.b, v.a] += 1.0 - v.score
    elo = fit_bradley_terry(per.sum(axis=0)).elo
    boot = bootstrap_by_conversation(per, rounds=rounds, seed=seed)
    tau = float(kendalltau(elo, truth).statistic)
    top = len(set(np.argsort(-elo)[:3]) & set(np.argsort(-truth)[:3])) / 3
    covered = float(np.mean((boot.low <= truth) & (truth <= boot.high)))
    return tau, top, covered


def study(
    elo_values: list[float], items: int, rounds: int, seed: int
) -> dict[str, tuple[float, float, float, int]]:
    """One simulated study judged by the three designs."""
    rng = np.random.default_rng(seed)
    theta = (np.asarray(elo_values) - np.mean(elo_values)) / ELO_SCALE
    truth = true_elo(theta)
    k = theta.size
    strength = theta[None, :] + rng.normal(0, ITEM_SD, (items, k))
    bias = rng.normal(0, POSITION_SD, JUDGES)
    everything = [(i, a, b) for i in range(items) for a in range(k) for b in range(a + 1, k)]
    budget = len(everything) // SHARE  # pairs, each judged by every judge
    results = {}

    full = [v for i, a, b in everything for v in judge(rng, strength, bias, i, a, b)]
    results["all"] = (*score(full, items, k, truth, rounds, seed), len(full))

    drawn = rng.choice(len(everything), budget, replace=False)
    uniform = [v for n in drawn for v in judge(rng, strength, bias, *everything[n])]
    results["random"] = (*score(uniform, items, k, truth, rounds, seed), len(uniform))

    verdicts: list[Comparison] = []
    left = {c: None for c in everything}
    per_round = -(-budget // ROUNDS)
    taken = 0
    while taken < budget:
        candidates = [Candidate(str(i), a, b) for i, a, b in left]
        size = min(per_round, budget - taken)
        picks = choose_pairs(k, verdicts, candidates, size, seed=seed, verdicts_per_pair=JUDGES)
        for n in picks:
            c = candidates[n]
            del left[(int(c.item), c.a, c.b)]
            verdicts += judge(rng, strength, bias, int(c.item), c.a, c.b)
        taken += len(picks)
    results["adaptive"] = (*score(verdicts, items, k, truth, rounds, seed), len(verdicts))
    return results


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=50)
    parser.add_argument("--items", type=int, default=60)
    parser.add_argument("--rounds", type=int, default=500, help="bootstrap rounds")
    args = parser.parse_args()
    start = time.perf_counter()
    saved = []
    print(f"{'systems':>8} {'design':>9} {'verdicts':>9} {'tau':>6} {'top-3':>6} {'cover':>6}")
    for name, values in (("15", TABLE_1), ("22", variant_22())):
        runs = [study(values, args.items, args.rounds, seed) for seed in range(args.studies)]
        for design in ("all", "adaptive", "random"):
            rows = np.array([r[design] for r in runs])
            tau, top, cover, verdicts = rows.mean(axis=0)
            print(f"{name:>8} {design:>9} {verdicts:>9.0f} {tau:>6.3f} {top:>6.3f} "
                  f"{100 * cover:>5.1f}%")  # fmt: skip
        saved.append(np.mean([r["all"][3] / r["adaptive"][3] for r in runs]))
        gap = np.mean([r["all"][0] - r["adaptive"][0] for r in runs])
        print(f"{name:>8} systems: tau(all) - tau(adaptive) = {gap:.3f}")
    print(f"({args.studies} studies of {args.items} items each, {JUDGES} judges, "
          f"{time.perf_counter() - start:.0f} s)")  # fmt: skip
    print(f"{float(np.mean(saved)):.2f} times fewer verdicts with the adaptive design than all "
          "pairs (verdict-saving ratio)")  # fmt: skip


if __name__ == "__main__":
    main()
