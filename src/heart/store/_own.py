"""A person's own replies: nobody judges a pair holding a reply they wrote, nor labels one. A
human completion names its writer as ``contributor``, the rater id a judgment or seat names."""

from __future__ import annotations

from typing import Any

from sqlalchemy import ColumnElement, CompoundSelect, exists, or_, select, union_all
from sqlalchemy.orm import aliased

from heart.store._tables import CompletionRow, PairRow


def reply_by(completion: Any, person: Any) -> ColumnElement[bool]:
    """Whether ``completion`` (an id, or a column or parameter of one) was written by
    ``person``."""
    own = aliased(CompletionRow)
    return exists().where(own.id == completion, own.contributor == person)


def pair_with_reply_by(pair: Any, person: Any) -> ColumnElement[bool]:
    """Whether ``pair`` (an id, or a column or parameter of one) holds a reply ``person``
    wrote."""
    own, held = aliased(CompletionRow), aliased(PairRow)
    return exists().where(
        held.id == pair, or_(own.id == held.a_id, own.id == held.b_id), own.contributor == person
    )


def own_targets(person: Any) -> CompoundSelect[tuple[str]]:
    """The ids of every reply ``person`` wrote and every pair holding one: what they may neither
    judge nor label. One set for the whole statement, where `reply_by` and `pair_with_reply_by`
    look again for each row they test."""
    own = select(CompletionRow.id).where(CompletionRow.contributor == person)
    holding = select(PairRow.id).where(or_(PairRow.a_id.in_(own), PairRow.b_id.in_(own)))
    return union_all(own, holding)
