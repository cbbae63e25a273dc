"""A large import's files read ahead: their lines read, parsed and checked in processes of
their own (``heart.worker``) while this one stores the rows, so that the reading and the storing
share the cores. The chunks of each file are dealt out in turn among READERS processes (each
reads every line, and parses and checks only its own chunks), so that the reading is not the
slower half however the two compare.

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

Reader = Callable[[int, int], Iterable[Chunk]]
"""The chunks of rows of one file, read and checked: called with (part, parts), the chunks
whose place in the file is part modulo parts (picklable: a module's function with its
arguments bound)."""

READERS = 2
"""Processes a large import's files are read by: with the storing one, three processes on two
cores, whose system gives each core to whichever has work."""

END = None
"""What follows a file's last chunk."""


def read_files(readers: list[Reader], part: int, parts: int) -> Iterator[Packed | None]:
    """In a worker: each file's chunks whose place is ``part`` modulo ``parts``, packed (an
    empty one too: the chunks are taken in turn), then END; a refusal ends the reading."""
    with collector_paused():  # the rows hold no cycles, as where they are stored
        for read in readers:
            for chunk in read(part, parts):  # column by column: a list a column pickles fast
                yield chunk.packed()
            yield END


class ReadAhead:
    """The files of ``readers`` read by ``parts`` worker processes started now, in order;
    ``chunks()`` gives the next file's chunks as they come. ``close()`` stops the reading (a
    failed import stops it early)."""

    def __init__(self, readers: list[Reader], parts: int = READERS) -> None:
        self._workers: list[Worker] = []
        try:
            for part in range(parts):
                worker = Worker.started(ahead=True)  # it reads on while the rows are stored
                self._workers.append(worker)
                worker.submit(read_files, readers, part, parts)
        except BaseException:
            self.close()
            raise
        self._results = [worker.results() for worker in self._workers]
        self._left = len(readers)

    def chunks(self) -> Iterator[Chunk]:
        """The next file's chunks of checked rows, in order; its refusal, if it has one, where
        reading it here would have raised it."""
        assert self._left > 0, "every file was read already"
        self._left -= 1
        turn = 0
        while (packed := next(self._results[turn])) is not END:
            yield Chunk.unpacked(packed)
            turn = (turn + 1) % len(self._results)
        for other in self._results[turn + 1 :] + self._results[:turn]:  # their ends of the file
            assert next(other) is END, "the readers of a file disagree on its chunks"

    def close(self) -> None:
        """Stop the reading processes, whether they are done or not."""
        for worker in self._workers:
            worker.close()


def reader(function: Callable[..., Iterable[Chunk]], *args: Any) -> Reader:
    """A ``Reader`` calling ``function(*args, part, parts)`` (a module-level function, so that
    it can be sent to the reading processes)."""
    return partial(function, *args)
