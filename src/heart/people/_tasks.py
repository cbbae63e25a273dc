"""The seats of human work, built from the store: writers per item, raters per pair (with
gold and attention checks mixed in), labellers per sampled completion. Idempotent."""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from sqlalchemy import ColumnElement, and_, or_, select, update
from sqlalchemy.orm import Session

from heart.config import PeopleSpec
from heart.ids import coin, seat_order
from heart.people._draw import people_pairs
from heart.people._scale import CHOICES
from heart.sample import spread_sample
from heart.store import (
    CompletionRow,
    ItemRow,
    PairRow,
    Store,
    TaskRow,
    pair_with_reply_by,
    refresh_statistics,
    reply_by,
)
from heart.types import Order, Shown, Status

WRITE, JUDGE, LABEL = "write", "judge", "label"
KINDS = (WRITE, JUDGE, LABEL)
GOLD, ATTENTION = "gold", "attention"


@dataclass(frozen=True)
class TaskCounts:
    """Seats per kind after a sync, and how many the sync added."""

    seats: dict[str, int]
    added: dict[str, int]


def task_id(kind: str, target: str, seat: int) -> str:
    return f"{kind}:{target}:{seat}"


def attention_choice(seed: int, seat: str) -> str:
    """The option an attention seat instructs its rater to choose: a seeded draw per seat over
    the five, so that no one answer passes every check."""
    return list(CHOICES)[coin(seed, seat, ATTENTION) % len(CHOICES)]


def expected_answer(check: str | None, shown: Order | str, seed: int, seat: str) -> str | None:
    """The answer a check seat must get. Gold: the original supporter reply (shown first when
    the order is ab) must win, by any strength. Attention: exactly the option its instruction
    names (stores from before instructions hold "A++" or "B++": the instruction names that)."""
    if check is None:
        return None
    if check == ATTENTION:
        return attention_choice(seed, seat)
    return Shown.FIRST if Order(shown) is Order.AB else Shown.SECOND


ON_OWN_REPLY = and_(
    TaskRow.rater_id.is_not(None),
    or_(pair_with_reply_by(TaskRow.target, TaskRow.rater_id),
        reply_by(TaskRow.target, TaskRow.rater_id)),
)  # fmt: skip
"""A seat taken by someone on a pair holding their own reply, or to label it (stores from
before claims refused those)."""


def reopen(session: Session, seats: ColumnElement[bool]) -> None:
    """Give the ``seats`` back to the pool, free and not submitted; what was stored for them
    stays in the store."""
    session.execute(
        update(TaskRow)
        .where(seats)
        .values(rater_id=None, expires_at=None, served_at=None, submitted_at=None, done=False)
        .execution_options(synchronize_session=False)
    )


def sync_tasks(store: Store, spec: PeopleSpec, seed: int) -> TaskCounts:
    """Add every missing seat: ``writers_per_item`` per item, ``raters_per_pair`` per pair (of
    the pairs drawn for people when ``judge_pairs`` is set: ``people_pairs``; and
    after every ``check_every`` pairs one check seat on an item: gold or attention in turn,
    pairs stored later counted on from those seated before), ``labellers_per_completion`` per
    sampled completion (the sample only ever tops up to ``label_completions``). Existing seats
    are kept, but any taken on the taker's own reply goes back to the pool, for others to
    fill."""
    with store.session() as s:
        reopen(s, ON_OWN_REPLY)
        have = {(k, t) for k, t in s.execute(select(TaskRow.kind, TaskRow.target)).all()}
        items = sorted(s.scalars(select(ItemRow.id)).all())
        pairs = s.execute(select(PairRow.id, PairRow.item_id).order_by(PairRow.id)).all()
        done = s.execute(
            select(CompletionRow.id, CompletionRow.item_id, CompletionRow.system).where(
                CompletionRow.status == Status.OK
            )
        ).all()
        rows: list[TaskRow] = []

        def seats(kind: str, target: str, item: str, n: int, check: str | None = None) -> None:
            if (kind, target) in have:
                return
            for seat in range(n):
                tid = task_id(kind, target, seat)
                shown = seat_order(seed, tid) if kind == JUDGE else Order.AB
                rows.append(
                    TaskRow(id=tid, kind=kind, target=target, item_id=item, seat=seat,
                            shown=shown, check=check,
                            expected=expected_answer(check, shown, seed, tid),
                            done=False)
                )  # fmt: skip

        for item in items:
            seats(WRITE, item, item, spec.writers_per_item)
        n = sum((JUDGE, pair) in have for pair, _ in pairs)  # pairs seated already
        chosen = people_pairs(s, spec, seed)  # None: every pair
        for pair, item in pairs:
            if (JUDGE, pair) in have or (chosen is not None and pair not in chosen):
                continue
            n += 1  # counted on from the pairs seated before, so checks keep their rate
            seats(JUDGE, pair, item, spec.raters_per_pair)
            if spec.check_every and n % spec.check_every == 0:
                check = GOLD if (n // spec.check_every) % 2 else ATTENTION
                # named after the pair it follows ("_" sorts after the ":" of a task id), so
                # the queue serves it right after that pair, among the others
                seats(JUDGE, f"{pair}_{check}", item, spec.raters_per_pair, check=check)
        sampled = {target for kind, target in have if kind == LABEL}
        item_of = {cid: item for cid, item, _ in done}
        members = [(cid, system) for cid, _, system in done]
        for cid in spread_sample(members, sampled, spec.label_completions, seed, "label"):
            seats(LABEL, cid, item_of[cid], spec.labellers_per_completion)
        added = Counter(row.kind for row in rows)
        s.add_all(rows)
        s.flush()
        if rows:  # the claims read these: plan them for what they hold now
            refresh_statistics(s, TaskRow, PairRow, CompletionRow, ItemRow)
        seats_now = Counter(s.scalars(select(TaskRow.kind)).all())
    return TaskCounts(seats={k: seats_now[k] for k in KINDS}, added={k: added[k] for k in KINDS})
