"""`heart generate --batch` killed once its batches are submitted, then run again: the batches
are polled, never sent again; `heart batches` shows them open meanwhile and can cancel one."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..fakes.fault_server import FaultServer
from ..helpers import heart
from .test_faults import KEYS, PLANS, _completions, _study

FAST = "engine:\n  batch: {poll_s: 0.05}\n"


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with FaultServer(key_includes_model=True) as fault_server:
        yield fault_server


def _open_batches(root: Path) -> int:
    with sqlite3.connect(root / "heart.db") as conn:
        try:
            (n,) = conn.execute("SELECT count(*) FROM batches WHERE state = 'open'").fetchone()
        except sqlite3.OperationalError:  # the schema is not there yet
            return 0
    return int(n)


def test_a_killed_batch_run_resumes_by_polling_and_heart_batches_lists_and_cancels(
    server: FaultServer, tmp_path: Path
) -> None:
    root = _study(tmp_path / "s", server)
    text = (root / "study.yaml").read_text().replace("engine:\n", FAST, 1)
    (root / "study.yaml").write_text(text)
    server.fault_next_batch("slow:100000")
    server.fault_next_batch("slow:100000")
    env = {**os.environ, **KEYS, "COLUMNS": "200"}
    run = subprocess.Popen(
        [sys.executable, "-m", "heart", "generate", "--batch", "--study", str(root)],
        env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while _open_batches(root) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    run.send_signal(signal.SIGKILL)
    run.wait()
    assert _open_batches(root) == 2 and len(server.batches) == 2

    listed = heart("batches", "--study", root, env=KEYS).stdout
    assert listed.count("generate") == 2 and "0 of 8" in listed
    assert "Counts are as the last run saw them" in listed

    openai_batch = next(b for b in server.batches if b.api == "openai")
    ours = next(
        line.split()[1] for line in listed.splitlines() if "openai" in line and "hb-" in line
    )
    cancelled = heart("batches", "cancel", ours, "--study", root, env=KEYS).stdout
    assert "Asked to cancel 1 batch: the next run keeps what they answered" in cancelled
    assert openai_batch.status == "cancelling"
    for batch in server.batches:  # the provider finishes what was not cancelled
        batch.polls_to_end = batch.polls + 1

    again = heart("generate", "--batch", "--study", root, env=KEYS)
    assert "16 model calls" in again.stdout
    rows = [r for r in _completions(root) if r[1] != "esconv-original"]
    assert len(rows) == 2 * len(PLANS) and {r[2] for r in rows} == {"ok"}
    # the anthropic batch was polled, never sent again; the cancelled openai calls went in a new one
    assert [b.api for b in server.batches].count("anthropic") == 1
    assert [b.api for b in server.batches].count("openai") == 2
    assert openai_batch.status in ("cancelled", "cancelling")
    assert heart("batches", "--study", root, env=KEYS).stdout.strip() == "No batch is open."


def test_a_dry_run_with_batch_prices_remote_calls_at_the_batch_price(
    server: FaultServer, tmp_path: Path
) -> None:
    root = _study(tmp_path / "s", server)
    live = heart("generate", "--dry-run", "--study", root, env=KEYS).stdout
    batch = heart("generate", "--dry-run", "--batch", "--study", root, env=KEYS).stdout

    def openai_row(out: str) -> list[str]:
        line = next(ln for ln in out.splitlines() if "gpt-fake" in ln)
        return [cell.strip() for cell in line.split("│")[1:-1]]

    live_row, batch_row = openai_row(live), openai_row(batch)
    assert (live_row[-1], batch_row[-1]) == ("list", "batch")
    assert live_row[:-2] == batch_row[:-2]  # the same calls and tokens
    assert float(batch_row[-2]) == pytest.approx(float(live_row[-2]) / 2, abs=1e-4)
    assert float(live_row[-2]) > 0
    assert server.requests == []  # a dry run calls nothing
