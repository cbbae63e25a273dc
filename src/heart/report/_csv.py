"""The core of the report's CSV files, for scripts: one number per column at full precision (an
estimate, its interval and its count apart), an empty cell where there is no data, never
formatted text."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence

from heart.tables import SHARE_COLUMNS, Cell, CellTable, ColumnRows, number, share_cells


def _cell(value: Cell) -> str:
    """Floats in their shortest exact form, NaN and None as an empty cell, booleans as words
    (words themselves are written as they are)."""
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return str(value)  # words and whole numbers


def csv_text(header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    if isinstance(rows, ColumnRows):
        columns: Sequence[Sequence[Cell]] = rows.columns
    elif len(set(map(len, rows))) > 1:  # rows of different lengths: row by row
        writer.writerows([v if type(v) is str else _cell(v) for v in row] for row in rows)
        return buffer.getvalue()
    else:
        columns = list(zip(*rows, strict=True))
    # column by column (files may be large): a column of only words and whole numbers is
    # written as it is (the csv module writes both as _cell would), any other cell by cell
    cells = [
        column if set(map(type, column)) <= PLAIN else list(map(_cell, column))
        for column in columns
    ]
    writer.writerows(zip(*cells, strict=True))
    return buffer.getvalue()


PLAIN = {str, int}
"""Cells the csv module writes as ``_cell`` does (not bool: it would write True)."""


def table_text(table: CellTable) -> str:
    """A table of cells as CSV text."""
    return csv_text(table.columns, table.rows)


__all__ = ["SHARE_COLUMNS", "Cell", "csv_text", "number", "share_cells", "table_text"]
