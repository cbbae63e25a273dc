"""The report's CSV cells: numbers at full precision, empty cells for no data, words as written."""

from __future__ import annotations

from heart.report._csv import csv_text
from heart.tables import CellTable, ColumnRows


def test_every_kind_of_cell_column_by_column() -> None:
    rows = [
        ["a, b", 3, 0.1, True, None, "x"],
        ["c", 12345678901234567890, float("nan"), False, 2.5, 7],
    ]
    assert csv_text(["w", "n", "f", "flag", "maybe", "mixed"], rows) == (
        'w,n,f,flag,maybe,mixed\n"a, b",3,0.1,true,,x\nc,12345678901234567890,,false,2.5,7\n'
    )


def test_rows_of_different_lengths_are_written_as_they_are() -> None:
    assert csv_text(["a", "b"], [[1, True], ["x"]]) == "a,b\n1,true\nx\n"


def test_no_rows_give_the_header_alone() -> None:
    assert csv_text(["a", "b"], []) == "a,b\n"


def test_rows_kept_as_columns_read_and_write_as_rows() -> None:
    columns = [["a", "b", "c"], [1, None, 2.5], [True, False, True]]
    rows = ColumnRows(columns)
    plain = [("a", 1, True), ("b", None, False), ("c", 2.5, True)]
    assert len(rows) == 3 and list(rows) == plain
    assert rows[1] == plain[1] and rows[1:] == plain[1:]
    assert csv_text(["w", "x", "flag"], rows) == csv_text(["w", "x", "flag"], plain)
    assert csv_text(["w"], ColumnRows([])) == "w\n"
    frame = CellTable(["w", "x", "flag"], rows).to_pandas()
    assert frame["w"].tolist() == ["a", "b", "c"] and frame["flag"].tolist() == [True, False, True]
