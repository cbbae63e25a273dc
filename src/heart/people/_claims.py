"""Claiming and submitting human work, safe under concurrency.

A claim is one UPDATE ... WHERE id = (SELECT a free seat ...) statement: atomic on SQLite (the
statement holds the write lock) and on PostgreSQL (the seat is locked, busy seats skipped). The
unique seat constraints make over-filling or taking the same target twice impossible even
when two requests race. A submission checks, in the transaction that stores the answer, that
the seat is still this rater's and not done; an expired seat someone else took is refused.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from sqlalchemy import (
    BigInteger,
    Connection,
    CursorResult,
    and_,
    bindparam,
    case,
    exists,
    func,
    insert,
    or_,
    select,
    update,
)
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session, aliased

from heart.config import PeopleSpec
from heart.errors import TaskRefused
from heart.ids import Presentation, completion_id, judgment_id, label_id
from heart.people._quality import exclude_if_flagged, looks_again
from heart.people._scale import ATTENTION_REPLY, CHOICES, GOLD_REPLY, attention_instruction
from heart.people._tasks import ATTENTION, GOLD, JUDGE, LABEL, WRITE
from heart.people._text import plain_text
from heart.store import (
    CompletionRow,
    ItemRow,
    JudgeRow,
    JudgmentRow,
    LabelRow,
    PairRow,
    RaterRow,
    Store,
    SystemRow,
    TaskRow,
    add_if_missing,
    now_iso,
    own_targets,
    pair_with_reply_by,
    reply_by,
)
from heart.strategies import load_taxonomy
from heart.types import JudgeSource, Order, Status, SystemKind

CHARS_PER_WORD = 12
"""A reply may be ``max_words`` times this many characters long: room for long words, not for
one endless one."""

NOT_YOURS = (
    "this task is not assigned to you (it may have expired and gone to someone else); "
    "take the next one"
)


ALREADY_DONE = "this task is already submitted; take the next one"


OWN_REPLY = "this task holds a reply you wrote, and nobody rates their own; take the next one"


class _SeatState(Protocol):
    rater_id: str | None
    done: bool


Seat = TypeVar("Seat", bound=_SeatState)
Claimed = TypeVar("Claimed")

NO_CAP = 2**31 - 1
"""The per-person cap when the study sets none."""


@dataclass(frozen=True)
class Task:
    """What a page shows for one claimed seat: the context and the reply or replies (in the
    order served), never a system name or id."""

    id: str
    kind: str
    context: list[tuple[str, str]]  # (role, text)
    replies: list[str]  # write: none; judge: A then B; label: the one reply
    expires_at: float
    instruction: str | None = None  # an attention check's instructed response, shown with it


_FREE = and_(
    ~TaskRow.done, or_(TaskRow.rater_id.is_(None), TaskRow.expires_at < bindparam("p_now"))
)
"""A seat nobody holds now: not submitted, and unclaimed or its claim expired before p_now."""

_MINE = aliased(TaskRow, name="mine")
_UNTOUCHED = TaskRow.target.not_in(
    select(_MINE.target).where(_MINE.kind == bindparam("p_kind"),
                               _MINE.rater_id == bindparam("p_rater"))
)  # fmt: skip
"""A seat on a target p_rater holds no seat of p_kind of (now or before): the targets they
touched read once per statement, not once per seat tested."""

_EXCLUDED = exists().where(
    RaterRow.id == bindparam("p_rater"), RaterRow.excluded_reason.is_not(None)
)
"""p_rater is excluded by quality control: no more work for them."""

_TAKEN = (
    select(func.count(TaskRow.id))
    .where(
        TaskRow.rater_id == bindparam("p_rater"),
        TaskRow.done | (TaskRow.expires_at >= bindparam("p_now")),
    )
    .scalar_subquery()
)
"""How many tasks p_rater has submitted or holds now (for the per-person cap, p_cap)."""

_ELIGIBLE = and_(~_EXCLUDED, bindparam("p_cap") > _TAKEN)
"""p_rater may take another task."""

_NOT_OWN = TaskRow.target.not_in(own_targets(bindparam("p_rater")))
"""A seat on neither a pair holding a reply p_rater wrote nor such a reply (to label)."""

# The statements a claim runs, built once: building them (the alias above most of all) cost
# more than running them. Parameters (p_ for no clash with a column): p_kind, p_rater, p_now,
# and p_expires (the new claim's expiry).
_HELD = (
    select(TaskRow.id)
    .where(
        TaskRow.kind == bindparam("p_kind"),
        TaskRow.rater_id == bindparam("p_rater"),
        ~TaskRow.done,
        _NOT_OWN,
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
    .where(TaskRow.kind == bindparam("p_kind"), _FREE, _UNTOUCHED, _ELIGIBLE, _NOT_OWN)
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
_LET_GO = (
    update(TaskRow)
    .where(TaskRow.rater_id == bindparam("p_rater"), ~TaskRow.done,
           TaskRow.kind != bindparam("p_kind"))
    .values(rater_id=None, expires_at=None, served_at=None)
    .execution_options(synchronize_session=False)
)  # fmt: skip
"""Before a new seat is taken, the rater's unfinished seats of other kinds go back to the pool:
a session is at one kind of work at a time, and a seat left open in another tab would hold a
place of the per-person cap the session's next task needs (an answer to it is then refused as
no longer theirs)."""
_ANY_LEFT = (
    select(TaskRow.id)
    .where(TaskRow.kind == bindparam("p_kind"), _FREE, _UNTOUCHED, _ELIGIBLE, _NOT_OWN)
    .limit(1)
)


_ONE_CLAIM_AT_A_TIME = select(func.pg_advisory_xact_lock(bindparam("p_lock", type_=BigInteger)))
"""On PostgreSQL, one rater's claims wait for each other (until the claim's transaction ends):
two tabs claiming seats of two kinds at once would each see the per-person cap not reached yet.
Answers never take this lock, so a claim waiting on a seat being answered cannot close a
circle. (SQLite runs one write at a time anyway.)"""


def _lock_key(params: dict[str, object]) -> int:
    """The advisory lock of a rater's claims: a signed 64-bit number from their id."""
    digest = hashlib.sha256(f"heart-claim\x1f{params['p_rater']}".encode()).digest()
    return int.from_bytes(digest[:8], "big", signed=True)


