"""The adaptive design's pick loop with numba (the ``fast`` extra) against its numpy loop.

One simulated study of the paper's size: 22 systems (231 pairs of systems) on 300 items, every
(item, pair of systems) a candidate, verdicts drawn from fixed strengths. The design takes a
third of the full budget in rounds of ``heart judge``'s default size (two pairs per pair of
systems, 462), refitted between rounds, once through each loop, round by round in turn: both
must choose the same pairs. Printed: each loop's time per round and per pick, and a round's
time with the numpy loop beside what judging its 462 pairs costs at one second a verdict (an
API judge's order of magnitude). The last line is the compiled loop's speed-up.

    .venv/bin/python bench/pick_loop.py [--systems 22] [--items 300] [--rounds 10]
"""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np

from heart.stats import choose_pairs_from_arrays
from heart.stats._types import FloatArray, IntArray

COMPILED = "heart.stats._adaptive_compiled"


def timed_round(
    wins: FloatArray, judged: IntArray, candidates: IntArray, size: int, *, compiled: bool
) -> tuple[IntArray, float]:
    """The round's picks and its seconds, through the compiled loop or the numpy loop."""
    saved = sys.modules.get(COMPILED)
    if not compiled:
        sys.modules[COMPILED] = None  # type: ignore[assignment]
    try:
        start = time.perf_counter()
        picks = choose_pairs_from_arrays(wins, judged, candidates, size, seed=3)
        return picks, time.perf_counter() - start
    finally:
        if saved is None:
            sys.modules.pop(COMPILED, None)
        else:
            sys.modules[COMPILED] = saved


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--systems", type=int, default=22)
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--rounds", type=int, default=10, help="rounds timed")
    args = parser.parse_args()

    rng = np.random.default_rng(0)
    k = args.systems
    strength = rng.normal(0.0, 0.6, k)
    lo, hi = np.triu_indices(k, 1)
    everything = np.array(
        [(item, a, b) for item in range(args.items) for a, b in zip(lo, hi, strict=True)]
    )
    size = 2 * lo.size
    left = np.ones(len(everything), dtype=bool)
    wins = np.zeros((k, k))
    judged = np.empty((0, 3), dtype=np.int64)
    timed_round(wins, judged, everything[:size], 1, compiled=True)  # numba's cache loaded
    seconds = {True: 0.0, False: 0.0}
    picked = 0
    for _ in range(args.rounds):
        open_rows = np.flatnonzero(left)
        candidates = everything[open_rows]
        chosen = {}
        for compiled in (True, False):
            chosen[compiled], spent = timed_round(wins, judged, candidates, size, compiled=compiled)
            seconds[compiled] += spent
        if chosen[True].tolist() != chosen[False].tolist():
            raise SystemExit("the two loops chose different pairs")
        batch = candidates[chosen[True]]
        left[open_rows[chosen[True]]] = False
        a, b = batch[:, 1], batch[:, 2]
        a_won = rng.random(len(batch)) < 1 / (1 + np.exp(-(strength[a] - strength[b])))
        np.add.at(wins, (np.where(a_won, a, b), np.where(a_won, b, a)), 1.0)
        judged = np.concatenate([judged, batch])
        picked += len(batch)

    for compiled, name in ((True, "numba"), (False, "numpy")):
        per_round = seconds[compiled] / args.rounds
        print(f"{name}: {per_round:.3f} s a round of {size} pairs, "
              f"{1e6 * seconds[compiled] / picked:.0f} µs a pick")  # fmt: skip
    judging = float(size)  # seconds, at one second a verdict
    print(f"numpy's round is {seconds[False] / args.rounds / judging:.2%} of judging its "
          f"{size} pairs at one second a verdict")  # fmt: skip
    print(f"{seconds[False] / seconds[True]:.1f}x faster picks with numba ({k} systems, "
          f"{args.items} items, {args.rounds} rounds, the same pairs)")  # fmt: skip


if __name__ == "__main__":
    main()
