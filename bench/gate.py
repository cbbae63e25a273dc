"""How often the regression gate cries wolf, and how often it catches a real regression.

Simulates studies (tests/gate_study.py: a baseline, a candidate and two other systems, every
pair of every item judged by two LLM judges on every axis, replies of varying quality so
verdicts within a conversation are correlated) and runs the gate's statistics on each, from
the store as `heart gate` does. In the no-regression studies the candidate is exactly as strong
as the baseline on every axis, so an exit 1 is a false alarm; at margin 0 the studies sit on the
edge of "not worse", where a test's false alarms are most frequent. In the regression studies
the candidate is worse on one axis (E) only.

    PYTHONPATH=src python bench/gate.py [--studies 200] [--regressions 100] [--items 120]

The last line is the false-alarm rate (exit 1 in no-regression studies at margin 0, overall and
the five axes tested), number first; the target is at most 0.05.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from tests.gate_study import simulate  # noqa: E402

from heart.analyses import GateVerdict, load_comparisons, run_gate  # noqa: E402
from heart.store import open_store  # noqa: E402

DROP_ELO = 100.0  # the regression on axis E in the power studies
DEFAULT_MARGIN = 50.0


def one_study(folder: Path, seed: int, items: int, drop: float, rounds: int) -> GateVerdict:
    """The gate at margin 0 on a fresh simulated study (``at_margin`` reads its intervals at
    any other)."""
    store = open_store(f"sqlite:///{folder / f'study-{seed}.db'}")
    try:
        simulate(store, items=items, drop={"E": drop} if drop else None, seed=seed)
        comparisons = load_comparisons(store)
    finally:
        store.close()
    return run_gate(comparisons, "candidate", "baseline", margin=0.0, rounds=rounds, seed=seed)


def shares(calls: list[str]) -> str:
    counts = Counter(calls)
    n = len(calls)
    return ", ".join(f"{name} {counts[name] / n:.3f}" for name in ("worse", "not worse",
                                                                      "cannot tell"))  # fmt: skip


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--studies", type=int, default=200, help="no-regression studies")
    parser.add_argument("--regressions", type=int, default=100, help="studies with a regression")
    parser.add_argument("--items", type=int, default=120, help="items per study (2 a conversation)")
    parser.add_argument("--rounds", type=int, default=1000, help="bootstrap rounds per interval")
    args = parser.parse_args()
    start = time.perf_counter()
    with tempfile.TemporaryDirectory() as tmp:
        folder = Path(tmp)
        null = [one_study(folder, s, args.items, 0.0, args.rounds) for s in range(args.studies)]
        drops = [
            one_study(folder, 10_000 + s, args.items, DROP_ELO, args.rounds)
            for s in range(args.regressions)
        ]
    seconds = time.perf_counter() - start
    print(
        f"{args.studies} no-regression and {args.regressions} regression studies of "
        f"{args.items} items ({args.items // 2} conversations), 4 systems, 2 judges, "
        f"{args.rounds} bootstrap rounds, overall and 5 axes tested: {seconds:.0f} s"
    )
    for margin in (0.0, DEFAULT_MARGIN):
        print(
            f"no regression, margin {margin:g}: {shares([v.at_margin(margin).call for v in null])}"
        )
    for margin in (0.0, DEFAULT_MARGIN):
        print(
            f"E worse by {DROP_ELO:g} Elo, margin {margin:g}: "
            f"{shares([v.at_margin(margin).call for v in drops])}"
        )
    power = sum(v.call == "worse" for v in drops) / len(drops)
    print(f"{power:.3f} power: exit 1 when E is {DROP_ELO:g} Elo worse (margin 0)")
    alarms = sum(v.call == "worse" for v in null) / len(null)
    print(
        f"{alarms:.3f} false-alarm rate: exit 1 in {args.studies} no-regression studies at "
        "margin 0 (target at most 0.05)"
    )


if __name__ == "__main__":
    main()
