"""A run killed with SIGKILL and rerun ends with exactly the rows of an uninterrupted run."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import time
from pathlib import Path

import pytest

from .helpers import heart, set_items

pytestmark = pytest.mark.slow

N_ITEMS = 4


def _rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
    with sqlite3.connect(db) as conn:
        return {
            "items": conn.execute("SELECT id, content_hash FROM items ORDER BY id").fetchall(),
            "completions": conn.execute(
                "SELECT id, item_id, system, status FROM completions ORDER BY id"
            ).fetchall(),
            "pairs": conn.execute("SELECT id, a_id, b_id FROM pairs ORDER BY id").fetchall(),
            "judgments": conn.execute(
                'SELECT id, pair_id, judge, "order", status FROM judgments ORDER BY id'
            ).fetchall(),
        }


def _count(db: Path, table: str) -> int:
    try:
        with sqlite3.connect(db, timeout=30) as conn:
            return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _new_study(root: Path) -> Path:
    heart("init", root, "--demo")
    set_items(root, N_ITEMS)
    return root


@pytest.mark.parametrize("kill_after", ["completions", "judgments"])
def test_sigkill_then_rerun_matches_an_uninterrupted_run(tmp_path: Path, kill_after: str) -> None:
    clean = _new_study(tmp_path / "clean")
    heart("run", "--study", clean)

    killed = _new_study(tmp_path / "killed")
    db = killed / "heart.db"
    process = subprocess.Popen(
        [sys.executable, "-m", "heart", "run", "--study", str(killed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    threshold = 2
    deadline = time.monotonic() + 300
    while _count(db, kill_after) < threshold:
        assert process.poll() is None, "the run finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.05)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    partial = _rows(db)
    assert 0 < len(partial[kill_after]) < len(_rows(clean / "heart.db")[kill_after])

    heart("run", "--study", killed)
    assert _rows(db) == _rows(clean / "heart.db")
