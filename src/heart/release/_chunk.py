"""A chunk of an import's rows, held as the reader gave them: row by row (a dict a row, as a
table file is parsed) or column by column (as a bundle's rows come back from the reading
process). Each form is made from the other only when something asks for it, so the checks and
the inserts that read a column at a time never build a dict a row."""

from __future__ import annotations

from operator import itemgetter
from typing import Any

Row = tuple[int, dict[str, Any]]
"""A row of a file: its line number and its record."""

Packed = tuple[list[int], list[str], list[list[Any]]]
"""A chunk column by column: line numbers, column names, each column's values."""


class Chunk:
    """Rows of one table with their line numbers; ``column(name)`` and ``records()`` give them
    either way round."""

    __slots__ = ("_columns", "_names", "_records", "numbers")

    def __init__(
        self,
        numbers: list[int],
        *,
        names: list[str] | None = None,
        columns: list[list[Any]] | None = None,
        records: list[dict[str, Any]] | None = None,
    ) -> None:
        self.numbers = numbers
        self._names, self._columns, self._records = names, columns, records

    @classmethod
    def of_rows(cls, rows: list[Row]) -> Chunk:
        return cls([number for number, _ in rows], records=[record for _, record in rows])

    @classmethod
    def unpacked(cls, packed: Packed) -> Chunk:
        numbers, names, columns = packed
        return cls(numbers, names=names, columns=columns)

    def __len__(self) -> int:
        return len(self.numbers)

    def column(self, name: str) -> list[Any]:
        """The values of column ``name``, in row order (every row has it)."""
        if self._names is not None and self._columns is not None:
            return self._columns[self._names.index(name)]
        return list(map(itemgetter(name), self.records()))

    def tuples(self, names: list[str] | tuple[str, ...]) -> list[tuple[Any, ...]]:
        """The values of ``names`` in each row, a tuple a row."""
        return list(zip(*(self.column(name) for name in names), strict=True))

    def records(self) -> list[dict[str, Any]]:
        """A dict a row (made once, on first asking, from the columns)."""
        if self._records is None:
            assert self._names is not None and self._columns is not None
            names = self._names
            self._records = [
                dict(zip(names, values, strict=True)) for values in zip(*self._columns, strict=True)
            ]
        return self._records

    def rows(self) -> list[Row]:
        return list(zip(self.numbers, self.records(), strict=True))

    def as_columns(self) -> tuple[list[str], list[list[Any]]] | None:
        """Its column names and values when every row has the same columns, else None."""
        if self._names is not None and self._columns is not None:
            return self._names, self._columns
        records = self.records()
        if any(record.keys() != records[0].keys() for record in records):
            return None
        return by_column(records)

    def packed(self) -> Packed:
        """The chunk column by column, to send to another process: for a checked chunk, whose
        rows have the same columns (not looked at again here)."""
        if self._names is not None and self._columns is not None:
            return self.numbers, self._names, self._columns
        return self.numbers, *by_column(self.records())


def by_column(records: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """The columns of records that all have the first one's, with their values."""
    if not records:
        return [], []
    names = list(records[0])
    if len(names) == 1:
        return names, [[record[names[0]] for record in records]]
    getter = itemgetter(*names)
    return names, [list(values) for values in zip(*map(getter, records), strict=True)]
