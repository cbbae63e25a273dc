"""Verdicts per minute through 1, 2 and 4 replicas of one judge, through heart's judging stage.

Each replica is a local OpenAI-compatible server (``tests/fakes/fault_server.py`` in its own
process) that holds at most ``--capacity`` requests at once, queuing the rest, and answers each
after ``--delay`` seconds with a valid verdict, as an inference server with that many slots
does. For each replica count a fresh demo study (nothing cached) lists the first N servers in
its judge's ``base_url``, with ``engine.providers.openai.concurrency`` set to the servers'
capacity, as the docs advise; its systems are fixed replies (no generation calls), so the run
times `pipeline.judge` alone: the judging stage as `heart judge` runs it, verdicts parsed and
stored.

    .venv/bin/python bench/replicas.py [--delay 0.2] [--capacity 4] [--controls 7] [--items 12]

Target: 4 replicas at least 3.5x the verdicts per minute of one. Prints the speed-up last, the
number first.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tests.servers import stop  # noqa: E402

REPLICA_COUNTS = (1, 2, 4)


def start_server(delay: float, capacity: int) -> tuple[subprocess.Popen[str], str]:
    """One replica: a fake judge that answers after ``delay`` s, ``capacity`` at a time."""
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fakes.fault_server", "--port", "0", "--print-port",
         "--default-plan", f"hang:{delay:g}", "--capacity", str(capacity),
         "--reply-fn", "tests.fakes.judge_verdicts:verdict_reply"],
        cwd=ROOT, stdout=subprocess.PIPE, text=True,
    )  # fmt: skip
    assert process.stdout is not None
    return process, f"http://127.0.0.1:{int(process.stdout.readline().strip())}/v1"


def study_file(urls: list[str], capacity: int, controls: int, items: int) -> str:
    """A demo study judged through ``urls``: the original and ``controls`` fixed replies."""
    systems = [
        f"  - {{name: fixed-{i}, kind: control, family: control-{i}, reply: "
        f"'Fixed reply {i}: that sounds hard. What would help most right now?'}}\n"
        for i in range(controls)
    ]
    listed = ", ".join(f"'{url}'" for url in urls)
    return (
        "name: replicas-bench\nseed: 2026\n"
        f"items: {{esconv: esconv_demo.jsonl, regular: {items}}}\n"
        "systems:\n  - {name: esconv-original, kind: dataset, family: dataset}\n"
        + "".join(systems)
        + "judges:\n  - {name: judge, family: judges, model: {provider: openai, "
        f"model: local-judge, base_url: [{listed}]}}}}\n"
        "pairs: {design: all}\n"
        f"engine: {{providers: {{openai: {{concurrency: {2 * capacity}}}}}}}\n"
    )


def verdicts_per_minute(
    urls: list[str], capacity: int, controls: int, items: int
) -> tuple[float, list[str]]:
    """A fresh study judged through ``urls``: its new verdicts per minute of judging, and what
    each replica answered."""
    from heart import pipeline
    from heart.engine import replica_lines
    from heart.study import create_study, open_study

    with tempfile.TemporaryDirectory() as folder:
        root = Path(folder) / "study"
        create_study(root, demo=True)
        (root / "study.yaml").write_text(study_file(urls, capacity, controls, items))
        with open_study(root) as study:
            pipeline.build_items(study)
            pipeline.generate(study)  # fixed replies only: no model call
            start = time.perf_counter()
            summary = pipeline.judge(study)
            elapsed = time.perf_counter() - start
    calls = summary.model_calls
    if calls.failed or calls.cached:
        raise SystemExit(f"{calls.failed} verdicts failed, {calls.cached} cached: not a fair run")
    return (calls.calls - calls.cached) / elapsed * 60, replica_lines(calls.replicas)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per answer")
    parser.add_argument("--capacity", type=int, default=4, help="requests a replica holds")
    parser.add_argument("--controls", type=int, default=7, help="fixed-reply systems")
    parser.add_argument("--items", type=int, default=12, help="regular items (demo corpus)")
    args = parser.parse_args()

    servers = [start_server(args.delay, args.capacity) for _ in range(max(REPLICA_COUNTS))]
    try:
        rates = {}
        for n in REPLICA_COUNTS:
            urls = [url for _, url in servers[:n]]
            rates[n], spread = verdicts_per_minute(urls, args.capacity, args.controls, args.items)
            ideal = n * args.capacity / args.delay * 60
            print(
                f"{n} replica(s): {rates[n]:,.0f} verdicts/min (servers allow {ideal:,.0f})"
                + "".join(f"; {line}" for line in spread)
            )
    finally:
        for process, _ in servers:
            stop(process)
    print(f"{rates[4] / rates[1]:.2f}x verdicts per minute, 4 replicas vs 1")


if __name__ == "__main__":
    main()
