"""Where a stored judgment came from: heart made it, or a judgments file brought it in."""

from __future__ import annotations

from sqlalchemy import ColumnElement, and_

from heart.store._tables import JudgmentRow


def imported_judgment() -> ColumnElement[bool]:
    """A judgment imported from a judgments file: it has no model call (an LLM judge heart
    called records one) and no raw answer (the web app records the person's choice). A bundle
    copies judgments whole, so each keeps the origin it had in the study that made it."""
    return and_(JudgmentRow.call_hash.is_(None), JudgmentRow.raw.is_(None))
