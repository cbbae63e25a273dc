"""A session's flow: quotas by hand, the next step as work runs out and rolls on, the flow as
the study file writes it, and a session on a real store (SQLite, and PostgreSQL when set)
ending complete, with no work left, and on an exclusion."""

from __future__ import annotations

import time

import pytest
from sqlalchemy import select

from heart.config import FlowStep, PairsSpec, PeopleSpec, parse_study
from heart.errors import ConfigError, TaskRefused
from heart.judging import build_pairs
from heart.people import (
    COMPLETE,
    EXCLUDED,
    JUDGE,
    NO_WORK,
    WRITE,
    claim,
    invite,
    next_kind,
    plan_text,
    quotas,
    session_state,
    submit_write,
    sync_tasks,
    task_time,
)
from heart.store import RaterRow, Store, SystemRow, TaskRow

from ..rows import seed_study


def steps(*entries: object) -> tuple[FlowStep, ...]:
    return PeopleSpec.model_validate({"flow": list(entries)}).steps


def test_quotas_split_the_session_by_share_and_largest_remainder() -> None:
    assert quotas(steps("write", "judge"), 4) == [2, 2]
    assert quotas(steps({"write": 0.25}, "judge"), 4) == [1, 3]
    assert quotas(steps("write", "judge", "label"), 4) == [2, 1, 1]  # 4/3 each: first gets one
    assert quotas(steps({"write": 0.3}, {"judge": 0.7}), 5) == [2, 3]  # 1.5 and 3.5: ties go first
    assert quotas(steps("judge"), 1) == [1]
    assert quotas(steps("write", "judge"), None) == [None, None]
    assert sum(quotas(steps({"write": 0.1}, "judge", "label"), 7)) == 7


def test_the_next_step_follows_the_quotas_and_hands_on_what_runs_out() -> None:
    flow = steps("write", "judge")

    def kind(done: dict[str, int], open_: set[str], tasks: int | None = 4) -> str | None:
        return next_kind(flow, tasks, done, lambda k: k in open_)

    both = {WRITE, JUDGE}
    assert kind({}, both) == WRITE
    assert kind({WRITE: 1}, both) == WRITE
    assert kind({WRITE: 2}, both) == JUDGE
    assert kind({WRITE: 2, JUDGE: 1}, both) == JUDGE
    assert kind({WRITE: 2, JUDGE: 2}, both) is None  # the session's four tasks are done
    assert kind({WRITE: 1}, {JUDGE}) == JUDGE  # writing ran out after one: judging takes three
    assert kind({WRITE: 1, JUDGE: 2}, {JUDGE}) == JUDGE
    assert kind({WRITE: 1, JUDGE: 3}, {JUDGE}) is None
    assert kind({JUDGE: 1}, {WRITE}) == WRITE  # a kind out of turn still counts towards the cap
    assert kind({}, set()) is None
    assert kind({WRITE: 5}, both, tasks=None) == WRITE  # no size: a step lasts while it has work
    assert kind({WRITE: 5}, {JUDGE}, tasks=None) == JUDGE
    label_first = steps("label", "judge")  # label done, judging left: its own quota only
    assert next_kind(label_first, 4, {"label": 2, JUDGE: 2}, lambda k: True) is None


def test_the_flow_as_the_study_file_writes_it() -> None:
    assert [s.kind for s in PeopleSpec().steps] == ["write", "judge", "label"]
    assert PeopleSpec.model_validate({"flow": [{"kind": "judge", "share": 1}]}).steps == (
        FlowStep(kind="judge", share=1.0),
    )
    assert plan_text(steps({"write": 0.25}, "judge"), 4) == "write 1 reply, then compare 3 pairs"
    assert plan_text(steps("judge", "label"), None) == "compare pairs, then label replies"
    base = "name: s\nsystems: [{name: human, kind: human, family: human}]\npeople:\n  flow: "
    for flow, said in [
        ("[judge, judge]", "name each kind of work once in the flow"),
        ("[{write: 0.5}, {judge: 0.7}]", "add up to 1.2; make them 1 or less"),
        ("[{write: 0.5}, {judge: 0.2}]", "make them 1, or leave one step without a share"),
        ("[rate]", "people.flow.0.kind"),
    ]:
        with pytest.raises(ConfigError, match=said.replace(".", r"\.").replace("(", r"\(")):
            parse_study(base + flow + "\n")


