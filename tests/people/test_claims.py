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
    LABEL,
    WRITE,
    TaskRefused,
    claim,
    invite,
    load_task,
    review_quality,
    submit_judgment,
    submit_labels,
    submit_write,
    sync_tasks,
)
from heart.store import (
    CompletionRow,
    JudgeRow,
    JudgmentRow,
    PairRow,
    RaterRow,
    Store,
    SystemRow,
    TaskRow,
    left_out_judgments,
)

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


def _answer(store: Store, task: str, right: bool) -> str:
    """A choice that passes (``right``) or fails a check seat; "A+" for a regular pair."""
    with store.session() as s:
        row = s.get(TaskRow, task)
        expected, check = row.expected, row.check
    if not check:
        return "A+"
    if check == "attention":
        return expected if right else ("B+" if expected != "B+" else "A+")
    return expected + "+" if right else "="  # a tie fails every gold check


def _judge_all(store: Store, rater: str, right: bool, cap: int | None = None) -> list[str]:
    """Judge until no work is left; returns the seats submitted, in order."""
    done = []
    while (task := claim(store, rater, JUDGE, now=0, seconds=HOUR, cap=cap)) is not None:
        submit_judgment(store, rater, task, _answer(store, task, right), "", now=1)
        done.append(task)
    return done


TWO_FAILED = "attention (people.checks_to_exclude: 2): failed 2 of 2 attention checks"


def test_two_failed_attention_checks_exclude_a_rater_and_reopen_what_they_judged(
    store: Store,
) -> None:
    spec = PeopleSpec(check_every=1, raters_per_pair=2)
    _study(store, items=2, spec=spec)  # 6 pairs and 6 checks (3 gold, 3 attention), 2 seats each
    bad, first, second = _raters(store, 3)
    bad_seats = _judge_all(store, bad, right=False)
    with store.session() as s:
        kinds = [s.get(TaskRow, t).check for t in bad_seats]
    # the second failed attention check ends their work; one before it, and failed gold pairs,
    # did not
    assert kinds[-1] == "attention" and kinds.count("attention") == 2
    assert kinds.count("gold") >= 1
    with store.session() as s:
        person = s.get(RaterRow, bad)
        assert person.excluded_reason == TWO_FAILED
        held = set(s.scalars(select(TaskRow.id).where(TaskRow.rater_id == bad)).all())
        kept = s.scalars(select(JudgmentRow.pair_id).where(JudgmentRow.judge == bad)).all()
    assert held == {t for t, k in zip(bad_seats, kinds, strict=True) if k}  # checks: evidence
    assert len(kept) == kinds.count(None)  # their verdicts stay in the store
    assert claim(store, bad, JUDGE, now=2, seconds=HOUR) is None  # and they get no more work
    for rater in (first, second):
        _judge_all(store, rater, right=True)
    with store.session() as s:
        seats = s.execute(select(TaskRow.target, TaskRow.rater_id, TaskRow.done).where(
            TaskRow.kind == JUDGE, TaskRow.check.is_(None))).all()  # fmt: skip
    assert all(done for _, _, done in seats)
    assert Counter(t for t, _, _ in seats) == dict.fromkeys({t for t, _, _ in seats}, 2)
    assert {r for _, r, _ in seats} == {first, second}  # the reopened seats went to others
    quality = {q.rater: q for q in review_quality(store)}
    assert quality[first].checks == 6 and quality[first].excluded is None
    assert quality[bad].excluded == TWO_FAILED and quality[bad].decision == "return"
    comparisons = load_comparisons(store, source="human")
    assert comparisons.judges == sorted([first, second])
    assert len(comparisons.a) == 2 * 6  # every pair still has two verdicts that count


def test_a_rater_passing_the_checks_keeps_working(store: Store) -> None:
    _study(store, items=2, spec=PeopleSpec(check_every=2, raters_per_pair=1))
    (rater,) = _raters(store, 1)
    seats = _judge_all(store, rater, right=True)
    assert len(seats) == 6 + 3
    with store.session() as s:
        assert s.get(RaterRow, rater).excluded_reason is None


def test_quality_review_excludes_what_was_stored_before_the_rule(store: Store) -> None:
    _study(store, items=2, spec=PeopleSpec(check_every=1, raters_per_pair=1))
    (rater,) = _raters(store, 1)
    with store.session() as s:  # two failed checks written directly, as an older store holds
        for row in s.scalars(select(TaskRow).where(TaskRow.check == "attention")).all()[:2]:
            row.rater_id, row.done, row.passed, row.served_at, row.submitted_at = (
                rater, True, False, 0.0, 5.0)  # fmt: skip
    quality = {q.rater: q for q in review_quality(store)}
    assert quality[rater].excluded == TWO_FAILED
    assert claim(store, rater, JUDGE, now=0, seconds=HOUR) is None


def test_a_person_takes_at_most_the_cap_of_tasks_of_all_kinds(store: Store) -> None:
    _study(store, items=4)
    (rater,) = _raters(store, 1)
    write = claim(store, rater, WRITE, now=0, seconds=HOUR, cap=3)
    assert write is not None
    judged = _judge_all(store, rater, right=True, cap=3)  # held seats of one kind at a time:
    assert len(judged) == 3  # the write seat went back to the pool when judging began
    with pytest.raises(TaskRefused, match="not assigned to you"):
        submit_write(store, SPEC, rater, write, "That sounds like a heavy week.", now=2)
    assert claim(store, rater, WRITE, now=3, seconds=HOUR, cap=3) is None  # three done
    assert claim(store, rater, WRITE, now=3, seconds=HOUR, cap=4) is not None
    (other,) = _raters(store, 1)  # the cap is per person
    assert len(_judge_all(store, other, right=True, cap=5)) == 5


