"""Claiming and submitting human work, safe under concurrency.

A claim is one UPDATE ... WHERE id = (SELECT a free seat ...) statement: atomic on SQLite (the
statement holds the write lock) and on PostgreSQL (the seat is locked, busy seats skipped). The
unique seat constraints make over-filling or taking the same target twice impossible even
when two requests race. A submission checks, in the transaction that stores the answer, that
the seat is still this rater's and not done; an expired seat someone else took is refused.
"""

from __future__ import annotations

import json
from dataclasses import dataclass

from sqlalchemy import and_, bindparam, exists, or_, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased

from heart.config import PeopleSpec
from heart.errors import HeartError
from heart.generate import completion_id
from heart.judging import judgment_id
from heart.people._tasks import ATTENTION, GOLD, JUDGE, LABEL, WRITE
from heart.store import (
    CompletionRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    LabelRow,
    PairRow,
    Store,
    SystemRow,
    TaskRow,
    now_iso,
)
from heart.types import SUPPORT_STRATEGIES, SystemKind, stable_id

CHOICES = {
    "A++": ("A", 2, "A is much better"),
    "A+": ("A", 1, "A is slightly better"),
    "=": ("tie", 1, "About the same"),
    "B+": ("B", 1, "B is slightly better"),
    "B++": ("B", 2, "B is much better"),
}
"""The five-option scale: key → (side, strength, label). Much better counts twice."""

CHARS_PER_WORD = 12
"""A reply may be ``max_words`` times this many characters long: room for long words, not for
one endless one."""

GOLD_REPLY = "Okay. Anyway, that's not really my problem, so let's talk about something else."
ATTENTION_REPLY = (
    "This reply is a check that you are reading carefully: please mark this reply as much "
    "better than the other one, whatever you think of it."
)


NOT_YOURS = (
    "this task is not assigned to you (it may have expired and gone to someone else); "
    "take the next one"
)


class TaskRefused(HeartError):
    """A task that cannot be shown or submitted: not yours, taken by someone else, or done."""


@dataclass(frozen=True)
class Task:
    """What a page shows for one claimed seat: the context and the reply or replies (in the
    order served), never a system name or id."""

    id: str
    kind: str
    context: list[tuple[str, str]]  # (role, text)
    replies: list[str]  # write: none; judge: A then B; label: the one reply
    expires_at: float


_FREE = and_(
    ~TaskRow.done, or_(TaskRow.rater_id.is_(None), TaskRow.expires_at < bindparam("p_now"))
)
"""A seat nobody holds now: not submitted, and unclaimed or its claim expired before p_now."""

_MINE = aliased(TaskRow, name="mine")
_UNTOUCHED = ~exists().where(
    _MINE.kind == TaskRow.kind, _MINE.target == TaskRow.target,
    _MINE.rater_id == bindparam("p_rater"),
)  # fmt: skip
"""A seat on a target p_rater holds no seat of (now or before)."""

# The statements a claim runs, built once: building them (the alias above most of all) cost
# more than running them. Parameters (p_ for no clash with a column): p_kind, p_rater, p_now,
# and p_expires (the new claim's expiry).
_HELD = (
    select(TaskRow.id)
    .where(
        TaskRow.kind == bindparam("p_kind"), TaskRow.rater_id == bindparam("p_rater"), ~TaskRow.done
    )
    .order_by(TaskRow.id)
    .limit(1)
)
_RENEW = (
    update(TaskRow)
    .where(TaskRow.id == bindparam("p_held"))
    .values(expires_at=bindparam("p_expires"))
    .execution_options(synchronize_session=False)
)
_CANDIDATE = (
    select(TaskRow.id)
    .where(TaskRow.kind == bindparam("p_kind"), _FREE, _UNTOUCHED)
    .order_by(TaskRow.seat, TaskRow.id)
    .limit(1)
    .with_for_update(skip_locked=True)
    .scalar_subquery()
)
_TAKE = (
    update(TaskRow)
    .where(TaskRow.id == _CANDIDATE, _FREE)
    .values(rater_id=bindparam("p_rater"), expires_at=bindparam("p_expires"),
            served_at=bindparam("p_now"))
    .returning(TaskRow.id)
    .execution_options(synchronize_session=False)
)  # fmt: skip
_ANY_LEFT = (
    select(TaskRow.id).where(TaskRow.kind == bindparam("p_kind"), _FREE, _UNTOUCHED).limit(1)
)


def _held(session: Session, params: dict[str, object]) -> str | None:
    """A seat of ``kind`` the rater holds and has not submitted (its claim renewed), if any."""
    held = session.scalar(_HELD, params)
    if held:
        session.execute(_RENEW, {"p_held": held, "p_expires": params["p_expires"]})
    return held


def claim(store: Store, rater: str, kind: str, *, now: float, seconds: float) -> str | None:
    """The id of the seat ``rater`` holds for ``kind``: the unfinished one they already hold
    (its claim renewed), or a newly claimed free (or expired) seat on a target they have not
    touched. None when no work is left for them. Seats of the least filled targets go first."""
    if kind not in (WRITE, JUDGE, LABEL):
        raise TaskRefused(f"unknown kind of task {kind!r}; use write, judge or label")
    params = {"p_kind": kind, "p_rater": rater, "p_now": now, "p_expires": now + seconds}
    for _ in range(20):
        with store.session() as session:
            held = _held(session, params)
            if held:
                return held
            try:
                taken = session.execute(_TAKE, params).scalar()
            except IntegrityError:
                session.rollback()  # the same rater raced itself for one target: look again
                continue
            if taken:
                return str(taken)
            if session.scalar(_ANY_LEFT, params) is None:
                return None
    return None


