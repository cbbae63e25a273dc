"""A large import's files read ahead: their lines read, parsed and checked in a process of
their own while this one stores the rows, so the two halves of an import run on two cores.

The rows reach this process in the order they were read, and a file's refusal where it would
have been raised reading the file here: what is stored, and the first problem named, are those
of reading every file in this process."""

from __future__ import annotations

import multiprocessing
import queue
import traceback
from collections.abc import Callable, Iterable, Iterator
from functools import partial
from operator import itemgetter
from typing import Any

from heart.errors import ImportRefused
from heart.release._rows import Row, collector_paused

Reader = Callable[[], Iterable[list[Row]]]
"""The chunks of rows of one file, read and checked (picklable: a module's function with its
arguments bound)."""

WAITING = 8
"""Chunks read ahead and not yet taken, at most (a chunk of verdicts is a few MB): memory holds
a few chunks, not the files."""

LOOK = 1.0
"""Seconds between looks at whether the reading process is still alive while waiting."""

Packed = tuple[list[int], list[str], list[list[Any]]]


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


def _read(readers: list[Reader], waiting: Any) -> None:
    """In the reading process: each file's chunks in order, then its end; a refusal or a
    failure ends the reading."""
    try:
        with collector_paused():  # the rows hold no cycles, as where they are stored
            for read in readers:
                for rows in read():
                    if rows:
                        waiting.put(("rows", pack(rows)))
                waiting.put(("end", None))
    except ImportRefused as refused:
        waiting.put(("refused", str(refused)))
    except BaseException:  # the reading's own failure, told to the process that waits on it
        waiting.put(("failed", traceback.format_exc()))


class ReadAhead:
    """The files of ``readers`` read in a process started now, in order; ``chunks()`` gives
    the next file's chunks as they come. ``close()`` stops the reading (a failed import stops
    it early)."""

    def __init__(self, readers: list[Reader]) -> None:
        context = multiprocessing.get_context("spawn")  # no copy of this process's state
        self._waiting = context.Queue(maxsize=WAITING)
        self._process = context.Process(
            target=_read, args=(readers, self._waiting), name="heart-import-reader", daemon=True
        )
        self._process.start()
        self._left = len(readers)

    def _next(self) -> tuple[str, Any]:
        while True:
            try:
                message: tuple[str, Any] = self._waiting.get(timeout=LOOK)
                return message
            except queue.Empty:
                if not self._process.is_alive():
                    raise RuntimeError(
                        f"the process reading the import's files ended (exit code "
                        f"{self._process.exitcode}) before it read them all"
                    ) from None

    def chunks(self) -> Iterator[list[Row]]:
        """The next file's chunks of checked rows, in order; its refusal, if it has one, where
        reading it here would have raised it."""
        assert self._left > 0, "every file was read already"
        self._left -= 1
        while True:
            kind, value = self._next()
            if kind == "rows":
                yield unpack(value)
            elif kind == "end":
                return
            elif kind == "refused":
                raise ImportRefused(value)
            else:
                raise RuntimeError(f"reading the import's files failed:\n{value}")

    def close(self) -> None:
        """Stop the reading process, whether it is done or not."""
        if self._process.is_alive():
            self._process.terminate()
        self._process.join()
        self._waiting.close()
        self._waiting.cancel_join_thread()  # chunks still waiting are dropped, not flushed


def reader(function: Callable[..., Iterable[list[Row]]], *args: Any) -> Reader:
    """A ``Reader`` calling ``function(*args)`` (a module-level function, so that it can be
    sent to the reading process)."""
    return partial(function, *args)
