"""The store: migrations, WAL, and unique constraints that make double-writing impossible."""

from __future__ import annotations

from pathlib import Path

import pytest
from alembic import command
from alembic.autogenerate import compare_metadata
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import create_engine, inspect, text
from sqlalchemy.exc import IntegrityError

from heart.errors import StoreError
from heart.store import (
    Base,
    CompletionRow,
    JudgmentRow,
    PairRow,
    Store,
    SystemRow,
    open_store,
)
from heart.store._db import HEAD, MIGRATIONS, REVISIONS, schema_state

from ..rows import seed_study

TABLES = {
    "batch_calls",
    "batches",
    "bundle_provenance",
    "calls",
    "consents",
    "practice_answers",
    "rewrites",
    "strategy_classifications",
    "rationale_codings",
    "rationale_codes",
    "tasks",
    "strategy_labels",
    "completions",
    "conversations",
    "items",
    "judges",
    "judgments",
    "pairs",
    "prompts",
    "raters",
    "screening",
    "systems",
    "alembic_version",
}


def _seed(store: Store) -> None:
    seed_study(store, ["m1", "m2"], items=1, completions=True, judges=["j1"])
    with store.session() as s:
        s.add(PairRow(id="p1", item_id="i0", a_id="cp-0-m1", b_id="cp-0-m2", design="all"))


def test_migrates_to_every_table(store: Store) -> None:
    assert set(inspect(store.engine).get_table_names()) >= TABLES
    with store.engine.connect() as conn:
        assert conn.execute(text("SELECT version_num FROM alembic_version")).scalar() == HEAD


def test_migrations_build_exactly_the_tables_the_code_declares(store: Store) -> None:
    with store.engine.connect() as conn:
        differences = compare_metadata(MigrationContext.configure(conn), Base.metadata)
    assert differences == []


def test_a_store_from_the_first_schema_upgrades_and_keeps_its_rows(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'old.db'}"
    engine = create_engine(url)
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    with engine.begin() as conn:
        config.attributes["connection"] = conn
        command.upgrade(config, "0001")
        conn.execute(
            text("INSERT INTO systems (name, kind, family, spec) VALUES ('m1', 'model', 'x', '{}')")
        )
    engine.dispose()
    store = open_store(url)
    with store.session() as s:
        assert s.get(SystemRow, "m1") is not None
    assert "refused" in {c["name"] for c in inspect(store.engine).get_columns("judgments")}
    store.close()


def test_the_revisions_read_from_the_file_names_are_alembics(tmp_path: Path) -> None:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    scripts = ScriptDirectory.from_config(config)
    assert tuple(s.revision for s in reversed(list(scripts.walk_revisions()))) == REVISIONS
    assert scripts.get_current_head() == HEAD
    url = f"sqlite:///{tmp_path / 'h.db'}"
    engine = create_engine(url)
    assert schema_state(engine).revision is None  # no schema yet: nothing recorded
    for revision in ("0001", REVISIONS[-2], HEAD):
        with engine.begin() as conn:
            config.attributes["connection"] = conn
            command.upgrade(config, revision)
        state = schema_state(engine)
        with engine.connect() as conn:
            assert state.revision == MigrationContext.configure(conn).get_current_revision()
        assert state.revision == revision and state.current == (revision == HEAD)
    engine.dispose()


def test_two_recorded_revisions_are_a_clear_error(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    open_store(url).close()
    engine = create_engine(url)
    with engine.begin() as conn:
        conn.execute(text("INSERT INTO alembic_version (version_num) VALUES ('0042')"))
    with pytest.raises(StoreError, match=rf"records 2 schema revisions \({HEAD}, 0042\)"):
        open_store(url)
    engine.dispose()


def test_reopening_is_idempotent(tmp_path: Path) -> None:
    url = f"sqlite:///{tmp_path / 'h.db'}"
    open_store(url).close()
    store = open_store(url)
    _seed(store)
    store.close()
    with open_store(url).session() as s:
        assert s.get(PairRow, "p1") is not None


def test_sqlite_runs_in_wal_mode(tmp_path: Path) -> None:
    store = open_store(f"sqlite:///{tmp_path / 'h.db'}")
    with store.engine.connect() as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1


def test_one_completion_per_system_item_contributor(store: Store) -> None:
    _seed(store)
    with pytest.raises(IntegrityError), store.session() as s:
        s.add(
            CompletionRow(
                id="cp-other",
                item_id="i0",
                system="m1",
                contributor="",
                status="ok",
                text="again",
                created_at="now",
            )
        )
    with store.session() as s:
        s.add(
            CompletionRow(
                id="cp3",
                item_id="i0",
                system="m1",
                contributor="r-7",
                status="ok",
                text="a person",
                created_at="now",
            )
        )


def test_one_judgment_per_pair_judge_order(store: Store) -> None:
    _seed(store)
    with store.session() as s:
        s.add(
            JudgmentRow(
                id="j-ab",
                pair_id="p1",
                judge="j1",
                order="ab",
                status="ok",
                winner="a",
                strength=2,
                axes={},
                rationale="",
                created_at="now",
            )
        )
        s.add(
            JudgmentRow(
                id="j-ba",
                pair_id="p1",
                judge="j1",
                order="ba",
                status="ok",
                winner="a",
                strength=2,
                axes={},
                rationale="",
                created_at="now",
            )
        )
    with pytest.raises(IntegrityError), store.session() as s:
        s.add(
            JudgmentRow(
                id="j-dup",
                pair_id="p1",
                judge="j1",
                order="ab",
                status="ok",
                winner="b",
                strength=1,
                axes={},
                rationale="",
                created_at="now",
            )
        )


def test_foreign_keys_are_enforced(store: Store) -> None:
    _seed(store)
    with pytest.raises(IntegrityError), store.session() as s:
        s.add(
            CompletionRow(
                id="cpx",
                item_id="no-such-item",
                system="m1",
                contributor="",
                status="ok",
                text="t",
                created_at="now",
            )
        )


def test_bad_url_is_a_clear_error() -> None:
    with pytest.raises(StoreError, match="cannot be used"):
        open_store("nosuchdialect://x")


def test_a_store_path_no_system_can_open_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(StoreError) as caught:
        open_store(f"sqlite:///{tmp_path}/a\x00b.db")
    assert str(caught.value) == (
        f"store sqlite:///{tmp_path}/a%00b.db cannot be opened: embedded null byte"
    )
    assert list(tmp_path.iterdir()) == []


def test_a_drivers_warning_about_an_error_heart_handles_stays_off_the_terminal(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Two imports storing the same rows at once: psycopg warns as its batch ends in the
    error heart then handles by running the second again; the terminal shows only heart's
    outcome. Other warnings of the driver still show."""
    import logging

    import heart.store  # noqa: F401  (attaches the filter)

    driver = logging.getLogger("psycopg")
    with caplog.at_level(logging.WARNING):
        driver.warning("error ignored terminating %r: %s", "<psycopg.Pipeline>", "aborted")
        driver.warning("connection lost")
    assert [r.getMessage() for r in caplog.records] == ["connection lost"]
