"""A run killed with SIGKILL and rerun ends with exactly the rows of an uninterrupted run.

The models are a local OpenAI-compatible server that takes a little time per answer, so the
kill lands mid-stage whatever the machine's load, and the test stays quick.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from .fakes.fault_server import FaultServer, last_user_text
from .helpers import heart, rewrite_study

N_ITEMS = 4
ANSWER_S = 0.15  # each answer takes this long, one at a time


def _reply(body: dict[str, Any]) -> str:
    """Deterministic replies and verdicts that depend on what was asked."""
    words = last_user_text(body).split()
    if "response_format" in body:
        axes = dict.fromkeys("HEART", "none")
        winner = "A" if len(words) % 2 else "B"
        return json.dumps({"winner": winner, "strength": 1, "axes": axes, "rationale": "ok"})
    return f"I hear you. {' '.join(words[-6:])}"


def _slow_server() -> FaultServer:
    fault_server = FaultServer(_reply)
    fault_server.default_plan = f"hang:{ANSWER_S}"
    return fault_server


@pytest.fixture
def server() -> Iterator[FaultServer]:
    with _slow_server() as fault_server:
        yield fault_server


def _rows(db: Path) -> dict[str, list[tuple[object, ...]]]:
    with sqlite3.connect(db) as conn:
        return {
            "items": conn.execute("SELECT id, content_hash FROM items ORDER BY id").fetchall(),
            "completions": conn.execute(
                "SELECT id, item_id, system, status, text FROM completions ORDER BY id"
            ).fetchall(),
            "pairs": conn.execute("SELECT id, a_id, b_id FROM pairs ORDER BY id").fetchall(),
            "judgments": conn.execute(
                'SELECT id, pair_id, judge, "order", status, winner FROM judgments ORDER BY id'
            ).fetchall(),
        }


def _count(db: Path, table: str) -> int:
    try:
        with sqlite3.connect(db, timeout=30) as conn:
            return int(conn.execute(f"SELECT count(*) FROM {table}").fetchone()[0])
    except sqlite3.OperationalError:
        return 0


def _new_study(root: Path, server: FaultServer) -> Path:
    heart("init", root, "--demo")
    model = f"{{provider: openai, base_url: '{server.openai_base_url}', model: local}}"
    rewrite_study(
        root,
        [
            f"{{name: model-a, kind: model, family: a, model: {model}}}",
            f"{{name: model-b, kind: model, family: b, model: {model}}}",
            "{name: esconv-original, kind: dataset, family: dataset}",
        ],
        [f"{{name: judge, family: j, model: {model}}}"],
        "engine: {providers: {openai: {concurrency: 1}}}\n",
        items=N_ITEMS,
    )
    return root


ENV = {"OPENAI_API_KEY": "sk-local"}


@pytest.fixture(scope="module")
def expected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[tuple[object, ...]]]:
    """The rows of an uninterrupted run (ids and answers do not depend on the server's port)."""
    with _slow_server() as own_server:
        clean = _new_study(tmp_path_factory.mktemp("clean") / "study", own_server)
        heart("run", "--study", clean, env=ENV)
    rows = _rows(clean / "heart.db")
    assert len(rows["judgments"]) == 3 * N_ITEMS
    return rows


@pytest.mark.parametrize("kill_after", ["completions", "judgments"])
def test_sigkill_then_rerun_matches_an_uninterrupted_run(
    server: FaultServer,
    tmp_path: Path,
    kill_after: str,
    expected: dict[str, list[tuple[object, ...]]],
) -> None:
    env = ENV

    killed = _new_study(tmp_path / "killed", server)
    db = killed / "heart.db"
    process = subprocess.Popen(
        [sys.executable, "-m", "heart", "run", "--study", str(killed)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        env={**os.environ, **env},
    )
    # a model system's completions, or judgments, part way: the stage is still running
    column = "call_hash" if kill_after == "completions" else "id"
    deadline = time.monotonic() + 120
    while _count(db, f"{kill_after} WHERE {column} IS NOT NULL") < 2:
        assert process.poll() is None, "the run finished before it could be killed"
        assert time.monotonic() < deadline
        time.sleep(0.02)
    os.kill(process.pid, signal.SIGKILL)
    process.wait()
    partial = _rows(db)
    assert 0 < len(partial[kill_after]) < len(expected[kill_after])

    calls_before = len(server.requests)
    heart("run", "--study", killed, env=env)
    assert _rows(db) == expected
    # the rerun asked only for what the killed run had not stored
    asked = len(server.requests) - calls_before
    done = len([r for r in partial["completions"] if r[2] != "esconv-original"])
    assert asked <= 2 * N_ITEMS - done + 3 * N_ITEMS - len(partial["judgments"]) + 1
