"""`heart serve` while the study grows: items, systems and pairs stored while the server runs
become seats without a restart, and the admin page says when seats were last added. Each test
runs the real command in a subprocess and talks to it over HTTP."""

from __future__ import annotations

import re
import time
import urllib.parse
import urllib.request
from pathlib import Path

import yaml
from sqlalchemy import func, select

from heart import pipeline
from heart.people import invite
from heart.store import ItemRow, Store, TaskRow, open_store
from heart.study import open_study

from ..helpers import heart
from ..rows import seed_study
from ..servers import free_port
from .conftest import element, heart_serve, hidden, write_study

WARMTH = "Whatever happened, you reached out, and that took courage."


def _browser() -> urllib.request.OpenerDirector:
    """A client that keeps cookies, as a browser does."""
    return urllib.request.build_opener(urllib.request.HTTPCookieProcessor())


def _get(browser: urllib.request.OpenerDirector, url: str) -> str:
    with browser.open(url, timeout=30) as answer:
        assert answer.status == 200
        return str(answer.read().decode("utf-8"))


def _post(browser: urllib.request.OpenerDirector, url: str, form: dict[str, str]) -> str:
    data = urllib.parse.urlencode(form).encode()
    with browser.open(url, data=data, timeout=30) as answer:
        assert answer.status == 200
        return str(answer.read().decode("utf-8"))


def _get_ready(browser: urllib.request.OpenerDirector, base: str) -> None:
    """Accept the consent page and answer the practice pair, as every rater does first."""
    for step, fields in (("consent", {"agree": "yes"}), ("practice", {"choice": "B+"})):
        csrf = hidden(_get(browser, f"{base}/{step}"), "csrf")
        _post(browser, f"{base}/{step}", {"csrf": csrf, "rationale": "B listens.", **fields})


def _seats(store: Store, kind: str) -> int:
    with store.session() as s:
        return int(s.scalar(select(func.count()).where(TaskRow.kind == kind)) or 0)


def _wait_for_seats(store: Store, kind: str, n: int, seconds: float = 60) -> None:
    deadline = time.monotonic() + seconds
    while _seats(store, kind) != n:
        assert time.monotonic() < deadline, f"{_seats(store, kind)} {kind} seats, not {n}"
        time.sleep(0.1)


def _progress(page: str) -> dict[str, int]:
    """The admin page's seats per kind of work."""
    rows = re.findall(r"<tr><td>([a-z ()]+)</td><td>(\d+)</td>", page)
    return {kind: int(seats) for kind, seats in rows}


def test_the_demo_study_serves_out_of_the_box_and_items_built_meanwhile_get_seats(
    tmp_path: Path,
) -> None:
    """The demo holds a human system, so `heart serve` starts on it as `heart init` made it;
    items built by another command while it runs get their write seats with no request."""
    root = tmp_path / "demo"
    heart("init", root, "--demo")
    store = open_store(f"sqlite:///{root / 'heart.db'}")
    port, log = free_port(), tmp_path / "serve.log"
    try:
        with heart_serve(root, port, log, args=["--seat-refresh", "0.2"]) as link:
            admin = _browser()
            page = _get(admin, link)
            assert _progress(page) == {"write": 0, "judge": 0, "label": 0}
            assert element(page, "seats").startswith("No seats added since the server started (")
            assert (
                "get their seats within 0.2 s, and at once when someone finds no work left" in page
            )
            heart("items", "build", "--study", root)
            with store.session() as s:
                items = int(s.scalar(select(func.count()).select_from(ItemRow)) or 0)
            assert items == 12  # the demo's regular items
            _wait_for_seats(store, "write", 3 * items)  # writers_per_item: 3 by default
            page = _get(admin, f"http://127.0.0.1:{port}/admin")
            assert _progress(page)["write"] == 3 * items
            note = element(page, "seats")
            assert re.match(
                r"Seats last added \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC \(36 write\)\.", note
            )
    finally:
        store.close()


def test_a_system_added_while_serving_is_judged_by_the_next_rater_who_asks(
    store: Store, tmp_path: Path
) -> None:
    """A rater with nothing left to judge asks again after a system is added to the study
    file, its replies generated and its pairs built: the new pair is served at once (the
    server was told not to look between requests), and the admin page says so."""
    root = tmp_path / "study"
    write_study(root, store, {"check_every": 0, "raters_per_pair": 2}, seed=3)
    seed_study(store, ["sysalpha"], items=1, completions=True)  # one system: no pairs yet
    with store.session() as s:
        item = s.get_one(ItemRow, "i0")
        said = "I failed my driving test again today."
        item.context = [{"role": "seeker", "text": said, "parts": [said]}]
    ((_, token),) = invite(store, 1, flow="judge")
    port, log = free_port(), tmp_path / "serve.log"
    with heart_serve(root, port, log, args=["--seat-refresh", "0"]) as link:
        base = f"http://127.0.0.1:{port}"
        rater = _browser()
        _get(rater, f"{base}/invite/{token}")
        _get_ready(rater, base)
        assert "You have finished" in _get(rater, f"{base}/judge")  # led on to the finish

        study_file = root / "study.yaml"
        config = yaml.safe_load(study_file.read_text(encoding="utf-8"))
        config["systems"].append(
            {"name": "warmth", "kind": "control", "family": "control", "reply": WARMTH}
        )
        study_file.write_text(yaml.safe_dump(config), encoding="utf-8")
        with open_study(root) as study:
            assert pipeline.generate(study).fixed == 1
            assert pipeline.judge(study).new_pairs == 1
        assert _seats(store, "judge") == 0  # no look between requests

        page = _get(rater, f"{base}/judge")
        assert WARMTH in (element(page, "reply-a") + element(page, "reply-b"))
        assert _seats(store, "judge") == 2
        admin = _get(_browser(), link)
        assert _progress(admin)["judge"] == 2
        assert re.match(r"Seats last added .* UTC \(2 judge\)\.", element(admin, "seats"))
        assert "get their seats when someone finds no work left or this page opens." in admin