def _held(connection: Connection, params: dict[str, object]) -> str | None:
    """A seat of ``kind`` the rater holds and has not submitted (its claim renewed), if any."""
    held = connection.scalar(_HELD, params)
    if held:
        connection.execute(_RENEW, {"p_held": held, "p_expires": params["p_expires"]})
    return held


def _claim_params(
    rater: str, kind: str, now: float, seconds: float, cap: int | None
) -> dict[str, object]:
    if kind not in (WRITE, JUDGE, LABEL):
        raise TaskRefused(f"unknown kind of task {kind!r}; use write, judge or label")
    return {
        "p_kind": kind, "p_rater": rater, "p_now": now, "p_expires": now + seconds,
        "p_cap": NO_CAP if cap is None else cap,
    }  # fmt: skip


def _claimed(
    store: Store, params: dict[str, object], then: Callable[[Connection, str], Claimed]
) -> Claimed | None:
    """``then`` of the seat the rater holds or has just claimed, run in the claim's own
    transaction; None when no work is left for them."""
    for _ in range(20):
        try:
            with store.connection() as connection:
                if connection.dialect.name == "postgresql":
                    connection.execute(_ONE_CLAIM_AT_A_TIME, {"p_lock": _lock_key(params)})
                held = _held(connection, params)
                if held:
                    return then(connection, held)
                connection.execute(_LET_GO, params)
                taken = connection.execute(_TAKE, params).scalar()
                if taken:
                    return then(connection, str(taken))
                if connection.scalar(_ANY_LEFT, params) is None:
                    return None
        except IntegrityError:
            continue  # the same rater raced itself for one target: look again
    return None


def claim(
    store: Store, rater: str, kind: str, *, now: float, seconds: float, cap: int | None = None
) -> str | None:
    """The id of the seat ``rater`` holds for ``kind``: the unfinished one they already hold
    (its claim renewed), or a newly claimed free (or expired) seat on a target they have not
    touched and that holds no reply they wrote (their unfinished seats of other kinds going
    back to the pool first). None when no work is left for them: none left
    at all, ``cap`` tasks already taken, or excluded by quality control. Seats of the least
    filled targets go first."""
    return _claimed(store, _claim_params(rater, kind, now, seconds, cap), lambda _, seat: seat)


