"""Shared fixtures: stores on SQLite and (when configured) PostgreSQL, and the real corpus."""

from __future__ import annotations

import os
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import ProgrammingError

from heart.store import Store, open_store

SHARED_ESCONV = Path(__file__).resolve().parents[2] / "shared" / "data" / "esconv"
FIXTURES = Path(__file__).parent / "fixtures" / "esconv"
POSTGRES_URL = os.environ.get("HEART_TEST_POSTGRES_URL")


def _postgres_store() -> Iterator[Store]:
    """A fresh schema-isolated PostgreSQL database for one test, dropped afterwards."""
    assert POSTGRES_URL
    name = f"heart_t_{uuid.uuid4().hex[:10]}"
    admin = create_engine(POSTGRES_URL, isolation_level="AUTOCOMMIT")
    with admin.connect() as conn:
        conn.execute(text(f'CREATE DATABASE "{name}"'))
    url = POSTGRES_URL.rsplit("/", 1)[0] + f"/{name}"
    store = open_store(url)
    try:
        yield store
    finally:
        store.close()
        _drop(admin, name)
        admin.dispose()


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


@pytest.fixture(params=["sqlite", "postgresql"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Store]:
    """The same test against SQLite and against a real PostgreSQL server."""
    if request.param == "sqlite":
        s = open_store(f"sqlite:///{tmp_path / 'heart.db'}")
        yield s
        s.close()
    else:
        if not POSTGRES_URL:
            if os.environ.get("CI"):
                pytest.fail("CI must set HEART_TEST_POSTGRES_URL (see .ci/run)")
            pytest.skip("HEART_TEST_POSTGRES_URL is not set (scripts/postgres-up.sh starts one)")
        yield from _postgres_store()


@pytest.fixture
def esconv_splits() -> Path:
    path = SHARED_ESCONV / "hf_splits"
    if not path.is_dir():
        pytest.skip("the ESConv corpus is not at ../shared/data/esconv")
    return path
