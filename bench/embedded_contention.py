"""The embedded model beside a busy process: six short chat completions timed with heart's
threading (one thread per core left free by other processes) and with three fixed choices (one
thread per core, llama.cpp's default; the same with its OpenMP threads asleep while they wait;
one thread), on a quiet machine and beside one competitor that keeps a core busy.

    .venv/bin/python bench/embedded_contention.py [--rounds 3] [--replies 6] [--tokens 48]

Each measurement runs in a fresh process (the OpenMP runtime reads its wait policy once, when
it loads), alternating the settings round by round so that drift in the machine hits both.
Prints, per setting, the median seconds quiet (and as a multiple of heart's) and loaded; then
heart's quiet time against every core's (target at most 1.05); last, heart's loaded slowdown
(loaded / quiet, target at most 2).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

PROMPTS = [
    "I failed my driving test again and I feel stupid.",
    "My best friend moved away and the evenings are so quiet now.",
    "I can't sleep before my exams, my mind keeps racing.",
    "My manager criticised my work in front of everyone today.",
    "I miss my grandmother, she died last spring.",
    "I think my partner is losing interest in me.",
]

CORES = str(os.cpu_count() or 1)
SETTINGS = {
    # whatever heart chooses when the user has set nothing
    "heart": {},
    # one thread per core whatever else runs: llama.cpp's own choice
    "every core": {"HEART_EMBEDDED_THREADS": CORES},
    # the same, with llama.cpp's OpenMP threads asleep while they wait instead of spinning
    "passive": {"HEART_EMBEDDED_THREADS": CORES, "OMP_WAIT_POLICY": "PASSIVE"},
    # no thread team at all: one thread computes
    "one thread": {"HEART_EMBEDDED_THREADS": "1"},
}

CHILD = """
import asyncio, json, sys, time
from heart.models.embedded import EmbeddedModel
from heart.models import ChatRequest, Message

prompts, tokens = json.loads(sys.argv[1]), int(sys.argv[2])
model = EmbeddedModel("smollm2")

def ask(text):
    request = ChatRequest(
        messages=(Message(role="user", content=text),),
        max_tokens=tokens, temperature=0.0, top_p=1.0,
    )
    return asyncio.run(model.complete(request))

ask("Hello.")  # load the model and start the thread team outside the timing
start = time.perf_counter()
for text in prompts:
    ask(text)
print(json.dumps({"seconds": time.perf_counter() - start}))
"""


def _clean_env(extra: dict[str, str]) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    env["PYTHONPATH"] = str(ROOT / "src")
    return {**env, **extra}


def time_replies(setting: str, replies: int, tokens: int) -> float:
    """Seconds for ``replies`` completions in a fresh process with ``setting``'s environment."""
    done = subprocess.run(
        [sys.executable, "-c", CHILD, json.dumps(PROMPTS[:replies]), str(tokens)],
        env=_clean_env(SETTINGS[setting]),
        capture_output=True,
        text=True,
        check=True,
    )
    return float(json.loads(done.stdout.strip().splitlines()[-1])["seconds"])


@contextmanager
def busy_competitor() -> Iterator[None]:
    """One process that keeps a core busy for as long as the block runs."""
    process = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        time.sleep(0.5)
        yield
    finally:
        process.kill()
        process.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--replies", type=int, default=6)
    parser.add_argument("--tokens", type=int, default=48)
    args = parser.parse_args()
    times: dict[tuple[str, str], list[float]] = {}
    for round_ in range(args.rounds):
        order = list(SETTINGS) if round_ % 2 == 0 else list(reversed(SETTINGS))
        for load in ("quiet", "loaded"):
            for setting in order:
                if load == "quiet":
                    seconds = time_replies(setting, args.replies, args.tokens)
                else:
                    with busy_competitor():
                        seconds = time_replies(setting, args.replies, args.tokens)
                times.setdefault((setting, load), []).append(seconds)
                print(f"round {round_ + 1} {load:6} {setting:10} {seconds:6.2f} s", flush=True)
    median = {key: statistics.median(values) for key, values in times.items()}
    quiet = median["heart", "quiet"]
    for setting in SETTINGS:
        print(
            f"{setting:10}: quiet {median[setting, 'quiet']:.2f} s "
            f"({median[setting, 'quiet'] / quiet:.2f}x heart's), "
            f"loaded {median[setting, 'loaded']:.2f} s "
            f"({median[setting, 'loaded'] / median[setting, 'quiet']:.2f}x its quiet time)"
        )
    print(
        f"{quiet / median['every core', 'quiet']:.2f} quiet ratio "
        "(heart / every core on a quiet machine; target <= 1.05)"
    )
    print(
        f"{median['heart', 'loaded'] / quiet:.2f} loaded slowdown "
        "(heart beside one busy process / quiet; target <= 2)"
    )


if __name__ == "__main__":
    main()
