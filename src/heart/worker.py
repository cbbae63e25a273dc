"""Work of heart run in a fresh Python process on another core:
``python -m heart.worker [module ...]`` imports the modules named, then reads a module-level
function and its arguments (pickled) from its standard input, calls it, and writes what it gives
back (each item, when it is a generator) to its standard output, one pickled frame at a time;
then the next function, until its input ends. So a worker can be started before its work is
known, its imports made while the caller still prepares that work, and one process (its imports
made once) can do several pieces of work in turn. A fresh interpreter, not multiprocessing's
spawn, so that the caller's own script is never imported again (a script without a ``__main__``
guard works), and nothing of the caller's state (open stores, threads) is copied (as a fork
would).

A refusal (``ImportRefused``) raised by the function reaches the caller as that refusal, any
other failure as a ``WorkerFailed`` with the worker's traceback."""

from __future__ import annotations

import contextlib
import importlib
import os
import pickle
import queue
import struct
import subprocess
import sys
import threading
import traceback
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from types import GeneratorType
from typing import IO, Any

try:
    import fcntl
except ImportError:  # Windows: the pipe keeps its size
    fcntl = None  # type: ignore[assignment]

import heart
from heart.errors import HeartError, ImportRefused

_LENGTH = struct.Struct("<Q")
_ITEM, _END, _REFUSED, _FAILED = "item", "end", "refused", "failed"


def fresh_python_env() -> dict[str, str]:
    """The environment of a fresh Python process that imports this heart (its source folder
    first on the path), whatever the caller's working folder."""
    source = str(Path(heart.__file__).resolve().parent.parent)
    path = os.pathsep.join([source, *filter(None, [os.environ.get("PYTHONPATH")])])
    return {**os.environ, "PYTHONPATH": path}


class WorkerFailed(HeartError):
    """The worker process failed: its traceback, or how it ended."""


def _send(out: IO[bytes], kind: str, value: Any) -> None:
    data = pickle.dumps((kind, value), protocol=pickle.HIGHEST_PROTOCOL)
    out.write(_LENGTH.pack(len(data)) + data)
    out.flush()


def _frames(source: IO[bytes]) -> Iterator[bytes]:
    """The frames read from ``source`` until it ends."""
    while header := source.read(_LENGTH.size):
        if len(header) < _LENGTH.size:
            return
        (length,) = _LENGTH.unpack(header)
        data = source.read(length)
        if len(data) < length:
            return
        yield data


AHEAD_FRAMES = 64
"""Frames a worker started with ``ahead`` may run ahead of the caller by (a chunk of rows is
a few MB), beside what its pipe holds."""


def _read_ahead(frames: Iterator[bytes], limit: int = AHEAD_FRAMES) -> Iterator[bytes]:
    """``frames`` read by a thread of their own into a queue of up to ``limit`` frames, so
    that the worker does not wait while the caller is busy. The thread takes the interpreter
    from the caller's busy thread once a block of the pipe (PIPE_BYTES, where the pipe can be
    widened): a few times a frame."""
    ready: queue.Queue[bytes | None] = queue.Queue(maxsize=limit)

    def pump() -> None:
        try:
            for frame in frames:
                ready.put(frame)
        except (OSError, ValueError):  # the pipe was closed: the worker was stopped
            pass
        finally:
            ready.put(None)

    threading.Thread(target=pump, daemon=True).start()
    while (frame := ready.get()) is not None:
        yield frame


PIPE_BYTES = 1 << 20
"""What the pipe from the worker holds, where the system lets it be widened (Linux): how far
the worker may run ahead of the caller (a chunk of rows is a few MB)."""


def _widen(pipe: IO[bytes]) -> None:
    """Let ``pipe`` hold PIPE_BYTES, where the system allows it; else leave it as it is."""
    set_size = getattr(fcntl, "F_SETPIPE_SZ", None) if fcntl is not None else None
    if set_size is not None:
        with contextlib.suppress(OSError):  # above the system's limit: the pipe stays as it is
            fcntl.fcntl(pipe.fileno(), set_size, PIPE_BYTES)


_inbox: Iterator[bytes] | None = None  # in a worker process: the frames from the caller


def received() -> Any:
    """In a worker's function: the next value the caller handed it (``Worker.send``), waited
    for until it comes."""
    if _inbox is None:
        raise RuntimeError("received() is called only by a function a heart worker runs")
    frame = next(_inbox, None)
    if frame is None:
        raise RuntimeError("the caller stopped before it sent the value this function waits for")
    return pickle.loads(frame)


def _run(job: bytes, out: IO[bytes]) -> None:
    """Call the function pickled in ``job`` and send what it gives, then the end of the job."""
    try:
        function, args = pickle.loads(job)
        result = function(*args)
        if isinstance(result, GeneratorType):
            for item in result:
                _send(out, _ITEM, item)
        else:
            _send(out, _ITEM, result)
        _send(out, _END, None)
    except ImportRefused as refused:
        _send(out, _REFUSED, str(refused))
    except BaseException:  # the worker's own failure, told to the caller that waits on it
        _send(out, _FAILED, traceback.format_exc())


