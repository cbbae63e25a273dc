"""Which stored judgments count: the one rule the analyses, the exports and the admin views
share."""

from __future__ import annotations

from sqlalchemy import ColumnElement, and_, select

from heart.store._tables import JudgmentRow, RaterRow
from heart.types import Status


def counted_judgment() -> ColumnElement[bool]:
    """A judgment counts when it holds a valid verdict and its rater was not excluded by
    quality control (LLM judges are never excluded)."""
    excluded = select(RaterRow.id).where(RaterRow.excluded_reason.is_not(None))
    return and_(JudgmentRow.status == Status.OK, JudgmentRow.judge.not_in(excluded))