def _owned(session: Session, rater: str, task: str) -> TaskRow:
    row = session.get(TaskRow, task)
    if row is None or row.rater_id != rater:
        raise TaskRefused(NOT_YOURS)
    if row.done:
        raise TaskRefused("this task is already submitted; take the next one")
    return row


def _context(session: Session, item_id: str) -> list[tuple[str, str]]:
    item = session.get(ItemRow, item_id)
    assert item is not None
    return [(t["role"], t["text"]) for t in item.context]


def load_task(store: Store, rater: str, task: str) -> Task:
    """The page content of one of ``rater``'s claimed seats, replies in the served order."""
    with store.session() as session:
        row = _owned(session, rater, task)
        context = _context(session, row.item_id)
        replies: list[str] = []
        if row.kind == JUDGE and row.check:
            item = session.get(ItemRow, row.item_id)
            assert item is not None
            first = item.reference if row.check == GOLD else ATTENTION_REPLY
            other = GOLD_REPLY if row.check == GOLD else item.reference
            replies = [first, other] if row.shown == "ab" else [other, first]
        elif row.kind == JUDGE:
            pair = session.get(PairRow, row.target)
            assert pair is not None
            texts = [session.get(CompletionRow, cid) for cid in (pair.a_id, pair.b_id)]
            replies = [c.text for c in texts if c is not None]
            if row.shown == "ba":
                replies.reverse()
        elif row.kind == LABEL:
            completion = session.get(CompletionRow, row.target)
            assert completion is not None
            replies = [completion.text]
        return Task(row.id, row.kind, context, replies, float(row.expires_at or 0.0))


def _finish(row: TaskRow, now: float) -> None:
    row.done, row.submitted_at = True, now


def check_reply(text: str, spec: PeopleSpec) -> str:
    """A writer's reply, whitespace tidied, or TaskRefused saying what to change."""
    clean = " ".join(text.split())
    words = len(clean.split())
    if words < spec.min_words:
        raise TaskRefused(f"write a reply of at least {spec.min_words} words (this has {words})")
    if words > spec.max_words:
        raise TaskRefused(
            f"keep the reply to {spec.max_words} words or fewer (this has {words}); "
            "aim for 1 to 3 sentences, about 40 words"
        )
    limit = spec.max_words * CHARS_PER_WORD
    if len(clean) > limit:
        raise TaskRefused(
            f"keep the reply under {limit} characters (this has {len(clean)}); "
            "aim for 1 to 3 sentences, about 40 words"
        )
    return clean


def submit_write(
    store: Store, spec: PeopleSpec, rater: str, task: str, text: str, *, now: float
) -> str:
    """Store ``rater``'s reply for the seat's item as a completion of the human system."""
    reply = check_reply(text, spec)
    with store.session() as session:
        row = _owned(session, rater, task)
        if row.kind != WRITE:
            raise TaskRefused("this task asks for a judgment, not a reply")
        system = session.get(SystemRow, spec.human_system)
        if system is None or system.kind != SystemKind.HUMAN.value:
            raise TaskRefused(
                f"the study has no human system named {spec.human_system!r}; add one to "
                "study.yaml (kind: human) or set people.human_system"
            )
        cid = completion_id(row.item_id, spec.human_system, rater)
        session.add(
            CompletionRow(
                id=cid, item_id=row.item_id, system=spec.human_system, contributor=rater,
                status="ok", text=reply, created_at=now_iso(),
            )
        )  # fmt: skip
        _finish(row, now)
        return cid


def submit_judgment(
    store: Store,
    rater: str,
    task: str,
    choice: str,
    rationale: str,
    *,
    now: float,
    checklist: list[str] | None = None,
) -> None:
    """Store a rater's five-option verdict (in the served order) in the pair's own terms; a
    check seat only records whether it was passed."""
    if choice not in CHOICES:
        raise TaskRefused("choose one of the five options before submitting")
    rationale = " ".join(rationale.split())
    if len(rationale) > 2000:
        raise TaskRefused("keep the reason under 2,000 characters")
    side, strength, _ = CHOICES[choice]
    with store.session() as session:
        row = _owned(session, rater, task)
        if row.kind != JUDGE:
            raise TaskRefused("this task asks for a reply, not a judgment")
        if row.check:
            wanted = row.expected or ""
            row.passed = choice == wanted if row.check == ATTENTION else side == wanted
        else:
            first_is_a = row.shown == "ab"
            winner = "tie" if side == "tie" else ("a" if (side == "A") == first_is_a else "b")
            session.merge(JudgeRow(name=rater, source="human", family="human", spec={}))
            session.flush()
            session.add(
                JudgmentRow(
                    id=judgment_id(row.target, rater, row.shown), pair_id=row.target, judge=rater,
                    order=row.shown, status="ok", winner=winner, strength=strength, axes={},
                    rationale=rationale, raw=json.dumps({"choice": choice,
                                                         "checklist": checklist or []}),
                    refused=[], created_at=now_iso(),
                )
            )  # fmt: skip
        _finish(row, now)


def submit_labels(
    store: Store, rater: str, task: str, strategies: list[str], *, now: float
) -> None:
    """Store which of the 15 strategies ``rater`` sees in the seat's completion."""
    unknown = [s for s in strategies if s not in SUPPORT_STRATEGIES]
    if unknown:
        raise TaskRefused(f"unknown strategies {unknown}; pick from the list shown")
    with store.session() as session:
        row = _owned(session, rater, task)
        if row.kind != LABEL:
            raise TaskRefused("this task is not a labelling task")
        session.add(
            LabelRow(
                id=stable_id("lb", row.target, rater), completion_id=row.target, rater_id=rater,
                strategies=sorted(set(strategies)), created_at=now_iso(),
            )
        )  # fmt: skip
        _finish(row, now)
