"""Report at scale: a study ten times the paper's (22 systems x 300 items x all pairs x 10
judges: 693,000 LLM verdicts) imported from a bundle, reported and ranked, each as a user runs
it, at a tenth, a hundredth and the whole of that size.

For each size the study is simulated (bench/_simulated_study.py: systems of known strengths,
human raters on about 1.4% of the pairs, a rationale on every verdict coded by the rule coder,
times to first token, a capability index), exported with `heart export`, then timed as fresh
processes: `heart import BUNDLE` into a new folder, `heart report` and `heart leaderboard` on
the imported study, each with the peak memory of its process (its maximum resident set).

    .venv/bin/python bench/report_scale.py [--sizes 6930,69300,693000] [--keep DIR]

Targets at 693,000 verdicts (on 2 cores): import under 60 s, report under 30 s, every process
under 4 GiB, and time growing no faster than the verdicts: prints the exponent of report time
against verdicts (the least-squares slope of log time on log verdicts) last. A fixed CPU loop
is timed at the start and the end: on a shared machine every time drifts with it.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import numpy as np
from _simulated_study import ROOT, code_rationales, write_study

SYSTEMS = 22
PAIRS_PER_ITEM = SYSTEMS * (SYSTEMS - 1) // 2
SIZES = {  # LLM verdicts -> (items, judges)
    6_930: (30, 1),
    69_300: (300, 1),
    693_000: (300, 10),
}
HUMAN_SHARE = 1_000 / (300 * PAIRS_PER_ITEM)  # pairs judged by three raters each
IMPORT_TARGET_S, REPORT_TARGET_S, MEMORY_TARGET_MIB = 60.0, 30.0, 4096.0


@dataclass(frozen=True)
class Run:
    """One fresh `heart` process: wall time and peak resident memory."""

    seconds: float
    peak_mib: float


def heart(args: list[str], log: Path) -> Run:
    """Run `heart ARGS` as a fresh process on this checkout's sources (output to ``log``);
    its wall time and maximum resident set, read from wait4."""
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    with log.open("w", encoding="utf-8") as out:
        start = time.perf_counter()
        child = subprocess.Popen(
            [sys.executable, "-m", "heart", *args], stdout=out, stderr=subprocess.STDOUT, env=env
        )
        _, status, usage = os.wait4(child.pid, 0)
        seconds = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode != 0:
        sys.exit(f"heart {' '.join(args)} failed ({child.returncode}):\n{log.read_text()}")
    return Run(seconds, usage.ru_maxrss / 1024)  # ru_maxrss is in KiB on Linux


def measure(folder: Path, verdicts: int) -> tuple[int, dict[str, Run]]:
    """Build, export, import, report and rank the study of ``verdicts`` LLM verdicts in
    ``folder``; the verdicts stored (LLM and human) and the three timed runs."""
    items, judges = SIZES[verdicts]
    source, bundle, study = folder / "source", folder / "bundle", folder / "study"
    source.mkdir()
    start = time.perf_counter()
    human_pairs = round(HUMAN_SHARE * items * PAIRS_PER_ITEM)
    llm, human = write_study(source, items, SYSTEMS, judges, human_pairs)
    coded, found = code_rationales(source)
    print(
        f"{llm:,} verdicts: built with {human:,} human verdicts, {coded:,} rationales coded "
        f"({found:,} themes) in {time.perf_counter() - start:.0f} s",
        flush=True,
    )
    exported = heart(["export", str(bundle), "--study", str(source)], folder / "export.log")
    print(f"  exported in {exported.seconds:.1f} s", flush=True)
    runs = {"import": heart(["import", str(bundle), "--study", str(study)], folder / "import.log")}
    shutil.copy(source / "index.csv", study / "index.csv")  # the study file names it
    runs["report"] = heart(["report", "--study", str(study)], folder / "report.log")
    runs["leaderboard"] = heart(["leaderboard", "--study", str(study)], folder / "board.log")
    for what, run in runs.items():
        print(f"  {what}: {run.seconds:.1f} s, {run.peak_mib:,.0f} MiB", flush=True)
    return llm + human, runs


def exponent(sizes: list[int], seconds: list[float]) -> float:
    """The least-squares slope of log time on log size."""
    slope, _ = np.polyfit(np.log(sizes), np.log(seconds), 1)
    return float(slope)


def cpu_loop_seconds() -> float:
    """Seconds one core takes to sum the first 10^8 numbers: how fast the machine runs now (a
    shared one drifts), to read the times beside."""
    start = time.perf_counter()
    sum(range(10**8))
    return time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--sizes",
        default=",".join(str(s) for s in SIZES),
        help=f"LLM verdicts per study, comma-separated, from {', '.join(map(str, SIZES))}",
    )
    parser.add_argument("--keep", type=Path, help="build the studies here (a new folder), kept")
    args = parser.parse_args()
    try:
        sizes = sorted({int(s) for s in args.sizes.split(",")})
    except ValueError:
        parser.error(f"--sizes must be numbers separated by commas, got {args.sizes!r}")
    if unknown := [s for s in sizes if s not in SIZES]:
        parser.error(f"--sizes: no study of {unknown} verdicts; choose from {list(SIZES)}")
    if args.keep is not None and args.keep.exists():
        parser.error(f"--keep {args.keep}: the folder exists; name a new one")
    print(
        f"{os.cpu_count()} cores; load average {os.getloadavg()[0]:.2f}, a fixed CPU loop "
        f"{cpu_loop_seconds():.2f} s at the start"
    )
    results: dict[int, tuple[int, dict[str, Run]]] = {}
    with tempfile.TemporaryDirectory() as temporary:
        root = Path(temporary) if args.keep is None else args.keep
        for size in sizes:
            folder = root / f"{size}"
            folder.mkdir(parents=True)
            results[size] = measure(folder, size)
    print(
        f"load average {os.getloadavg()[0]:.2f}, a fixed CPU loop {cpu_loop_seconds():.2f} s at "
        "the end"
    )
    print()
    print("| LLM verdicts | stored verdicts | import | report | leaderboard | peak memory |")
    print("|---:|---:|---:|---:|---:|---:|")
    for size, (stored, runs) in results.items():
        peak = max(r.peak_mib for r in runs.values())
        print(
            f"| {size:,} | {stored:,} | {runs['import'].seconds:.1f} s | "
            f"{runs['report'].seconds:.1f} s | {runs['leaderboard'].seconds:.1f} s | "
            f"{peak:,.0f} MiB |"
        )
    print()
    largest, (_, runs) = max(results.items())
    peak = max(r.peak_mib for result in results.values() for r in result[1].values())
    print(
        f"at {largest:,} verdicts: import {runs['import'].seconds:.1f} s (target "
        f"< {IMPORT_TARGET_S:.0f} s at 693,000), report {runs['report'].seconds:.1f} s (target "
        f"< {REPORT_TARGET_S:.0f} s); peak memory {peak:,.0f} MiB (target "
        f"< {MEMORY_TARGET_MIB:,.0f} MiB)"
    )
    if len(results) < 2:
        print("nan exponent of report time against verdicts (needs two sizes or more)")
        return
    counts = [s for s, _ in results.values()]
    for what in ("import", "leaderboard"):
        slope = exponent(counts, [r[what].seconds for _, r in results.values()])
        print(f"{what} time grows as verdicts^{slope:.2f}")
    slope = exponent(counts, [r["report"].seconds for _, r in results.values()])
    print(f"{slope:.2f} exponent of report time against verdicts (target ≤ 1)")


if __name__ == "__main__":
    main()
