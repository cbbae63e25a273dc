"""Seats, claims and submissions of human work, on SQLite and PostgreSQL: exact counts under
concurrency, expiry, the order a judge saw, quality checks and their exclusions."""

from __future__ import annotations

import threading
from collections import Counter

import pytest
from sqlalchemy import select

from heart.analyses import load_comparisons
from heart.config import PairsSpec, PeopleSpec
from heart.judging import build_pairs
from heart.people import (
    CHOICES,
    JUDGE,
    WRITE,
    TaskRefused,
    claim,
    invite,
    load_task,
    review_quality,
    submit_judgment,
    submit_write,
    sync_tasks,
)
from heart.store import CompletionRow, JudgmentRow, RaterRow, Store, SystemRow, TaskRow

from ..rows import seed_study

SPEC = PeopleSpec(check_every=0)
HOUR = 3600.0


def _study(store: Store, items: int = 4, spec: PeopleSpec = SPEC) -> None:
    seed_study(store, ["m1", "m2", "m3"], items=items, completions=True)
    with store.session() as s:
        s.merge(SystemRow(name="human", kind="human", family="human", spec={}))
    build_pairs(store, PairsSpec(), seed=0)
    sync_tasks(store, spec, seed=0)


def _raters(store: Store, n: int) -> list[str]:
    return [rater for rater, _ in invite(store, n)]


def test_seats_are_built_once_per_item_and_pair(store: Store) -> None:
    _study(store)
    again = sync_tasks(store, SPEC, seed=0)
    assert again.added == {"write": 0, "judge": 0, "label": 0}
    assert again.seats == {"write": 4 * 3, "judge": 4 * 3 * 5, "label": 0}
    with store.session() as s:
        shown = Counter(s.scalars(select(TaskRow.shown).where(TaskRow.kind == JUDGE)))
    assert shown["ab"] > 0 and shown["ba"] > 0


def test_checks_are_mixed_in_every_nth_pair(store: Store) -> None:
    _study(store, spec=PeopleSpec(check_every=4))
    with store.session() as s:
        checks = Counter(s.scalars(select(TaskRow.check).where(TaskRow.check.is_not(None))))
        expected = set(s.scalars(select(TaskRow.expected).where(TaskRow.check == "gold")))
    assert checks == {"gold": 2 * 5, "attention": 1 * 5}  # 12 pairs: checks after 4, 8, 12
    assert expected <= {"A", "B"}


def test_a_rater_keeps_one_seat_and_never_gets_the_same_target_twice(store: Store) -> None:
    _study(store, items=2)
    (rater,) = _raters(store, 1)
    first = claim(store, rater, WRITE, now=0, seconds=HOUR)
    assert first is not None and claim(store, rater, WRITE, now=1, seconds=HOUR) == first
    targets = []
    task = first
    while task is not None:
        targets.append(task.split(":")[1])
        submit_write(store, SPEC, rater, task, "I hear how hard this week has been.", now=2)
        task = claim(store, rater, WRITE, now=3, seconds=HOUR)
    assert sorted(targets) == ["i0", "i1"]  # one seat per item, then no work left


def test_concurrent_writers_fill_every_item_with_exactly_three(store: Store) -> None:
    _study(store, items=6)
    raters = _raters(store, 12)
    errors: list[BaseException] = []

    def work(rater: str) -> None:
        try:
            while (task := claim(store, rater, WRITE, now=10, seconds=HOUR)) is not None:
                submit_write(
                    store, SPEC, rater, task, f"Reply from {rater}, I am listening.", now=11
                )
        except BaseException as exc:  # surfaced below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(r,)) for r in raters]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not errors
    with store.session() as s:
        rows = s.execute(
            select(CompletionRow.item_id, CompletionRow.contributor).where(
                CompletionRow.system == "human"
            )
        ).all()
    per_item = Counter(item for item, _ in rows)
    assert per_item == {f"i{i}": 3 for i in range(6)}
    assert len(set(rows)) == len(rows) == 18  # nobody twice on one item