def serve(source: IO[bytes], out: IO[bytes], preload: Sequence[str] = ()) -> None:
    """The worker's side: import the modules ``preload``, then, for each job read from
    ``source`` until it ends, call its function and send what it gives. Each frame is written
    as soon as it is made, from this thread (a writing thread beside a busy one waits for the
    interpreter at every block of the pipe): the function runs on while the caller has not yet
    read what the pipe holds."""
    try:
        for module in preload:
            importlib.import_module(module)
    except BaseException:  # told to the caller at its first job
        _send(out, _FAILED, traceback.format_exc())
        return
    global _inbox
    _inbox = _frames(source)
    for job in _inbox:  # a function's received() reads the frames after its own
        _run(job, out)


class Worker:
    """``function(*args)`` run now in a fresh process; ``results()`` gives what it returns (or
    yields), in order, as it comes (the worker making the next item meanwhile). ``close()``
    stops it, done or not. ``Worker.started(preload)`` starts one whose first function is
    given later; ``submit`` gives it the next, once the last one's results are read (what is
    left of them is read first); ``send`` hands the running function a value."""

    def __init__(self, function: Callable[..., Any], *args: Any) -> None:
        self._start(())
        self.submit(function, *args)

    @classmethod
    def started(cls, preload: Sequence[str] = (), *, ahead: bool = False) -> Worker:
        """A worker started now that imports the modules ``preload`` while it waits for its
        first function (``submit``); with ``ahead``, what it gives is read as it comes by a
        thread of this process (up to AHEAD_FRAMES frames ahead), so that it runs on while
        this process is busy."""
        worker = cls.__new__(cls)
        worker._start(preload, ahead)
        return worker

    def _start(self, preload: Sequence[str], ahead: bool = False) -> None:
        self._process = subprocess.Popen(
            [sys.executable, "-m", "heart.worker", *preload],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            env=fresh_python_env(),
        )
        assert self._process.stdin is not None and self._process.stdout is not None
        _widen(self._process.stdin)
        _widen(self._process.stdout)
        frames = _frames(self._process.stdout)
        self._ahead = ahead
        self._frames = _read_ahead(frames) if ahead else frames
        self._running = False  # a function was given whose results are not all read
        self._sending: threading.Thread | None = None

    def _write(self, frame: bytes) -> None:
        assert self._process.stdin is not None
        with contextlib.suppress(BrokenPipeError, ValueError):  # it ended: results() says how
            self._process.stdin.write(_LENGTH.pack(len(frame)))
            self._process.stdin.write(frame)
            self._process.stdin.flush()

    def _sent(self) -> None:
        """Wait until the value last sent is written (the frames go out in order)."""
        if self._sending is not None:
            self._sending.join()
            self._sending = None

    def send(self, value: Any) -> None:
        """Hand ``value`` to the running function (it takes it with ``received()``), written by
        a thread of this process so that this one goes on while the worker is busy."""
        if not self._running:
            raise RuntimeError("the worker has no function to run: submit one first")
        self._sent()
        frame = pickle.dumps(value, pickle.HIGHEST_PROTOCOL)
        self._sending = threading.Thread(target=self._write, args=(frame,), daemon=True)
        self._sending.start()

    def submit(self, function: Callable[..., Any], *args: Any) -> None:
        """Give the worker ``function(*args)`` to run, after reading what is left of the last
        function's results (its failure, if it failed). A worker that already ended (an import
        of ``preload`` failed) tells it in ``results()``."""
        if self._running:
            for _ in self.results():  # what is left of the last function's results
                pass
        self._sent()
        self._write(pickle.dumps((function, args), pickle.HIGHEST_PROTOCOL))
        self._running = True

    def results(self) -> Iterator[Any]:
        """What the function gives, in order; its refusal or failure where it happened. Read
        here as it is asked for, unless the worker was started with ``ahead``."""
        if not self._running:
            raise RuntimeError("the worker has no function to run: submit one first")
        for frame in self._frames:
            kind, value = pickle.loads(frame)
            if kind == _ITEM:
                yield value
                continue
            self._running = False
            if kind == _END:
                return
            if kind == _REFUSED:
                raise ImportRefused(value)
            raise WorkerFailed(f"a heart worker process failed:\n{value}")
        self._running = False
        code = self._process.wait()
        raise WorkerFailed(
            f"a heart worker process ended (exit code {code}) before its work was done"
        )

    def close(self) -> None:
        """Stop the worker, whether it is done or not (or waiting for a function)."""
        if self._process.poll() is None:
            self._process.kill()
        self._process.wait()
        if self._ahead:  # what the reading thread holds, up to the pipe's end: the thread ends
            for _ in self._frames:
                pass
        self._sent()  # the pipe is broken: a value still being written is dropped
        for pipe in (self._process.stdin, self._process.stdout):
            if pipe is not None:
                with contextlib.suppress(BrokenPipeError):
                    pipe.close()


if __name__ == "__main__":
    frames = os.fdopen(os.dup(1), "wb")  # the frames go out here; anything printed, to stderr
    os.dup2(2, 1)
    sys.stdout = sys.stderr
    from heart.worker import serve as serve_here  # this module as functions import it

    serve_here(sys.stdin.buffer, frames, preload=sys.argv[1:])