def claim_task(
    store: Store, rater: str, kind: str, *, now: float, seconds: float, cap: int | None = None
) -> tuple[Task, Standing] | None:
    """The page of the seat `claim` gives ``rater`` and where they stand at it (see
    `Standing`), read in the claim's own transaction (one transaction where a claim, then
    `load_task` and a look at the standing took three)."""
    params = _claim_params(rater, kind, now, seconds, cap)

    def page(connection: Connection, seat: str) -> tuple[Task, Standing]:
        return _page(connection, rater, seat), _standing(connection, rater, seat, kind, now)

    return _claimed(store, params, page)


_OPEN_TARGETS = select(func.count(func.distinct(TaskRow.target))).where(
    TaskRow.kind == bindparam("p_kind"), _FREE, _UNTOUCHED, _ELIGIBLE, _NOT_OWN
)
_OPEN_TO = _OPEN_TARGETS.scalar_subquery() + case((_HELD.exists(), 1), else_=0)
"""How many tasks of p_kind p_rater could still take at p_now (see open_to)."""


def open_to(store: Store, rater: str, kind: str, *, now: float) -> int:
    """How many tasks of ``kind`` ``rater`` could still take now, the one they hold included:
    their unfinished seat and one per target with a free seat they may claim (none once
    excluded). Others' claims change it, so it is an estimate of the work left to them."""
    params = {"p_kind": kind, "p_rater": rater, "p_now": now, "p_cap": NO_CAP}
    with store.connection() as connection:
        return int(connection.scalar(select(_OPEN_TO), params) or 0)


@dataclass(frozen=True)
class Standing:
    """Where a rater stands at one of their seats: the seats they submitted (of every kind,
    checks included) and the seconds those took from serving to sending, when this seat was
    served, and the tasks of its kind still open to them (see open_to)."""

    done: int
    spent: float
    served_at: float | None
    open: int


_MINE_DONE = and_(TaskRow.rater_id == bindparam("p_rater"), TaskRow.done)
_STANDING = select(
    select(func.count(TaskRow.id)).where(_MINE_DONE).scalar_subquery(),
    select(func.sum(TaskRow.submitted_at - TaskRow.served_at)).where(_MINE_DONE).scalar_subquery(),
    select(TaskRow.served_at).where(TaskRow.id == bindparam("p_task")).scalar_subquery(),
    _OPEN_TO,
)


def _standing(connection: Connection, rater: str, task: str, kind: str, now: float) -> Standing:
    """Where ``rater`` stands at their seat ``task`` of ``kind``, read in one query."""
    params = {"p_kind": kind, "p_rater": rater, "p_now": now, "p_cap": NO_CAP, "p_task": task}
    done, spent, served, open_ = connection.execute(_STANDING, params).one()
    return Standing(int(done), float(spent or 0.0), served, int(open_ or 0))


def _open_seat(seat: Seat | None, rater: str) -> Seat:
    """``seat`` (a task row, or a row of `_PAGE`), refused if it is missing, not ``rater``'s,
    or already submitted."""
    if seat is None or seat.rater_id != rater:
        raise TaskRefused(NOT_YOURS)
    if seat.done:
        raise TaskRefused(ALREADY_DONE)
    return seat


def _owned(session: Session, rater: str, task: str) -> TaskRow:
    return _open_seat(session.get(TaskRow, task), rater)


_A, _B, _LABELLED = (aliased(CompletionRow, name=n) for n in ("a", "b", "labelled"))
_PAGE = (
    select(
        TaskRow.rater_id, TaskRow.done, TaskRow.kind, TaskRow.check, TaskRow.shown,
        TaskRow.expected, TaskRow.expires_at, ItemRow.context, ItemRow.reference,
        _A.text.label("a_text"), _B.text.label("b_text"), _LABELLED.text.label("labelled_text"),
    )
    .join(ItemRow, ItemRow.id == TaskRow.item_id)
    .outerjoin(PairRow, and_(TaskRow.kind == JUDGE, PairRow.id == TaskRow.target))
    .outerjoin(_A, _A.id == PairRow.a_id)
    .outerjoin(_B, _B.id == PairRow.b_id)
    .outerjoin(_LABELLED, and_(TaskRow.kind == LABEL, _LABELLED.id == TaskRow.target))
    .where(TaskRow.id == bindparam("p_task"))
)  # fmt: skip
"""Everything one seat's page shows, in one query: the seat, its item, and the replies."""


