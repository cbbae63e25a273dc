"""What one request costs the store, on SQLite and PostgreSQL: statements and transactions per
page, counted at the engine. On PostgreSQL every statement is a round trip to the database and
every transaction two more (BEGIN and COMMIT), and a server thread waits through each of them,
so these counts bound a busy server's latency."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from fastapi import FastAPI
from sqlalchemy import event, func, select

from heart.people import LABEL
from heart.store import CompletionRow, Store, SystemRow, TaskRow, now_iso
from heart.types import Status
from heart.web._seats import Seats

from .conftest import WebStudy, hidden, sign_in

MakeStudy = Callable[..., WebStudy]


@dataclass
class Work:
    """The statements run and transactions begun on one engine."""

    statements: list[str] = field(default_factory=list)
    transactions: int = 0


@contextmanager
def counted(store: Store) -> Iterator[Work]:
    """Count what runs on ``store``'s engine inside the block."""
    work = Work()

    def statement(_conn: Any, _cursor: Any, sql: str, *_: Any) -> None:
        work.statements.append(" ".join(sql.split())[:80])

    def begin(_conn: Any) -> None:
        work.transactions += 1

    event.listen(store.engine, "before_cursor_execute", statement)
    event.listen(store.engine, "begin", begin)
    try:
        yield work
    finally:
        event.remove(store.engine, "before_cursor_execute", statement)
        event.remove(store.engine, "begin", begin)


def _app_store(app: FastAPI) -> Store:
    store: Store = app.state.web.study.store
    return store


def test_a_task_page_claims_reads_and_places_its_seat_in_five_statements(
    web_study: MakeStudy,
) -> None:
    """GET /judge: the rater with their steps (1), then in one transaction the claim, its page
    and where the rater stands (4: the seat held, else one taken after letting go of seats of
    other kinds, its page, the standing). It
    took ten statements in six transactions when each lookup had its own."""
    study = web_study(items=2)
    app = study.make_app()
    client = study.client(app)
    sign_in(client, study.store, flow="judge")
    with counted(_app_store(app)) as work:
        page = client.get("/judge")
    # on PostgreSQL one more: the claim waits for the rater's other claims (an advisory lock);
    # and a new seat first lets go of the rater's unfinished seats of other kinds
    held = 5 + (study.store.engine.dialect.name == "postgresql")
    assert page.status_code == 200 and 'name="choice"' in page.text
    assert len(work.statements) == held + 1, work.statements
    assert work.transactions == 2
    with counted(_app_store(app)) as work:  # the same seat again, its claim renewed
        again = client.get("/judge")
    assert hidden(again.text, "task") == hidden(page.text, "task")
    assert len(work.statements) == held, work.statements
    assert work.transactions == 2


def test_a_verdict_is_stored_in_three_transactions(web_study: MakeStudy) -> None:
    """POST /judge: the rater with their steps, the seat the page's handle names, and the
    verdict with its seat marked submitted (the seat, its pair and what the rater did read in
    one query; on a first verdict the rater added as a judge; the verdict; the seat). It took
    nine statements when the seat, its pair, the rater's own replies and their count of
    verdicts were read one by one."""
    study = web_study(items=2)
    app = study.make_app()
    client = study.client(app)
    sign_in(client, study.store, flow="judge")
    page = client.get("/judge")
    form = {"task": hidden(page.text, "task"), "csrf": hidden(page.text, "csrf"),
            "choice": "A+", "rationale": "It listens.", "checklist": ["length"]}  # fmt: skip
    with counted(_app_store(app)) as work:
        sent = client.post("/judge", data=form)
    assert sent.status_code == 303
    assert work.transactions == 3, work.statements
    assert len(work.statements) == 6, work.statements


def _add_reply(store: Store, item: str, rater: str) -> None:
    with store.session() as s:
        if s.get(SystemRow, "human") is None:
            s.add(SystemRow(name="human", kind="human", family="human", spec={}))
        s.add(
            CompletionRow(id=f"cp-{item}-{rater}", item_id=item, system="human",
                          contributor=rater, status=Status.OK, text="That sounds hard.",
                          created_at=now_iso())
        )  # fmt: skip


def test_a_reply_people_write_costs_the_next_look_for_seats_one_statement(
    web_study: MakeStudy,
) -> None:
    """With no replies to sample for labels (the default), a reply stored while the server
    runs can add no seat, so the next look (every request that finds no work left makes one)
    is one query, not a sync of every seat."""
    study = web_study(items=2)
    app = study.make_app()
    seats: Seats = app.state.web.seats
    rater = sign_in(study.client(app), study.store)
    _add_reply(study.store, "i0", rater)
    with counted(_app_store(app)) as work:
        assert seats.refresh() is False
    assert len(work.statements) == 1, work.statements


def test_a_reply_still_gets_label_seats_while_the_label_sample_has_room(
    web_study: MakeStudy,
) -> None:
    study = web_study(items=2, label_completions=20, labellers_per_completion=2)
    app = study.make_app()
    seats: Seats = app.state.web.seats
    store = _app_store(app)

    def label_seats() -> int:
        with store.session() as s:
            return int(s.scalar(select(func.count()).where(TaskRow.kind == LABEL)) or 0)

    before = label_seats()
    assert before == 2 * 6  # every model reply of the two items, two labellers each
    rater = sign_in(study.client(app), study.store)
    _add_reply(study.store, "i1", rater)
    assert seats.refresh() is True
    assert label_seats() == before + 2


@contextmanager
def sqlite_steps(store: Store) -> Iterator[list[int]]:
    """SQLite's virtual machine steps (in hundreds) run on ``store`` inside the block: the work
    a statement does, the same on any machine, unlike its time."""
    steps = [0]

    def step() -> int:
        steps[0] += 1
        return 0

    def connected(dbapi: Any, _record: Any) -> None:
        dbapi.set_progress_handler(step, 100)

    event.listen(store.engine, "connect", connected)
    store.engine.dispose()  # new connections, each with the handler
    try:
        yield steps
    finally:
        event.remove(store.engine, "connect", connected)
        store.engine.dispose()


def test_a_claim_reads_the_raters_own_work_once_and_stops_at_the_first_free_seat(
    web_study: MakeStudy, store: Store
) -> None:
    """A task page among 40 items' seats: what the rater touched and wrote is read once per
    statement, and seats are walked in the order claims take them (an index), so the claim
    stops at the first free one. The page took 1,096 hundred steps when every seat tested
    looked the rater's seats, replies and pairs up again and every free seat was sorted (626
    with those read once, 566 with the index alone); 401 with both."""
    if store.engine.dialect.name != "sqlite":
        return  # steps are SQLite's measure; the statements are the same on PostgreSQL
    study = web_study(items=40)
    app = study.make_app()
    client = study.client(app)
    sign_in(client, study.store, flow="judge")
    with sqlite_steps(_app_store(app)) as steps:
        page = client.get("/judge")
    assert page.status_code == 200 and 'name="choice"' in page.text
    assert steps[0] < 450, steps[0]
