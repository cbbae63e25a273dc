"""Report speed: `heart report` on a study of 22 systems x 300 items x all pairs (69,300 LLM
verdicts, one judge), against the 10 s budget, in one run.

The study is simulated from known strengths and written to a temporary SQLite store. Every
verdict has a rationale, coded by the rule coder before the clock starts; human raters judge a
share of the pairs (three each); every system but two has times to first token; the study file
names a capability index. So each section of the report has work to do: boards, agreement,
rationales, the audit, factor structure, latency and capability. Then `heart report` runs as a
user would run it (a fresh process: start-up, imports, reading the store, every section, figures,
files), and the main steps are timed in-process to show where the time goes.

    .venv/bin/python bench/report_speed.py [--items 300] [--systems 22] [--judges 1]
        [--human-pairs 1000] [--keep DIR]

Target: under 10 s, the median of --rounds fresh-process runs (5; the machine's speed varies
from run to run). Prints the budget ratio (10 s / median) last.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _simulated_study import code_rationales, write_study

BUDGET_S = 10.0


def time_in_process(root: Path) -> dict[str, float]:
    """The report's steps, timed one by one in this process."""
    from heart.analyses import analyse_agreement, build_boards, load_comparisons
    from heart.report import gather_facts, write_report
    from heart.study import open_study

    study = open_study(root)
    out: dict[str, float] = {}
    start = time.perf_counter()
    comparisons = load_comparisons(study.store, source="all")
    out["read the verdicts"] = time.perf_counter() - start
    start = time.perf_counter()
    build_boards(comparisons)
    out["boards (fit, 1,000-round bootstrap, ablations)"] = time.perf_counter() - start
    start = time.perf_counter()
    analyse_agreement(comparisons)
    out["agreement"] = time.perf_counter() - start
    start = time.perf_counter()
    facts = gather_facts(study)
    write_report(facts, root / "report-in-process")
    out["whole report in-process (gather + write)"] = time.perf_counter() - start
    study.close()
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--items", type=int, default=300)
    parser.add_argument("--systems", type=int, default=22)
    parser.add_argument("--judges", type=int, default=1)
    parser.add_argument("--human-pairs", type=int, default=1000)
    parser.add_argument("--keep", type=Path, help="write the study here (a new folder) and keep it")
    parser.add_argument("--rounds", type=int, default=5, help="fresh-process runs (median kept)")
    args = parser.parse_args()
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep}: the folder exists; name a new one")
    if args.rounds < 1:
        parser.error(f"--rounds must be at least 1, got {args.rounds}")
    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder)
        if args.keep is not None:
            args.keep.mkdir(parents=True)
            root = args.keep
        start = time.perf_counter()
        llm, human = write_study(root, args.items, args.systems, args.judges, args.human_pairs)
        print(
            f"study: {llm:,} LLM and {human:,} human verdicts written in "
            f"{time.perf_counter() - start:.1f} s"
        )
        start = time.perf_counter()
        coded, found = code_rationales(root)
        print(
            f"rule coder (a stage of `heart run`, not timed below): {coded:,} rationales, "
            f"{found:,} themes in {time.perf_counter() - start:.1f} s"
        )
        for step, seconds in time_in_process(root).items():
            print(f"  {step}: {seconds:.2f} s")
        runs = []
        for _ in range(args.rounds):
            start = time.perf_counter()
            subprocess.run(
                [sys.executable, "-m", "heart", "report", "--study", str(root)],
                check=True,
                capture_output=True,
            )
            runs.append(time.perf_counter() - start)
        sections = (root / "report" / "report.md").read_text(encoding="utf-8").count("\n## ")
        print(f"report sections: {sections}")
    elapsed = statistics.median(runs)
    print("`heart report` runs (fresh process): " + ", ".join(f"{r:.2f} s" for r in runs))
    print(f"median {elapsed:.2f} s (budget {BUDGET_S:.0f} s)")
    print(f"{BUDGET_S / elapsed:.2f} ratio (budget / median)")


if __name__ == "__main__":
    main()
