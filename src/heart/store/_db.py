"""Opening the store: any SQLAlchemy URL, SQLite in WAL mode by default, migrated to head."""

from __future__ import annotations

import datetime as dt
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from urllib.parse import quote

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Engine, create_engine, event, inspect, make_url
from sqlalchemy.exc import ArgumentError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from heart.errors import StoreError

MIGRATIONS = Path(__file__).with_name("migrations")
POOL_SIZE = 40
"""Connections the store keeps open once opened (it opens them only as needed). The web app
runs up to 40 requests at once (anyio's worker threads); with SQLAlchemy's default of 5, a busy
server opened and closed a connection for many requests, on PostgreSQL a server process each."""


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
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def _migrate(engine: Engine) -> None:
    config = _alembic_config()
    head = ScriptDirectory.from_config(config).get_current_head()
    with engine.begin() as connection:
        current = MigrationContext.configure(connection).get_current_revision()
        if current == head:
            return
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
    scripts = ScriptDirectory.from_config(_alembic_config())
    head = scripts.get_current_head()
    assert head is not None  # the package ships its migrations
    with engine.connect() as connection:
        revision = MigrationContext.configure(connection).get_current_revision()
        tables = frozenset(inspect(connection).get_table_names())
    known = frozenset(script.revision for script in scripts.walk_revisions())
    return SchemaState(revision, head, known, tables)


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
        raise StoreError(f"store {engine.url!r} cannot be opened: {exc.orig}") from None
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
