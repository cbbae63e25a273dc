"""The fuzz layer's long run: 10,000 hostile cases for each reader of outside data (study files,
bundles, completions, judgments and labels tables, capability index files, the web app's forms
and links), each through its real entry point, with the properties of tests/fuzz_layer.py: the
run succeeds or ends in the project's one-line error (never a traceback), a refusal changes no
file and no row of the store and leaves nothing behind, and the web app never answers with a
server error.

    .venv/bin/python bench/fuzz_readers.py [--cases 10000] [--readers study,web] [--jobs 2]

Cases are drawn by hypothesis from a fixed seed (the same seed gives the same cases) and not
shrunk: every failing case is counted. Prints, per reader, its cases, failures and minutes, and
each kind of failure (the exception and the line of heart that raised it, or the property
broken) with its count and its smallest case; the last line is the total, the number first:
``0 failures in 70000 cases over 7 readers``. The index reader writes a whole report for each
index it accepts, so it is the slowest (about a second a case); the run takes a few hours on
two busy cores.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
import traceback
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass, field
from multiprocessing import get_context
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))
sys.path.insert(0, str(ROOT))

from hypothesis import HealthCheck, Phase, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402
from tests import fuzz_layer  # noqa: E402
from tests.fuzz_cases import READERS  # noqa: E402
from tests.fuzz_layer import Broken, Crashed, Template, build_template, run_case  # noqa: E402

SLOW_SECONDS = 30.0
"""A case whose run takes more CPU seconds than this counts as a failure (a reader that can be
stalled)."""


@dataclass
class Kind:
    """One kind of failure: how often, and the case with the shortest input."""

    count: int = 0
    example: list[str] = field(default_factory=list)
    message: str = ""


@dataclass
class Tally:
    cases: int = 0
    failures: int = 0
    kinds: dict[str, Kind] = field(default_factory=dict)

    def add(self, kind: str, message: str) -> None:
        self.failures += 1
        found = self.kinds.setdefault(kind, Kind())
        found.count += 1
        notes = list(fuzz_layer.NOTES)
        if not found.example or sum(map(len, notes)) < sum(map(len, found.example)):
            found.example, found.message = notes, message


def kind_of(exc: BaseException) -> str:
    """A failure's kind: the property broken, or the exception and where in heart it rose."""
    if isinstance(exc, Broken):
        return exc.rule
    cause = exc.__cause__ if isinstance(exc, Crashed) and exc.__cause__ else exc
    frames = [f for f in traceback.extract_tb(cause.__traceback__) if "/heart/" in f.filename]
    where = f" at {frames[-1].filename.split('/heart/')[-1]}:{frames[-1].lineno}" if frames else ""
    return f"{type(cause).__name__}{where}"


def run_reader(name: str, cases: int, start: int, template: Template, work: Path) -> Tally:
    tally = Tally()

    @settings(
        max_examples=cases,
        database=None,
        deadline=None,
        phases=[Phase.generate],
        suppress_health_check=list(HealthCheck),
    )
    @seed(start)
    @given(data=st.data())
    def case(data: st.DataObject) -> None:
        fuzz_layer.NOTES.clear()
        began = time.process_time()  # CPU time: a busy machine does not make a case slow
        try:
            drawn = READERS[name](data, template)
        except Exception as exc:  # the layer's own fault: counted, so a long run goes on
            tally.cases += 1
            where = traceback.extract_tb(exc.__traceback__)[-1]
            kind = f"drawing the case: {type(exc).__name__} at {where.filename}:{where.lineno}"
            tally.add(kind, str(exc)[:300])
            return
        ran = time.process_time()
        try:
            with fuzz_layer.workspace(template, work) as folder:
                run_case(drawn, folder)
        except Exception as exc:
            tally.cases += 1
            tally.add(kind_of(exc), str(exc).split("\n")[0][:300])
            return
        tally.cases += 1  # a case hypothesis abandons part way (too much data) is not counted
        if time.process_time() - ran > SLOW_SECONDS:
            spent = time.process_time() - ran
            tally.add("slow", f"ran for {spent:.0f} s of CPU (drawn in {ran - began:.0f} s)")

    case()
    return tally


def fuzz_reader(name: str, cases: int, start: int) -> tuple[str, Tally, float]:
    """One reader's run in a template of its own: its name, its tally and its minutes."""
    with tempfile.TemporaryDirectory(prefix="heart-fuzz-") as tmp:
        template = build_template(Path(tmp) / "template")
        began = time.monotonic()
        tally = run_reader(name, cases, start, template, Path(tmp))
    return name, tally, (time.monotonic() - began) / 60


def report(name: str, tally: Tally, minutes: float) -> None:
    print(f"{name}: {tally.failures} failures in {tally.cases} cases ({minutes:.1f} min)")
    for kind, found in sorted(tally.kinds.items(), key=lambda kv: -kv[1].count):
        print(f"  {found.count} x {kind}: {found.message}")
        for line in found.example:
            print(f"      {line}")
    sys.stdout.flush()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", type=int, default=10_000, help="cases per reader")
    parser.add_argument("--readers", default=",".join(READERS), help="comma-separated")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--jobs", type=int, default=1, help="readers run side by side, each in its own process"
    )
    args = parser.parse_args()
    names = [n.strip() for n in args.readers.split(",") if n.strip()]
    unknown = sorted(set(names) - set(READERS))
    if unknown:
        parser.error(f"unknown readers {unknown}; the readers are {', '.join(READERS)}")
    runs = [(name, args.cases, args.seed + n) for n, name in enumerate(names)]
    if args.jobs > 1:
        with ProcessPoolExecutor(args.jobs, mp_context=get_context("spawn")) as pool:
            done = [pool.submit(fuzz_reader, *run) for run in runs]
            results = []
            for future in as_completed(done):  # each reader as it ends: a long run shows progress
                results.append(future.result())
                report(*results[-1])
    else:
        results = []
        for run in runs:
            results.append(fuzz_reader(*run))
            report(*results[-1])
    failures = sum(tally.failures for _, tally, _ in results)
    cases = sum(tally.cases for _, tally, _ in results)
    print(f"{failures} failures in {cases} cases over {len(names)} readers")


if __name__ == "__main__":
    main()
