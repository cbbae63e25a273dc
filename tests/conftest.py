"""Shared fixtures: stores on SQLite and (when configured) PostgreSQL, and the real corpus."""

from __future__ import annotations

import os
import shutil
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import ProgrammingError

from heart.store import Store, open_store

SHARED_ESCONV = Path(__file__).resolve().parents[2] / "shared" / "data" / "esconv"
FIXTURES = Path(__file__).parent / "fixtures" / "esconv"
POSTGRES_URL = os.environ.get("HEART_TEST_POSTGRES_URL")


def _postgres_database(admin: Engine, template: str | None = None) -> str:
    """A new database, empty or a copy of ``template``; its URL."""
    assert POSTGRES_URL
    name = f"heart_t_{uuid.uuid4().hex[:10]}"
    copy = f' TEMPLATE "{template}"' if template else ""
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"{copy}'))
    return POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"


def _drop(admin: Engine, name: str) -> None:
    """Drop a test database; an autovacuum worker on it (which the test role may not end) is
    waited out rather than failing the test."""
    for attempt in range(20):
        try:
            with admin.connect() as conn:
                conn.execute(text(f'DROP DATABASE "{name}" WITH (FORCE)'))
            return
        except ProgrammingError:
            if attempt == 19:
                raise
            time.sleep(0.25)


@dataclass(frozen=True)
class StoreTemplates:
    """Stores brought to the newest migration once per test process, copied for each test (a
    copy costs a fraction of running the migrations again): a SQLite file, and a PostgreSQL
    database used only as a template when a server is configured."""

    sqlite: Path
    postgres: str | None
    admin: Engine | None


def _new_store(url: str) -> Store:
    store = open_store(url)
    store.close()
    return store


@pytest.fixture(scope="session")
def store_templates(tmp_path_factory: pytest.TempPathFactory) -> Iterator[StoreTemplates]:
    sqlite = tmp_path_factory.mktemp("template") / "heart.db"
    _new_store(f"sqlite:///{sqlite}")
    assert not sqlite.with_name("heart.db-wal").exists()  # closed: the file holds it all
    if not POSTGRES_URL:
        yield StoreTemplates(sqlite, None, None)
        return
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    url = _postgres_database(admin)
    _new_store(url)
    template = url.rsplit("/", 1)[1]
    try:
        yield StoreTemplates(sqlite, template, admin)
    finally:
        _drop(admin, template)
        admin.dispose()


@pytest.fixture(params=["sqlite", "postgresql"])
def store(
    request: pytest.FixtureRequest, tmp_path: Path, store_templates: StoreTemplates
) -> Iterator[Store]:
    """The same test against SQLite and against a real PostgreSQL server, each a fresh store
    at the newest migration."""
    if request.param == "sqlite":
        path = tmp_path / "heart.db"
        shutil.copyfile(store_templates.sqlite, path)
        s = open_store(f"sqlite:///{path}")
        yield s
        s.close()
        return
    if store_templates.admin is None:
        if os.environ.get("CI"):
            pytest.fail("CI must set HEART_TEST_POSTGRES_URL (see .ci/run)")
        pytest.skip("HEART_TEST_POSTGRES_URL is not set (scripts/postgres-up.sh starts one)")
    url = _postgres_database(store_templates.admin, store_templates.postgres)
    s = open_store(url)
    try:
        yield s
    finally:
        s.close()
        _drop(store_templates.admin, url.rsplit("/", 1)[1])


@pytest.fixture
def esconv_splits() -> Path:
    path = SHARED_ESCONV / "hf_splits"
    if not path.is_dir():
        pytest.skip("the ESConv corpus is not at ../shared/data/esconv")
    return path
