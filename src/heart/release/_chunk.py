"""A chunk of an import's rows, held as the reader gave them: row by row (a dict a row, as a
table file is parsed) or column by column (as a bundle's rows come back from the reading
process). Each form is made from the other only when something asks for it, so the checks and
the inserts that read a column at a time never build a dict a row. A column of JSON values may
be held as their text (``json_text``), as the store writes them: it is read back only when its
values are asked for."""

from __future__ import annotations

import json
from operator import itemgetter
from typing import Any

Row = tuple[int, dict[str, Any]]
"""A row of a file: its line number and its record."""

Packed = tuple[list[int], list[str], list[list[Any]], frozenset[str]]
"""A chunk column by column: line numbers, column names, each column's values, and the
columns held as JSON text."""

_make_encoder = getattr(json.encoder, "c_make_encoder", None)
_ENCODE = (
    _make_encoder(
        None, json.JSONEncoder().default, json.encoder.encode_basestring_ascii, None, ": ",
        ", ", False, False, True,
    )
    if _make_encoder is not None
    else None
)  # fmt: skip
"""The C encoder ``json.dumps`` makes a call, made once, with its settings (no check for
cycles: JSON read has none)."""


def json_text(value: Any) -> str:
    """``json.dumps(value)``, by one encoder made once."""
    return "".join(_ENCODE(value, 0)) if _ENCODE is not None else json.dumps(value)


def as_json_text(values: list[Any], null: str | None) -> list[str | None]:
    """A column's JSON values as the store writes them: their ``json_text``, and ``null``
    for none."""
    return [null if value is None else json_text(value) for value in values]


class Chunk:
    """Rows of one table with their line numbers; ``column(name)`` and ``records()`` give them
    either way round, with the values of a column held as JSON text (``texts``; none may be
    held as None) read back."""

    __slots__ = ("_columns", "_names", "_records", "numbers", "texts")

    def __init__(
        self,
        numbers: list[int],
        *,
        names: list[str] | None = None,
        columns: list[list[Any]] | None = None,
        records: list[dict[str, Any]] | None = None,
        texts: frozenset[str] = frozenset(),
    ) -> None:
        self.numbers = numbers
        self._names, self._columns, self._records = names, columns, records
        self.texts = texts if columns is not None else frozenset()

    @classmethod
    def of_rows(cls, rows: list[Row]) -> Chunk:
        return cls([number for number, _ in rows], records=[record for _, record in rows])

    @classmethod
    def unpacked(cls, packed: Packed) -> Chunk:
        numbers, names, columns, texts = packed
        return cls(numbers, names=names, columns=columns, texts=texts)

    def __len__(self) -> int:
        return len(self.numbers)

    def column(self, name: str) -> list[Any]:
        """The values of column ``name``, in row order (every row has it)."""
        if self._names is not None and self._columns is not None:
            values = self._columns[self._names.index(name)]
            if name in self.texts:
                return [None if text is None else json.loads(text) for text in values]
            return values
        return list(map(itemgetter(name), self.records()))

    def tuples(self, names: list[str] | tuple[str, ...]) -> list[tuple[Any, ...]]:
        """The values of ``names`` in each row, a tuple a row."""
        return list(zip(*(self.column(name) for name in names), strict=True))

    def records(self) -> list[dict[str, Any]]:
        """A dict a row (made once, on first asking, from the columns)."""
        if self._records is None:
            assert self._names is not None and self._columns is not None
            names = self._names
            columns = [self.column(name) for name in names]
            self._records = [
                dict(zip(names, values, strict=True)) for values in zip(*columns, strict=True)
            ]
        return self._records

    def rows(self) -> list[Row]:
        return list(zip(self.numbers, self.records(), strict=True))

    def as_columns(self) -> tuple[list[str], list[list[Any]]] | None:
        """Its column names and values when every row has the same columns, else None (the
        columns of ``texts`` as their JSON text)."""
        if self._names is not None and self._columns is not None:
            return self._names, self._columns
        records = self.records()
        if any(record.keys() != records[0].keys() for record in records):
            return None
        return by_column(records)

    def packed(self) -> Packed:
        """The chunk column by column, to send to another process: for a checked chunk, whose
        rows have the same columns (not looked at again here). A column that repeats its texts
        holds each once (``shared``)."""
        if self._names is not None and self._columns is not None:
            names, columns, texts = self._names, self._columns, self.texts
        else:
            (names, columns), texts = by_column(self.records()), frozenset()
        return self.numbers, names, [shared(column) for column in columns], texts


SAMPLE = 64
"""Values of a column looked at to tell whether it repeats its texts."""


def shared(values: list[Any]) -> list[Any]:
    """``values`` with equal texts made one object when the first SAMPLE of them repeat (a
    column of statuses, names or hashes): pickled once each and read back as one, a column is
    sent at a fraction of its size and unpickled without a new object a row."""
    head = values[:SAMPLE]
    if not head or type(head[0]) is not str:
        return values
    first: dict[Any, Any] = {}
    try:
        if len(set(head)) > len(head) * 3 // 4:
            return values
        return [first.setdefault(value, value) for value in values]
    except TypeError:  # a JSON column's lists or objects, held as values: sent as they are
        return values


def by_column(records: list[dict[str, Any]]) -> tuple[list[str], list[list[Any]]]:
    """The columns of records that all have the first one's, with their values."""
    if not records:
        return [], []
    names = list(records[0])
    if len(names) == 1:
        return names, [[record[names[0]] for record in records]]
    getter = itemgetter(*names)
    return names, [list(values) for values in zip(*map(getter, records), strict=True)]
