"""`heart serve --workers N`: several processes over one PostgreSQL store, each honouring the
sessions, CSRF tokens and admin cookies the others made; SQLite refused in one line. The
servers are real subprocesses; which process answered is read from the log, where each line
names it."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from anyio import to_thread
from fastapi.testclient import TestClient

from heart.people import invite

from ..servers import free_port
from .browser import Browser
from .conftest import ADMIN_TOKEN, SECRET, WebStudy, heart_serve, hidden

MakeStudy = Callable[..., WebStudy]
ANSWERED = re.compile(r'\[(\d+)\] [\d.:]+ - "(GET|POST) (\S+) HTTP/[\d.]+" (\d+)')
"""An access log line of a worker: its process id, the method, path and status."""
TRIES = 200


def _answers(log: Path, method: str, path: str) -> dict[str, set[int]]:
    """Process id → the statuses it answered ``method path`` with, from the log."""
    seen: dict[str, set[int]] = {}
    for pid, said, where, status in ANSWERED.findall(log.read_text()):
        if (said, where) == (method, path):
            seen.setdefault(pid, set()).add(int(status))
    return seen


def _until_both_answer(log: Path, method: str, path: str, send: Callable[[], int]) -> None:
    """Send requests until two processes have answered ``method path``; each must answer as
    ``send`` expects (it returns the status it got, checked against the log's)."""
    for _ in range(TRIES):
        status = send()
        time.sleep(0.01)
        if len(_answers(log, method, path)) >= 2:
            break
    time.sleep(0.2)  # the last lines reach the log
    seen = _answers(log, method, path)
    assert len(seen) == 2, f"{method} {path} answered by {sorted(seen)} only"
    assert all(statuses == {status} for statuses in seen.values()), seen


def test_two_workers_honour_each_others_sessions_forms_and_admin_cookies(
    web_study: MakeStudy, tmp_path: Path
) -> None:
    study = web_study(items=2)
    if study.store.engine.dialect.name != "postgresql":
        pytest.skip("several workers need the store on PostgreSQL")
    ((_, token),) = invite(study.store, 1)
    port, log = free_port(), tmp_path / "serve.log"
    with heart_serve(study.root, port, log, args=["--workers", "2"]) as admin_link:
        base = f"http://127.0.0.1:{port}"
        person = Browser(base)
        assert person.open(f"/invite/{token}").status == 303
        (signed_in_by,) = _answers(log, "GET", "/invite/[redacted]")

        def consent_page() -> int:
            answer = person.open("/consent")
            assert 'name="agree"' in answer.body  # a signed-in person's page, not the way in
            return answer.status

        _until_both_answer(log, "GET", "/consent", consent_page)
        csrf = hidden(person.open("/consent").body, "csrf")  # issued by one of them
        assert person.open("/consent", {"csrf": csrf, "agree": "yes"}).status == 303

        def practice() -> int:  # the first answer is kept, each one checked and accepted
            form = {"csrf": csrf, "choice": "B+", "rationale": "B listens."}
            return person.open("/practice", form).status

        _until_both_answer(log, "POST", "/practice", practice)  # 303: the form was accepted

        admin = Browser(base)
        assert admin.open(admin_link.removeprefix(base)).status == 303

        def admin_page() -> int:
            answer = admin.open("/admin")
            assert "Admin only" not in answer.body
            return answer.status

        _until_both_answer(log, "GET", "/admin", admin_page)
        assert signed_in_by in _answers(log, "GET", "/consent")
        assert len(set(re.findall(r"Started server process \[(\d+)\]", log.read_text()))) >= 2


def test_several_workers_over_sqlite_are_refused_in_one_line(
    web_study: MakeStudy, tmp_path: Path
) -> None:
    study = web_study(items=1)
    if study.store.engine.dialect.name != "sqlite":
        pytest.skip("the refusal is SQLite's")
    result = subprocess.run(
        [sys.executable, "-m", "heart", "serve", "--study", str(study.root), "--port", "1",
         "--workers", "2"],
        capture_output=True, text=True, timeout=120,
        env={**os.environ, "HEART_ADMIN_TOKEN": ADMIN_TOKEN, "COLUMNS": "300"},
    )  # fmt: skip
    assert result.returncode == 2 and "Traceback" not in result.stderr
    assert result.stdout == (
        "error: --workers 2 needs the study's store on PostgreSQL (sqlite lets one process "
        "write at a time): set store: postgresql+psycopg://user:password@host/db in "
        "study.yaml, or serve with --workers 1\n"
    )


def test_each_worker_runs_its_share_of_the_requests_at_once(web_study: MakeStudy) -> None:
    """Two workers run 4 requests at once each: 8 over the server, as one process does, and
    no more threads than its store keeps connections for."""
    from heart.store._db import POOL_SIZE
    from heart.web import create_app
    from heart.web._serve import threads_per_worker

    study = web_study(items=1)
    assert [threads_per_worker(n) for n in (1, 2, 3, 8, 16)] == [8, 4, 3, 1, 1]
    app = create_app(study.root, admin_token=ADMIN_TOKEN, secret=SECRET, threads=4)
    try:
        with TestClient(app) as client:

            async def threads() -> float:
                return to_thread.current_default_thread_limiter().total_tokens

            assert client.portal is not None
            assert client.portal.call(threads) == 4 <= POOL_SIZE
    finally:
        app.state.web.study.close()
