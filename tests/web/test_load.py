"""Many people at once through a real server, on SQLite and PostgreSQL: first entries through
one new Prolific id, one invite link and the admin link at the same moment, then every form
sent by all of them at once (and the admin pages opened meanwhile). No answer may be a server
error, a refusal must say why, the store holds one rater per person, and every answer that was
accepted stored exactly one thing."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import urlencode

import uvicorn
from fastapi import FastAPI
from sqlalchemy import func, select

from heart.people import invite, prolific_rater
from heart.store import CompletionRow, JudgmentRow, LabelRow, RaterRow, Store

from ..servers import free_port
from .browser import Browser
from .conftest import ADMIN_TOKEN, WebStudy, hidden

MakeStudy = Callable[..., WebStudy]
PEOPLE = 30
"""Browsers per entry path: as many as the app runs requests at once, and then some."""
ADMINS = 5
ROUNDS = 6
"""Tasks each browser goes for: the rater's session of three, all browsers sharing it, is over
by the last."""

FORMS: dict[str, dict[str, Any]] = {
    "write": {"text": "That sounds so hard, and I'm glad you told me."},
    "judge": {"choice": "A+", "rationale": "It listens first.", "checklist": ["length"]},
    "label": {"strategies": ["Emotional Validation"]},
}

PRACTICE = {"choice": "B++", "rationale": "It names the guilt."}


@contextmanager
def _served(app: FastAPI) -> Iterator[str]:
    """``app`` behind a real uvicorn server on a thread; yields its base URL."""
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(app, host="127.0.0.1", port=port, log_level="warning", access_log=False)
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 60
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
        time.sleep(0.05)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=60)


def _all_at_once(browsers: list[Browser], step: Callable[[Browser], object]) -> None:
    """Run ``step`` for every browser on threads released together; re-raise any failure."""
    start = threading.Barrier(len(browsers))
    errors: list[BaseException] = []

    def run(browser: Browser) -> None:
        try:
            start.wait(timeout=120)
            step(browser)
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=run, args=(b,)) for b in browsers]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not errors, errors[:3]


def _send_each_form(browser: Browser) -> None:
    """Accept the consent page and answer the practice pair, then ROUNDS times over go where
    the session leads and send that task's form, and ask for a word count."""
    for step, fields in (("consent", {"agree": "yes"}), ("practice", PRACTICE)):
        page = browser.open(f"/{step}")
        if 'name="csrf"' in page.body:  # not yet done by this rater in another browser
            browser.open(f"/{step}", {"csrf": hidden(page.body, "csrf"), **fields})
    for _ in range(ROUNDS):
        kind = browser.open("/next").location.strip("/")
        if kind not in FORMS:
            continue
        page = browser.open(f"/{kind}")
        if 'name="task"' in page.body:
            form = {"task": hidden(page.body, "task"), "csrf": hidden(page.body, "csrf")}
            browser.open(f"/{kind}", {**form, **FORMS[kind]})
    browser.open("/words", {"text": "three small words"})


def _look_as_admin(browser: Browser) -> None:
    """The admin page and a download, a few times."""
    for _ in range(3):
        browser.open("/admin")
        browser.open("/admin/export/judgments.csv")


def test_many_first_entries_and_forms_at_once_never_fail(
    web_study: MakeStudy, store: Store
) -> None:
    study = web_study(
        items=3, writers_per_item=2, raters_per_pair=2, label_completions=4, tasks_per_person=3
    )  # a session: one task of each kind, in turn

    ((invited, token),) = invite(store, 1)
    entry = "/prolific?" + urlencode(
        {"PROLIFIC_PID": "PID-new", "STUDY_ID": "STUDY-1", "SESSION_ID": "S-1"}
    )
    began = time.monotonic()
    with _served(study.make_app()) as base:
        through_prolific = [Browser(base) for _ in range(PEOPLE)]
        through_invite = [Browser(base) for _ in range(PEOPLE)]
        admins = [Browser(base) for _ in range(ADMINS)]
        _all_at_once(through_prolific, lambda b: b.open(entry))
        _all_at_once(through_invite, lambda b: b.open(f"/invite/{token}"))
        _all_at_once(admins, lambda b: b.open(f"/admin?token={ADMIN_TOKEN}"))
        everyone = through_prolific + through_invite
        _all_at_once(
            everyone + admins, lambda b: _look_as_admin(b) if b in admins else _send_each_form(b)
        )
    took = time.monotonic() - began

    answers = [a for b in everyone + admins for a in b.answers]
    statuses = Counter(a.status for a in answers)
    assert not [a for a in answers if a.status >= 500], statuses
    assert all(b.answers[-1].path == "/words" for b in everyone)  # nobody was cut short
    assert all(a.status in (200, 303, 400, 403, 409) for a in answers), statuses
    assert all('id="message"' in a.body for a in answers if a.status >= 400)  # says why
    assert all(a.location == "/" for a in answers if a.path in (entry, f"/invite/{token}"))
    assert all(a.status == 200 for b in admins for a in b.answers[1:])  # signed in as admin
    participant = prolific_rater(store, "PID-new", "STUDY-1", "S-1")  # the same rater again
    with store.session() as s:
        assert sorted(s.scalars(select(RaterRow.id))) == sorted([invited, participant])
        stored = {
            (rater, kind): s.scalar(select(func.count()).where(column == rater)) or 0
            for rater in (invited, participant)
            for kind, column in (
                ("write", CompletionRow.contributor),
                ("judge", JudgmentRow.judge),
                ("label", LabelRow.rater_id),
            )
        }
    for group, rater in ((through_prolific, participant), (through_invite, invited)):
        for kind in FORMS:
            accepted = sum(
                a.status == 303 for b in group for a in b.answers if a.sent and a.path == f"/{kind}"
            )
            assert accepted == stored[rater, kind], (kind, accepted, stored)
        # the session's size holds under any race; its split between kinds is the flow's
        # for one tab at a time (thirty tabs of one person may all claim the same kind)
        assert sum(stored[rater, kind] for kind in FORMS) == 3, stored
    print(f"{len(answers)} requests in {took:.1f} s: {dict(statuses)}")  # shown with -s