def test_an_expired_claim_goes_to_someone_else_and_the_first_submit_is_refused(
    store: Store,
) -> None:
    _study(store, items=1, spec=PeopleSpec(writers_per_item=1, check_every=0))
    a, b = _raters(store, 2)
    task = claim(store, a, WRITE, now=0, seconds=60)
    assert claim(store, b, WRITE, now=30, seconds=60) is None  # still a's
    assert claim(store, b, WRITE, now=61, seconds=60) == task  # expired: b takes it
    with pytest.raises(TaskRefused, match="not assigned to you"):
        submit_write(store, SPEC, a, task, "Sorry, that sounds really hard.", now=62)
    with pytest.raises(TaskRefused, match="not assigned to you"):
        load_task(store, a, task)
    submit_write(store, SPEC, b, task, "That sounds hard; what happened next?", now=63)
    with store.session() as s:
        assert s.scalars(select(CompletionRow.contributor).where(
            CompletionRow.system == "human")).all() == [b]  # fmt: skip


@pytest.mark.parametrize("text", ["", "ok", " ".join(["word"] * 81), "I hear " + "you" * 400])
def test_bad_replies_are_refused_and_store_nothing(store: Store, text: str) -> None:
    _study(store, items=1)
    (rater,) = _raters(store, 1)
    task = claim(store, rater, WRITE, now=0, seconds=HOUR)
    assert task is not None
    with pytest.raises(TaskRefused, match=r"words|characters"):
        submit_write(store, SPEC, rater, task, text, now=1)
    with store.session() as s:
        assert s.get(TaskRow, task).done is False
        assert not s.scalars(select(CompletionRow).where(CompletionRow.system == "human")).all()


def test_a_judgment_is_stored_in_the_pair_terms_of_the_order_shown(store: Store) -> None:
    _study(store, items=1)
    (rater,) = _raters(store, 1)
    seen = {}
    while (task := claim(store, rater, JUDGE, now=0, seconds=HOUR)) is not None:
        shown = load_task(store, rater, task)
        assert len(shown.replies) == 2
        submit_judgment(store, rater, task, "A++", "the first one names the feeling", now=1)
        with store.session() as s:
            seen[task] = s.get(TaskRow, task).shown
    with store.session() as s:
        rows = {r.pair_id: r for r in s.scalars(select(JudgmentRow))}
    assert len(rows) == 3
    for task, order in seen.items():
        row = rows[task.split(":")[1]]
        assert row.winner == ("a" if order == "ab" else "b") and row.strength == 2
        assert row.order == order and row.judge == rater
    assert CHOICES["B+"][:2] == ("B", 1)


def test_failing_half_the_checks_excludes_a_rater_from_the_analyses(store: Store) -> None:
    _study(store, items=2, spec=PeopleSpec(check_every=2))
    good, bad = _raters(store, 2)
    for rater in (good, bad):
        while (task := claim(store, rater, JUDGE, now=0, seconds=HOUR)) is not None:
            with store.session() as s:
                row = s.get(TaskRow, task)
                expected, check = row.expected, row.check
            if check and rater == good:
                answer = expected if check == "attention" else expected + "+"
            elif check:
                answer = "="  # fails every check
            else:
                answer = "A+"
            submit_judgment(store, rater, task, answer, "", now=1)
    quality = {q.rater: q for q in review_quality(store)}
    assert quality[good].checks == quality[bad].checks == 3
    assert quality[good].failed == 0 and quality[good].excluded is None
    assert quality[bad].failed == 3 and quality[bad].excluded == "failed 3 of 3 quality checks"
    with store.session() as s:
        assert s.get(RaterRow, bad).excluded_reason is not None  # kept, with the reason
    judges = load_comparisons(store, source="human").judges
    assert judges == [good]