def load_task(store: Store, rater: str, task: str) -> Task:
    """The page content of one of ``rater``'s claimed seats, replies in the served order. An
    attention check shows the original reply beside a plain one, and in ``instruction`` the
    choice it asks for (the answer stored as expected, so older seats ask for theirs too)."""
    with store.connection() as connection:
        return _page(connection, rater, task)


def _page(connection: Connection, rater: str, task: str) -> Task:
    row = _open_seat(connection.execute(_PAGE, {"p_task": task}).one_or_none(), rater)
    replies: list[str] = []
    if row.kind == JUDGE and row.check:
        first = row.reference if row.check == GOLD else ATTENTION_REPLY
        other = GOLD_REPLY if row.check == GOLD else row.reference
        replies = [first, other]
    elif row.kind == JUDGE:
        replies = [row.a_text, row.b_text]
    elif row.kind == LABEL:
        replies = [row.labelled_text]
    if row.kind == JUDGE and row.shown == Order.BA:
        replies.reverse()
    context = [(t["role"], t["text"]) for t in row.context]
    instruction = None
    if row.check == ATTENTION and row.expected in CHOICES:
        instruction = attention_instruction(row.expected)
    return Task(task, row.kind, context, replies, float(row.expires_at or 0.0), instruction)


_FINISH = (
    update(TaskRow)
    .where(TaskRow.id == bindparam("p_task"), TaskRow.rater_id == bindparam("p_rater"),
           ~TaskRow.done)
    .values(done=True, submitted_at=bindparam("p_now"))
    .execution_options(synchronize_session=False)
)  # fmt: skip


_SEAT = select(TaskRow.rater_id, TaskRow.done).where(TaskRow.id == bindparam("p_task"))


def _finish(
    session: Session | Connection, task: str, rater: str, now: float, passed: bool | None = None
) -> None:
    """Mark the seat submitted (a check seat: whether it was ``passed``), in the transaction
    that stores the answer, only if it is still ``rater``'s and not done: whatever happened
    since it was read, an answer to a seat that expired and went to someone else is refused and
    rolled back."""
    if isinstance(session, Session):
        session.flush()
    params = {"p_task": task, "p_rater": rater, "p_now": now, "p_passed": passed}
    result = session.execute(_FINISH if passed is None else _FINISH_CHECK, params)
    if cast("CursorResult[Any]", result).rowcount != 1:
        _open_seat(session.execute(_SEAT, params).one_or_none(), rater)  # says which
        raise TaskRefused(NOT_YOURS)


@contextmanager
def _answering(store: Store, rater: str, task: str) -> Iterator[Connection]:
    """The transaction that stores ``rater``'s answer to ``task`` (an ORM session over it:
    `Session(bind=connection)`). When the same form is sent twice at once, one answer is
    stored and the other refused as done, not a server error."""
    try:
        with store.connection() as connection:
            yield connection
    except IntegrityError:
        with store.connection() as connection:  # refused now if done or taken meanwhile
            _open_seat(connection.execute(_SEAT, {"p_task": task}).one_or_none(), rater)
        raise


def check_reply(text: str, spec: PeopleSpec) -> str:
    """A writer's reply, whitespace tidied, or TaskRefused saying what to change."""
    clean = " ".join(plain_text(text, "reply").split())
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
    with _answering(store, rater, task) as connection, Session(bind=connection) as session:
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
                status=Status.OK, text=reply, created_at=now_iso(),
            )
        )  # fmt: skip
        _finish(session, row.id, rater, now)
        return cid


