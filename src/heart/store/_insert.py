"""Adding a row that others may add at the same moment (a person's first entry, their first
verdict): INSERT ... ON CONFLICT DO NOTHING, so a race is no error and the row is there after."""

from __future__ import annotations

from typing import Any, TypeVar

from sqlalchemy import Connection
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.orm import Session

from heart.store._tables import Base

RowT = TypeVar("RowT", bound=Base)


def add_if_missing(session: Session | Connection, table: type[Base], **values: Any) -> None:
    """Insert a ``table`` row of ``values`` unless one with the same key is stored (or is being
    stored by another transaction, which this one then waits for)."""
    bind = session if isinstance(session, Connection) else session.get_bind()
    dialect = bind.dialect.name
    if dialect == "postgresql":
        session.execute(postgresql.insert(table).values(**values).on_conflict_do_nothing())
    elif dialect == "sqlite":
        session.execute(sqlite.insert(table).values(**values).on_conflict_do_nothing())
    elif isinstance(session, Session):  # another database: look first (a race can conflict)
        session.merge(table(**values))
    else:
        with Session(bind=session) as orm:
            orm.merge(table(**values))
            orm.flush()


def row_for(session: Session, table: type[RowT], key: str, **values: Any) -> RowT:
    """The ``table`` row stored under ``key``, or a new one of ``values`` added to ``session``
    for the caller to fill in. The lookup does not flush, so the new rows of one transaction
    are inserted together when it commits."""
    with session.no_autoflush:
        row = session.get(table, key)
    if row is None:
        row = table(id=key, **values)
        session.add(row)
    return row
