"""Where a stored judgment came from: made by this study, or imported."""

from __future__ import annotations

from sqlalchemy import ColumnElement, exists, or_

from heart.store._tables import CallRow, JudgmentRow, TaskRow


def imported_judgment() -> ColumnElement[bool]:
    """A judgment this study did not make: its model call is not in the study's call cache (as
    for an LLM judge heart called) and no done web task stands behind it (as for a person in the
    web app). It came in by import, from a file or a bundle; neither carries calls or tasks."""
    called = exists().where(CallRow.hash == JudgmentRow.call_hash)
    served = exists().where(
        TaskRow.kind == "judge",
        TaskRow.target == JudgmentRow.pair_id,
        TaskRow.rater_id == JudgmentRow.judge,
        TaskRow.done,
    )
    return ~or_(called, served)
