"""Which stored judgments count: the one rule the analyses, the exports, the admin views and the
report share, and why a judgment that does not count is left out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from sqlalchemy import ColumnElement, and_, case, select
from sqlalchemy.orm import aliased

from heart.store._db import Store
from heart.store._own import pair_with_reply_by
from heart.store._tables import CompletionRow, JudgmentRow, PairRow, RaterRow
from heart.types import Status


def _failed() -> ColumnElement[bool]:
    return JudgmentRow.status != Status.OK


def _excluded_rater() -> ColumnElement[bool]:
    return JudgmentRow.judge.in_(select(RaterRow.id).where(RaterRow.excluded_reason.is_not(None)))


def _own_reply() -> ColumnElement[bool]:
    # only a judge who wrote a reply can judge their own: the writers, listed once, are asked
    # first, so the pair is looked at only for them
    writers = select(CompletionRow.contributor).where(CompletionRow.contributor.is_not(None))
    return and_(
        JudgmentRow.judge.in_(writers), pair_with_reply_by(JudgmentRow.pair_id, JudgmentRow.judge)
    )


def _one_system() -> ColumnElement[bool]:
    """Both replies of the pair come from one system (say, an imported pair of a system with
    itself): such a verdict says nothing about the system's rating. (Such pairs are listed
    once, not looked up for every judgment.)"""
    pair, a, b = aliased(PairRow), aliased(CompletionRow), aliased(CompletionRow)
    one_system = (
        select(pair.id)
        .join(a, a.id == pair.a_id)
        .join(b, b.id == pair.b_id)
        .where(a.system == b.system)
    )
    return JudgmentRow.pair_id.in_(one_system)


LEFT_OUT: dict[str, Callable[[], ColumnElement[bool]]] = {
    "failed": _failed,
    "by a rater excluded by quality control": _excluded_rater,
    "by a rater on a pair holding their own reply": _own_reply,
    "on a pair of two replies of one system": _one_system,
}
"""Why a judgment is left out of the analyses (the first reason that applies) → its test."""


def counted_judgment() -> ColumnElement[bool]:
    """A judgment counts when it holds a valid verdict, its rater was not excluded by quality
    control (LLM judges are never excluded), and no reply in its pair is the rater's own."""
    return and_(*(~rule() for rule in LEFT_OUT.values()))


def left_out_reason() -> ColumnElement[str | None]:
    """Why a judgment is not counted (a key of LEFT_OUT), or NULL when it counts."""
    return case(*((rule(), reason) for reason, rule in LEFT_OUT.items()), else_=None)


def left_out_judgments(store: Store) -> dict[str, int]:
    """How many stored judgments the analyses leave out, per reason."""
    with store.session() as session:
        reasons = session.scalars(select(left_out_reason()).where(~counted_judgment()))
        return dict(Counter(str(reason) for reason in reasons))
