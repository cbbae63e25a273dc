"""A large import's files read ahead: their lines read, parsed and checked in a process of
their own (``heart.worker``) while this one stores the rows, so the two halves of an import
run on two cores.

The rows reach this process in the order they were read, and a file's refusal where it would
have been raised reading the file here: what is stored, and the first problem named, are those
of reading every file in this process."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from operator import itemgetter
from typing import Any

from heart.release._rows import Row, collector_paused
from heart.worker import Worker

Reader = Callable[[], Iterable[list[Row]]]
"""The chunks of rows of one file, read and checked (picklable: a module's function with its
arguments bound)."""

Packed = tuple[list[int], list[str], list[list[Any]]]
END = None
"""What follows a file's last chunk."""


def pack(rows: list[Row]) -> Packed:
    """A chunk's rows column by column (their line numbers, column names, and each column's
    values): one list per column pickles a few times faster than a dict per row. Every row of a
    checked chunk has the same columns."""
    names = list(rows[0][1])
    records = [record for _, record in rows]
    if len(names) == 1:
        return [n for n, _ in rows], names, [[record[names[0]] for record in records]]
    columns = [list(column) for column in zip(*map(itemgetter(*names), records), strict=True)]
    return [n for n, _ in rows], names, columns


def unpack(packed: Packed) -> list[Row]:
    """The rows ``pack`` was given."""
    numbers, names, columns = packed
    return [
        (number, dict(zip(names, values, strict=True)))
        for number, values in zip(numbers, zip(*columns, strict=True), strict=True)
    ]


def read_files(readers: list[Reader]) -> Iterator[Packed | None]:
    """In the worker: each file's chunks, packed, then END; a refusal ends the reading."""
    with collector_paused():  # the rows hold no cycles, as where they are stored
        for read in readers:
            for rows in read():
                if rows:
                    yield pack(rows)
            yield END


class ReadAhead:
    """The files of ``readers`` read in a worker process started now, in order; ``chunks()``
    gives the next file's chunks as they come. ``close()`` stops the reading (a failed import
    stops it early)."""

    def __init__(self, readers: list[Reader]) -> None:
        self._worker = Worker(read_files, readers)
        self._results = self._worker.results()
        self._left = len(readers)

    def chunks(self) -> Iterator[list[Row]]:
        """The next file's chunks of checked rows, in order; its refusal, if it has one, where
        reading it here would have raised it."""
        assert self._left > 0, "every file was read already"
        self._left -= 1
        for packed in self._results:
            if packed is END:
                return
            yield unpack(packed)

    def close(self) -> None:
        """Stop the reading process, whether it is done or not."""
        self._worker.close()


def reader(function: Callable[..., Iterable[list[Row]]], *args: Any) -> Reader:
    """A ``Reader`` calling ``function(*args)`` (a module-level function, so that it can be
    sent to the reading process)."""
    return partial(function, *args)
