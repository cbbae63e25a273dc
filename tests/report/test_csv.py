"""The report's CSV cells: numbers at full precision, empty cells for no data, words as written."""

from __future__ import annotations

from heart.report._csv import csv_text


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
