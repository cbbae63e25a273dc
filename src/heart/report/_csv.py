"""The core of the report's CSV files, for scripts: one number per column at full precision (an
estimate, its interval and its count apart), an empty cell where there is no data, never
formatted text."""

from __future__ import annotations

import csv
import io
import math
from collections.abc import Sequence

from heart.tables import SHARE_COLUMNS, Cell, CellTable, number, share_cells


def _cell(value: Cell) -> str:
    """Floats in their shortest exact form, NaN and None as an empty cell, booleans as words."""
    if type(value) is str:  # the commonest cell first: large files are mostly words
        return value
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "" if math.isnan(value) else repr(value)
    return str(value)


def csv_text(header: Sequence[str], rows: Sequence[Sequence[Cell]]) -> str:
    buffer = io.StringIO()
    writer = csv.writer(buffer, lineterminator="\n")
    writer.writerow(header)
    writer.writerows([_cell(v) for v in row] for row in rows)  # row by row: files may be large
    return buffer.getvalue()


def table_text(table: CellTable) -> str:
    """A table of cells as CSV text."""
    return csv_text(table.columns, table.rows)


__all__ = ["SHARE_COLUMNS", "Cell", "csv_text", "number", "share_cells", "table_text"]