_JUDGE_ONE = (
    select(
        TaskRow.rater_id, TaskRow.done, TaskRow.kind, TaskRow.check, TaskRow.expected,
        TaskRow.shown, TaskRow.target, PairRow.a_id, PairRow.b_id,
        pair_with_reply_by(TaskRow.target, bindparam("p_rater")).label("own"),
        exists().where(JudgeRow.name == bindparam("p_rater")).label("known"),
        select(func.count(TaskRow.id))
        .where(TaskRow.rater_id == bindparam("p_rater"), TaskRow.kind == JUDGE, TaskRow.done)
        .scalar_subquery()
        .label("judged"),
    )
    .outerjoin(PairRow, and_(TaskRow.check.is_(None), PairRow.id == TaskRow.target))
    .where(TaskRow.id == bindparam("p_task"))
)  # fmt: skip
"""Everything storing a verdict reads, in one query: the seat, its pair, whether the pair holds
a reply p_rater wrote, whether p_rater is a known judge yet, and how many judge seats they
submitted before this one (for `look_again`)."""
_FINISH_CHECK = _FINISH.values(passed=bindparam("p_passed"))
"""`_FINISH` for a check seat, recording whether it was passed."""
_INSERT_JUDGMENT = insert(JudgmentRow)


def submit_judgment(
    store: Store,
    rater: str,
    task: str,
    choice: str,
    rationale: str,
    *,
    now: float,
    checklist: list[str] | None = None,
    spec: PeopleSpec | None = None,
) -> None:
    """Store a rater's five-option verdict (in the served order) in the pair's own terms; a
    check seat only records whether it was passed. After a failed attention check, and every
    ``LOOK_EVERY`` judge seats, the rater's quality flags are measured again, and a flag the
    study (``spec``, else the defaults) makes excluding excludes them. One read, one insert and
    one update on a Core connection: the busiest answer of a crowd study."""
    if choice not in CHOICES:
        raise TaskRefused("choose one of the five options before submitting")
    for item in checklist or []:
        plain_text(item, "checklist")
    rationale = " ".join(plain_text(rationale, "reason").split())
    if len(rationale) > 2000:
        raise TaskRefused("keep the reason under 2,000 characters")
    side, strength, _ = CHOICES[choice]
    with _answering(store, rater, task) as connection:
        row = _open_seat(
            connection.execute(_JUDGE_ONE, {"p_task": task, "p_rater": rater}).one_or_none(),
            rater,
        )
        if row.kind != JUDGE:
            raise TaskRefused("this task asks for a reply, not a judgment")
        passed: bool | None = None
        if row.check:
            wanted = row.expected or ""
            passed = choice == wanted if row.check == ATTENTION else side == wanted
        else:
            if row.own:
                raise TaskRefused(OWN_REPLY)
            shown = Presentation(row.a_id, row.b_id, Order(row.shown))
            if not row.known:
                add_if_missing(connection, JudgeRow, name=rater, source=JudgeSource.HUMAN,
                               family="human", spec={})  # fmt: skip
            connection.execute(
                _INSERT_JUDGMENT,
                {
                    "id": judgment_id(row.target, rater, shown.order), "pair_id": row.target,
                    "judge": rater, "order": shown.order, "status": Status.OK,
                    "winner": shown.to_pair(side), "strength": strength, "axes": {},
                    "rationale": rationale,
                    "raw": json.dumps({"choice": choice, "checklist": checklist or []}),
                    "refused": [], "created_at": now_iso(),
                },
            )  # fmt: skip
        _finish(connection, task, rater, now, passed=passed)
        failed = row.check == ATTENTION and passed is False
        if looks_again(int(row.judged) + 1, failed):
            with Session(bind=connection) as session:
                exclude_if_flagged(session, rater, spec or PeopleSpec())
                session.flush()


def submit_labels(
    store: Store, rater: str, task: str, strategies: list[str], *, now: float
) -> None:
    """Store which of the 15 strategies ``rater`` sees in the seat's completion."""
    for strategy in strategies:
        plain_text(strategy, "strategy")
    taxonomy = load_taxonomy()
    unknown = [s for s in strategies if s not in taxonomy.names]
    if unknown:
        raise TaskRefused(f"unknown strategies {unknown}; pick from the list shown")
    with _answering(store, rater, task) as connection, Session(bind=connection) as session:
        row = _owned(session, rater, task)
        if row.kind != LABEL:
            raise TaskRefused("this task is not a labelling task")
        if session.scalar(select(reply_by(row.target, rater))):
            raise TaskRefused(OWN_REPLY)
        session.add(
            LabelRow(
                id=label_id(row.target, rater), completion_id=row.target, rater_id=rater,
                strategies=sorted(set(strategies)), taxonomy_hash=taxonomy.hash,
                created_at=now_iso(),
            )
        )  # fmt: skip
        _finish(session, row.id, rater, now)
