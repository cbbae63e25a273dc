"""Opening the store: any SQLAlchemy URL, SQLite in WAL mode by default, migrated to head."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event, inspect, make_url, text
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from heart.errors import StoreError

if TYPE_CHECKING:
    from alembic.config import Config

MIGRATIONS = Path(__file__).with_name("migrations")
REVISIONS = tuple(sorted(p.name.split("_", 1)[0] for p in MIGRATIONS.glob("versions/[0-9]*_*.py")))
"""This release's schema revisions, oldest first: each migration's file is named by its revision
(``0009_bundle_provenance.py`` is revision 0009), so reading them needs no alembic, which is slow
to import and is imported only when a migration runs."""
HEAD = REVISIONS[-1]
VERSION_TABLE = "alembic_version"
POOL_SIZE = 12
"""Connections the store keeps open once opened (it opens them only as needed): one for each of
the web app's request threads (8), its seat refresh, and a few for the admin pages. With
SQLAlchemy's default of 5, a busy server opened and closed a connection for many requests, on
PostgreSQL a server process each."""


def _not_a_handled_race(record: logging.LogRecord) -> bool:
    """psycopg warns "error ignored terminating <Pipeline ...>" when a batch of inserts ends
    in an error heart handles (two imports storing the same rows at once: the second is run
    again); the warning reached the terminal beside heart's one-line outcome."""
    return not str(record.msg).startswith("error ignored terminating")


logging.getLogger("psycopg").addFilter(_not_a_handled_race)


def now_iso() -> str:
    """The current UTC time as stored in every ``created_at``."""
    return dt.datetime.now(dt.UTC).isoformat(timespec="milliseconds")


def _sqlite_pragmas(dbapi_connection: Any, _record: Any) -> None:
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA journal_mode=WAL")
    cursor.execute("PRAGMA synchronous=NORMAL")
    cursor.execute("PRAGMA foreign_keys=ON")
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.close()


def _read_only_pragmas(dbapi_connection: Any, _record: Any) -> None:
    """A reading connection: it waits out writers and refuses to write, even where the file
    system would let it."""
    cursor = dbapi_connection.cursor()
    cursor.execute("PRAGMA busy_timeout=30000")
    cursor.execute("PRAGMA query_only=ON")
    cursor.close()


def _read_only_url(url: str) -> tuple[str, dict[str, Any]]:
    """``url`` opened for reading only (SQLite: the file in read-only mode; PostgreSQL:
    read-only transactions), and the driver's connection arguments for it."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        database = parsed.database or ""
        if database in ("", ":memory:") or database.startswith("file:"):
            return url, {}
        path = Path(database).resolve()
        return f"sqlite:///file:{quote(str(path))}?mode=ro&uri=true", {}
    if parsed.get_backend_name() == "postgresql":
        return url, {"options": "-c default_transaction_read_only=on"}
    return url, {}


def _alembic_config() -> Config:
    """Alembic's settings for the store's migrations."""
    from alembic.config import Config

    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def _revision(connection: Connection) -> str | None:
    """The schema revision alembic recorded in the database; None before any."""
    if not inspect(connection).has_table(VERSION_TABLE):
        return None
    rows = connection.execute(text(f"SELECT version_num FROM {VERSION_TABLE} ORDER BY 1"))
    found = rows.scalars().all()
    if len(found) > 1:
        raise StoreError(
            f"the store records {len(found)} schema revisions ({', '.join(found)}) where heart "
            "writes one: point store at this study's own database"
        )
    return found[0] if found else None


def _migrate(engine: Engine) -> None:
    with engine.begin() as connection:
        if _revision(connection) == HEAD:
            return
        from alembic import command

        config = _alembic_config()
        config.attributes["connection"] = connection
        command.upgrade(config, "head")


@dataclass(frozen=True)
class SchemaState:
    """Where a database's schema stands against this release's migrations, read without
    changing it."""

    revision: str | None  # None: no schema written yet
    head: str
    known: frozenset[str]  # every revision this release can upgrade from
    tables: frozenset[str]

    @property
    def current(self) -> bool:
        return self.revision == self.head


def schema_state(engine: Engine) -> SchemaState:
    """The schema revision of the database behind ``engine`` (nothing is migrated)."""
    with engine.connect() as connection:
        revision = _revision(connection)
        tables = frozenset(inspect(connection).get_table_names())
    return SchemaState(revision, HEAD, frozenset(REVISIONS), tables)


@dataclass
class Store:
    """A migrated database and a session factory over it."""

    url: str
    engine: Engine
    sessions: sessionmaker[Session]
    read_only: bool = False

    @contextmanager
    def session(self) -> Iterator[Session]:
        """A session committed on success and rolled back on any error (on a read-only store,
        the database refuses any write before that)."""
        with self.sessions() as session, session.begin():
            yield session

    @contextmanager
    def connection(self) -> Iterator[Connection]:
        """A Core connection in one transaction, committed on success and rolled back on any
        error: for the web app's busiest statements, which need no ORM objects and skip the
        session's bookkeeping (about half the CPU of a short transaction)."""
        with self.engine.begin() as connection:
            yield connection

    def close(self) -> None:
        self.engine.dispose()


def open_store(url: str, *, migrate: bool = True, read_only: bool = False) -> Store:
    """Connect to ``url``, bring its schema to the newest migration (unless ``migrate`` is
    false: a check reads the store as it is), and return the store.

    ``read_only`` opens it for reading only: nothing is migrated and nothing can be written (a
    store whose schema is not this release's is refused, saying how to upgrade it)."""
    connect_args: dict[str, Any] = {}
    if read_only:
        url, connect_args = _read_only_url(url)
        migrate = False
    try:
        engine = create_engine(url, future=True, pool_size=POOL_SIZE, connect_args=connect_args)
    except (ArgumentError, ImportError) as exc:
        raise StoreError(
            f"store URL {url!r} cannot be used: {exc}; give a SQLAlchemy URL such as "
            "sqlite:///heart.db or postgresql+psycopg://user@host/db"
        ) from None
    if engine.dialect.name == "sqlite":
        event.listen(engine, "connect", _read_only_pragmas if read_only else _sqlite_pragmas)
    try:
        if migrate:
            _migrate(engine)
        if read_only:
            _require_current(engine)
    except OperationalError as exc:
        said = " ".join(str(exc.orig).split())  # a driver's message may run over several lines
        raise StoreError(f"store {engine.url!r} cannot be opened: {said}") from None
    except ValueError as exc:  # a path the system cannot take (a NUL in it)
        raise StoreError(f"store {engine.url!r} cannot be opened: {exc}") from None
    return Store(
        url=url,
        engine=engine,
        sessions=sessionmaker(engine, expire_on_commit=False),
        read_only=read_only,
    )


def _require_current(engine: Engine) -> None:
    """A store opened read-only must already have this release's schema."""
    state = schema_state(engine)
    if state.revision is None:
        raise StoreError(f"store {engine.url!r} holds no study yet; there is nothing to read")
    if not state.current:
        engine.dispose()
        raise StoreError(
            f"store {engine.url!r} has schema {state.revision}, this heart reads "
            f"{state.head}; open it once for writing (any heart command that opens the study, "
            "such as `heart items list`) to upgrade it, then read it"
        )