def _label_all(store: Store, rater: str) -> list[str]:
    """Label until no work is left; returns the completions labelled."""
    done = []
    while (task := claim(store, rater, LABEL, now=0, seconds=HOUR)) is not None:
        submit_labels(store, rater, task, ["Affirmation"], now=1)
        done.append(task.split(":")[1])
    return done


def _own_work_study(store: Store) -> tuple[PeopleSpec, str, set[str], dict[str, set[str]]]:
    """Two items; one writer writes the human reply of both, which is then paired with the
    three models' replies. Returns the spec, the writer, their replies and the pairs."""
    spec = PeopleSpec(check_every=0, writers_per_item=1, raters_per_pair=2,
                      label_completions=100, labellers_per_completion=1)  # fmt: skip
    _study(store, items=2, spec=spec)
    (writer,) = _raters(store, 1)
    while (task := claim(store, writer, WRITE, now=0, seconds=HOUR)) is not None:
        submit_write(store, spec, writer, task, "That sounds like a lonely week; I'm here.", now=1)
    build_pairs(store, PairsSpec(), seed=0)
    sync_tasks(store, spec, seed=0)
    with store.session() as s:
        own = set(s.scalars(select(CompletionRow.id).where(CompletionRow.contributor == writer)))
        pairs = {p.id: {p.a_id, p.b_id} for p in s.scalars(select(PairRow))}
    return spec, writer, own, pairs


def test_nobody_judges_or_labels_their_own_reply_and_others_fill_those_seats(
    store: Store,
) -> None:
    _, writer, own, pairs = _own_work_study(store)
    with_own = {p for p, ids in pairs.items() if ids & own}
    assert len(own) == 2 and len(with_own) == 2 * 3
    judged = {task.split(":")[1] for task in _judge_all(store, writer, right=True)}
    assert judged == set(pairs) - with_own  # every pair but those holding their reply
    labelled = _label_all(store, writer)
    assert len(labelled) == 6 and not set(labelled) & own  # the models' replies only
    first, second = _raters(store, 2)
    for rater in (first, second):
        _judge_all(store, rater, right=True)
    assert set(_label_all(store, first)) == own
    with store.session() as s:
        seats = s.execute(
            select(TaskRow.kind, TaskRow.target, TaskRow.rater_id, TaskRow.done).where(
                TaskRow.kind.in_([JUDGE, LABEL])
            )
        ).all()
        verdicts = s.execute(select(JudgmentRow.pair_id, JudgmentRow.judge)).all()
    assert all(done for *_, done in seats)  # every seat filled
    assert {(t, r) for k, t, r, _ in seats if k == JUDGE and t in with_own} == {
        (p, r) for p in with_own for r in (first, second)
    }
    assert not [(p, j) for p, j in verdicts if j == writer and p in with_own]


def test_a_seat_on_ones_own_reply_is_refused_and_an_old_verdict_on_one_not_counted(
    store: Store,
) -> None:
    spec, writer, own, pairs = _own_work_study(store)
    pair = sorted(p for p, ids in pairs.items() if ids & own)[0]
    judge_seat, label_seat = f"judge:{pair}:0", f"label:{min(own)}:0"
    with store.session() as s:  # as a store from before the rule holds: the writer on seats
        for seat in (judge_seat, label_seat):
            s.get(TaskRow, seat).rater_id, s.get(TaskRow, seat).expires_at = writer, HOUR
    with pytest.raises(TaskRefused, match="a reply you wrote"):
        submit_judgment(store, writer, judge_seat, "A+", "mine is better", now=1)
    with pytest.raises(TaskRefused, match="a reply you wrote"):
        submit_labels(store, writer, label_seat, ["Affirmation"], now=1)
    with store.session() as s:
        assert not s.scalars(select(TaskRow.id).where(TaskRow.done, TaskRow.kind != WRITE)).all()
        s.get(TaskRow, judge_seat).done = True  # and, as an older store holds, the verdict
        s.merge(JudgeRow(name=writer, source="human", family="human", spec={}))
        s.flush()
        s.add(JudgmentRow(id="jd-own", pair_id=pair, judge=writer, order="ab", status="ok",
                          winner="a", strength=1, axes={}, rationale="", refused=[],
                          created_at="x"))  # fmt: skip
    sync_tasks(store, spec, seed=0)  # a restart gives those seats back to the pool
    with store.session() as s:
        for seat in (judge_seat, label_seat):
            assert (s.get(TaskRow, seat).rater_id, s.get(TaskRow, seat).done) == (None, False)
        assert s.get(JudgmentRow, "jd-own") is not None  # kept in the store
    (other,) = _raters(store, 1)
    _judge_all(store, other, right=True)
    comparisons = load_comparisons(store, source="human")
    assert comparisons.judges == [other] and len(comparisons.a) == len(pairs)  # fills the seat
    assert left_out_judgments(store) == {"by a rater on a pair holding their own reply": 1}
    quality = {q.rater: q for q in review_quality(store)}
    assert quality[writer].counted == 0 and quality[other].counted == len(pairs)