def _write_session(store: Store, tasks: int | None) -> tuple[PeopleSpec, list[str]]:
    seed_study(store, ("sysalpha",), items=3, completions=False)
    with store.session() as s:
        s.merge(SystemRow(name="human", kind="human", family="human", spec={}))
    spec = PeopleSpec(flow=[FlowStep(kind="write")], tasks_per_person=tasks, writers_per_item=1)
    sync_tasks(store, spec, seed=0)
    return spec, [rater for rater, _ in invite(store, 2)]


def _write_one(store: Store, spec: PeopleSpec, rater: str, now: float) -> None:
    task = claim(store, rater, WRITE, now=now, seconds=600)
    assert task is not None
    submit_write(store, spec, rater, task, "I hear how hard this week has been.", now=now + 30)


def test_a_session_on_the_store_ends_complete_with_no_work_and_when_excluded(
    store: Store,
) -> None:
    spec, (first, second) = _write_session(store, tasks=2)
    now = time.time()
    assert session_state(store, first, spec, now=now).kind == WRITE
    _write_one(store, spec, first, now)
    at = session_state(store, first, spec, now=now)
    assert (at.kind, at.done, at.left, dict(at.done_by_kind)) == (WRITE, 1, 1, {WRITE: 1})
    _write_one(store, spec, first, now)
    assert session_state(store, first, spec, now=now).ended == COMPLETE
    _write_one(store, spec, second, now)  # the third and last item's only seat
    at = session_state(store, second, spec, now=now)
    assert (at.kind, at.ended, at.done) == (None, NO_WORK, 1)
    with store.session() as s:
        s.get_one(RaterRow, first).excluded_reason = "speed (people.exclude_flags): test"
    assert session_state(store, first, spec, now=now).ended == EXCLUDED
    assert session_state(store, "r-nobody", spec, now=now).ended == EXCLUDED


def test_task_time_is_the_stated_one_until_enough_tasks_are_timed(store: Store) -> None:
    spec, (first, _) = _write_session(store, tasks=None)
    assert task_time(store, spec).seconds == 60.0 and not task_time(store, spec).measured
    _write_one(store, spec, first, time.time())
    pace = task_time(store, spec)
    assert (pace.seconds, pace.tasks, pace.measured) == (60.0, 1, False)
    times = [10.0 * (n + 1) for n in range(21)]
    with store.session() as s:  # 21 timed tasks of 10, 20, ..., 210 s: the median is 110 s
        done = s.scalars(select(TaskRow).where(TaskRow.done)).one()
        done.served_at, done.submitted_at = 0.0, times[0]
        for n, seconds in enumerate(times[1:]):
            s.add(
                TaskRow(id=f"write:x{n}:0", kind=WRITE, target=f"x{n}", item_id=done.item_id,
                        seat=0, done=True, served_at=0.0, submitted_at=seconds)
            )  # fmt: skip
    pace = task_time(store, spec)
    assert (pace.seconds, pace.tasks, pace.measured) == (110.0, 21, True)


def test_a_new_seat_lets_go_of_the_raters_unfinished_seats_of_other_kinds(store: Store) -> None:
    """A session is at one kind at a time: a seat left open in another tab must not hold a
    place of the per-person cap that the session's next task needs."""
    seed_study(store, ("sysalpha", "sysbeta"), items=2, completions=True)
    with store.session() as s:
        s.merge(SystemRow(name="human", kind="human", family="human", spec={}))
    build_pairs(store, PairsSpec(), seed=0)
    spec = PeopleSpec(tasks_per_person=2, check_every=0)
    sync_tasks(store, spec, seed=0)
    ((rater, _),) = invite(store, 1)
    _write_one(store, spec, rater, now=0.0)
    stale = claim(store, rater, WRITE, now=10.0, seconds=600, cap=2)  # another tab, left open
    assert stale is not None
    judged = claim(store, rater, JUDGE, now=20.0, seconds=600, cap=2)  # the flow moved on
    assert judged is not None  # the cap is 2: one done, and the stale seat no longer held
    with store.session() as s:
        assert s.get_one(TaskRow, stale).rater_id is None
    with pytest.raises(TaskRefused, match="not assigned to you"):
        submit_write(store, spec, rater, stale, "I hear how hard this week has been.", now=30)
