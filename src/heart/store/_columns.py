"""Reading a large query column by column: the driver's rows in parts, straight from its
cursor (no row object per row), gathered into one tuple per column."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from sqlalchemy import Connection, Executable

PART = 50_000  # rows fetched from the driver at a time


def column_parts(
    connection: Connection, query: Executable, part: int = PART
) -> Iterator[list[tuple[Any, ...]]]:
    """The query's result in parts of up to ``part`` rows, each part one tuple per column of
    the values as the driver gives them (no type processing: a boolean may come as 0 or 1, a
    JSON value as its text); no part when there are no rows."""
    result = connection.execute(query)
    cursor = result.cursor
    try:
        while rows := cursor.fetchmany(part):
            yield list(zip(*rows, strict=True))
    finally:
        result.close()


def query_columns(connection: Connection, query: Executable, width: int) -> list[list[Any]]:
    """The query's result as one list per column (``width`` columns, empty ones when there are
    no rows), read in parts (see ``column_parts``)."""
    columns: list[list[Any]] = [[] for _ in range(width)]
    for read in column_parts(connection, query):
        for column, values in zip(columns, read, strict=True):
            column.extend(values)
    return columns
