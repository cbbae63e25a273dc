"""People's access: many first entries of one new Prolific participant at once make one rater,
on SQLite and PostgreSQL."""

from __future__ import annotations

import threading

from sqlalchemy import select

from heart.people import prolific_rater
from heart.store import RaterRow, Store

THREADS = 24


def test_concurrent_first_entries_of_one_participant_make_one_rater(store: Store) -> None:
    start = threading.Barrier(THREADS)
    got: list[str] = []
    errors: list[BaseException] = []

    def enter(n: int) -> None:
        try:
            start.wait(timeout=60)
            got.append(prolific_rater(store, "PID-new", "STUDY-1", f"SESSION-{n}"))
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=enter, args=(n,)) for n in range(THREADS)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors, errors[:3]
    assert len(got) == THREADS and len(set(got)) == 1
    with store.session() as s:
        rows = s.execute(select(RaterRow.id, RaterRow.meta)).all()
    assert [r.id for r in rows] == got[:1]
    assert rows[0].meta["entry"] == "prolific" and rows[0].meta["study"] == "STUDY-1"
    assert "PID-new" not in str(rows[0].meta)  # the participant id is kept only as a hash
