"""Table statistics for PostgreSQL's query planner.

PostgreSQL plans each statement from statistics that autovacuum gathers some time after rows
arrive (a minute or more). Until then a new study's tables look empty to the planner, and the
web app's claims ran with plans made for empty tables: under a crowd, requests took ten times
longer in some runs than in others. A step that has just added many rows a busy statement reads
analyses those tables at once (a sample of their rows: milliseconds for a study's seats)."""

from __future__ import annotations

from sqlalchemy import text
from sqlalchemy.orm import Session

from heart.store._tables import Base


def refresh_statistics(session: Session, *tables: type[Base]) -> None:
    """Gather the planner's statistics of ``tables`` now (PostgreSQL; elsewhere nothing)."""
    if session.get_bind().dialect.name != "postgresql":
        return
    for table in tables:
        session.execute(text(f'ANALYZE "{table.__tablename__}"'))
