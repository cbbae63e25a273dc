"""A small study folder over the `store` fixture (SQLite, and PostgreSQL when configured), the
web app built on it, and helpers to sign in and read the hidden fields of a page."""

from __future__ import annotations

import html
import os
import re
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import uvicorn
import yaml
from fastapi import FastAPI
from fastapi.testclient import TestClient
from sqlalchemy import select

import heart
from heart.config import PairsSpec
from heart.judging import build_pairs
from heart.people import invite
from heart.store import CompletionRow, ItemRow, RaterRow, Store
from heart.web import create_app

from ..rows import seed_study
from ..servers import free_port, stop

ADMIN_TOKEN = "admin-token-for-the-web-tests"
SECRET = b"a secret of thirty-two bytes !!!"
SRC = str(Path(heart.__file__).resolve().parents[1])
"""The sources under test, for a `heart` subprocess."""
SYSTEMS = ("sysalpha", "sysbeta", "sysgamma")
"""Model systems (family = name): neither may ever appear in a rater's page."""


@dataclass
class WebStudy:
    root: Path
    store: Store
    replies: dict[str, str]  # completion text -> completion id
    make_app: Callable[[], FastAPI]

    def client(self, app: FastAPI) -> TestClient:
        return TestClient(app, follow_redirects=False)


def write_study(root: Path, store: Store, people: dict[str, Any], seed: int) -> None:
    config = {
        "name": "web-test",
        "seed": seed,
        "store": store.url,
        "systems": [{"name": "human", "kind": "human", "family": "human"}],
        "people": people,
    }
    root.mkdir(parents=True, exist_ok=True)
    (root / "study.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")


def fill_store(store: Store, items: int) -> dict[str, str]:
    """Items with a real context, one distinct reply per model system, and all their pairs."""
    seed_study(store, SYSTEMS, items=items, completions=True)
    replies: dict[str, str] = {}
    with store.session() as s:
        for n, item in enumerate(s.scalars(select(ItemRow).order_by(ItemRow.id))):
            item.context = [
                {"role": "seeker", "text": f"My sister stopped talking to me, week {n}."},
                {"role": "supporter", "text": "That sounds painful. What happened?"},
                {"role": "seeker", "text": "We argued about Mum's care and I said too much."},
            ]
            item.reference = f"It sounds like you regret what you said in week {n}."
        for n, row in enumerate(s.scalars(select(CompletionRow).order_by(CompletionRow.id))):
            row.text = f"Reply {n}: that is a heavy thing to carry, and I'm glad you said it."
            replies[row.text] = row.id
    build_pairs(store, PairsSpec(), seed=0)
    return replies


@pytest.fixture
def web_study(store: Store, tmp_path: Path) -> Iterator[Callable[..., WebStudy]]:
    """Make a study: ``items`` items, people settings, and a seed; then build apps over it."""
    apps: list[FastAPI] = []

    def make(items: int = 1, seed: int = 7, **people: Any) -> WebStudy:
        root = tmp_path / "study"
        write_study(root, store, {"check_every": 0, **people}, seed)
        replies = fill_store(store, items)

        def make_app() -> FastAPI:
            app = create_app(root, admin_token=ADMIN_TOKEN, secret=SECRET)
            apps.append(app)
            return app

        return WebStudy(root=root, store=store, replies=replies, make_app=make_app)

    yield make
    for app in apps:
        app.state.web.study.close()


def sign_in(
    client: TestClient, store: Store, *, ready: bool = True, flow: str | None = None
) -> str:
    """Invite a rater (led through ``flow``, as "judge" or "write,judge"; unset: the study's)
    and open their link in ``client``; returns the rater id. ``ready``: they also accept the
    consent page and answer the practice pair, so every task page is open."""
    ((rater, token),) = invite(store, 1, flow=flow)
    response = client.get(f"/invite/{token}")
    assert response.status_code == 303 and response.headers["location"] == "/"
    if ready:
        get_ready(client)
    return rater


def lead_to(store: Store, rater: str, kind: str) -> None:
    """Give ``rater`` a flow of ``kind`` alone from now on (as a new invite naming it would)."""
    with store.session() as s:
        person = s.get_one(RaterRow, rater)
        person.meta = {**person.meta, "flow": [{"kind": kind}]}


def get_ready(client: TestClient) -> None:
    """Accept the consent page and answer the practice pair as the signed-in rater."""
    page = client.get("/consent")
    agreed = client.post("/consent", data={"csrf": hidden(page.text, "csrf"), "agree": "yes"})
    assert agreed.status_code == 303, agreed.text
    page = client.get("/practice")
    practised = client.post(
        "/practice",
        data={"csrf": hidden(page.text, "csrf"), "choice": "B+", "rationale": "B listens."},
    )
    assert practised.status_code == 303 and practised.headers["location"] == "/practice"


def hidden(page: str, name: str) -> str:
    match = re.search(rf'name="{name}" value="([^"]*)"', page)
    assert match, f"no hidden field {name!r} in the page"
    return match.group(1)


def element(page: str, element_id: str) -> str:
    """The text inside the element with ``element_id`` (tags stripped, spaces collapsed,
    unescaped)."""
    match = re.search(rf'<(\w+)[^>]*\bid="{re.escape(element_id)}"[^>]*>(.*?)</\1>', page, re.S)
    assert match, f"no element #{element_id} in the page"
    return html.unescape(" ".join(re.sub(r"<[^>]+>", " ", match.group(2)).split()))


def reply_text(page: str, element_id: str) -> str:
    """The reply paragraph inside ``#element_id``, unescaped."""
    match = re.search(rf'id="{element_id}"[^>]*>.*?<p>(.*?)</p>', page, re.S)
    assert match, f"no reply in #{element_id}"
    return html.unescape(match.group(1))


@contextmanager
def serving(app: FastAPI, log_level: str = "warning") -> Iterator[str]:
    """``app`` behind a real uvicorn server on a thread, logging from ``log_level``; yields its
    base URL."""
    port = free_port()
    server = uvicorn.Server(uvicorn.Config(app, host="127.0.0.1", port=port, log_level=log_level))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert time.monotonic() < deadline and thread.is_alive(), "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=30)


@contextmanager
def heart_serve(
    root: Path, port: int, log: Path, env: dict[str, str] | None = None, args: Sequence[str] = ()
) -> Iterator[str]:
    """`heart serve` in a subprocess (its output to ``log``, ``env`` added to a clean
    environment, ``args`` after its options) until it answers; yields the admin link it
    printed."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("HEART_")}
    with log.open("w") as out:
        server = subprocess.Popen(
            [sys.executable, "-m", "heart", "serve", "--study", str(root), "--port", str(port),
             *args],
            stdout=out, stderr=subprocess.STDOUT, text=True,
            env={**clean, "PYTHONPATH": SRC, **(env or {})},
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            assert server.poll() is None, f"heart serve exited:\n{log.read_text()}"
            assert time.monotonic() < deadline, f"heart serve did not start:\n{log.read_text()}"
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=5) as answer:
                    assert answer.status == 200
                break
            except (urllib.error.URLError, ConnectionError):
                time.sleep(0.2)
        match = re.search(r"^admin: (\S+)$", log.read_text(), re.M)
        assert match, log.read_text()
        yield match.group(1)
    finally:
        stop(server)
