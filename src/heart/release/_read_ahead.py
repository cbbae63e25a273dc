"""A large import's files read ahead: their lines read, parsed and checked in a process of
their own (``heart.worker``) while this one stores the rows, so the two halves of an import
run on two cores.

The rows reach this process in the order they were read, and a file's refusal where it would
have been raised reading the file here: what is stored, and the first problem named, are those
of reading every file in this process."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from functools import partial
from typing import Any

from heart.release._chunk import Chunk, Packed
from heart.release._rows import collector_paused
from heart.worker import Worker

Reader = Callable[[], Iterable[Chunk]]
"""The chunks of rows of one file, read and checked (picklable: a module's function with its
arguments bound)."""

END = None
"""What follows a file's last chunk."""


def read_files(readers: list[Reader]) -> Iterator[Packed | None]:
    """In the worker: each file's chunks, packed, then END; a refusal ends the reading."""
    with collector_paused():  # the rows hold no cycles, as where they are stored
        for read in readers:
            for chunk in read():
                if len(
                    chunk
                ):  # column by column: one list a column pickles faster than a dict a row
                    yield chunk.packed()
            yield END


class ReadAhead:
    """The files of ``readers`` read in a worker process started now, in order; ``chunks()``
    gives the next file's chunks as they come. ``close()`` stops the reading (a failed import
    stops it early)."""

    def __init__(self, readers: list[Reader]) -> None:
        self._worker = Worker.started(ahead=True)  # it reads on while the rows are stored
        self._worker.submit(read_files, readers)
        self._results = self._worker.results()
        self._left = len(readers)

    def chunks(self) -> Iterator[Chunk]:
        """The next file's chunks of checked rows, in order; its refusal, if it has one, where
        reading it here would have raised it."""
        assert self._left > 0, "every file was read already"
        self._left -= 1
        for packed in self._results:
            if packed is END:
                return
            yield Chunk.unpacked(packed)

    def close(self) -> None:
        """Stop the reading process, whether it is done or not."""
        self._worker.close()


def reader(function: Callable[..., Iterable[Chunk]], *args: Any) -> Reader:
    """A ``Reader`` calling ``function(*args)`` (a module-level function, so that it can be
    sent to the reading process)."""
    return partial(function, *args)
