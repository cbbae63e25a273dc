"""Reading a query column by column, straight from the driver's cursor."""

from __future__ import annotations

from sqlalchemy import select

from heart.store import Store, SystemRow, column_parts, query_columns

from ..rows import seed_study


def test_columns_in_parts_and_whole(store: Store) -> None:
    seed_study(store, ["s1", "s2", "s3"])
    query = select(SystemRow.name, SystemRow.kind).order_by(SystemRow.name)
    with store.session() as session:
        parts = list(column_parts(session.connection(), query, part=2))
        whole = query_columns(session.connection(), query, 2)
    assert parts == [[("s1", "s2"), ("model", "model")], [("s3",), ("model",)]]
    assert whole == [["s1", "s2", "s3"], ["model", "model", "model"]]


def test_no_rows_give_empty_columns(store: Store) -> None:
    query = select(SystemRow.name, SystemRow.family).where(SystemRow.name == "nobody")
    with store.session() as session:
        assert list(column_parts(session.connection(), query)) == []
        assert query_columns(session.connection(), query, 2) == [[], []]
