"""Work run in a fresh `python -m heart.worker` process: what the function returns or yields
comes back in order, a refusal as that refusal, a failure or a killed worker as one error, and
a script calling it needs no `__main__` guard (nothing of it is imported again). A worker started
before its work is known has made the imports asked of it by the time the work comes, and runs
one function after another."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from heart.errors import ImportRefused
from heart.worker import Worker, WorkerFailed, received

from .docs.markdown import ROOT


@pytest.fixture(autouse=True)
def _importable(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PYTHONPATH", str(ROOT))  # the worker imports this test module


def _squares(n: int) -> Iterator[int]:
    for i in range(n):
        print("printed output goes to stderr, not into the frames")
        yield i * i


def _pid() -> int:
    return os.getpid()


def _refuses() -> Iterator[int]:
    yield 1
    raise ImportRefused("file.jsonl line 2: refused; keep one")


def _fails() -> int:
    return {}["missing"]  # type: ignore[no-any-return]


def _dies() -> int:
    os._exit(3)


def _imported(module: str) -> bool:
    return module in sys.modules


def _adds_what_it_receives(n: int) -> Iterator[int]:
    """Yields once before it waits, then the sizes of the ``n`` values handed to it, in turn."""
    yield -1
    for _ in range(n):
        yield len(received())


def _stamped(n: int) -> Iterator[tuple[float, bytes]]:
    """``n`` items each larger than the pipe, each with the time it was made."""
    for _ in range(n):
        yield time.time(), bytes(2 << 20)


def _sleeps() -> int:
    time.sleep(60)
    return 0


def test_what_the_function_gives_comes_back_in_order_from_another_process() -> None:
    worker = Worker(_squares, 5)
    assert list(worker.results()) == [0, 1, 4, 9, 16]
    worker.close()
    worker = Worker(_pid)
    assert list(worker.results()) != [os.getpid()]
    worker.close()


def test_a_refusal_a_failure_and_a_killed_worker_are_told_not_waited_for() -> None:
    worker = Worker(_refuses)
    results = worker.results()
    assert next(results) == 1
    with pytest.raises(ImportRefused, match=r"^file.jsonl line 2: refused; keep one$"):
        next(results)
    worker.close()
    worker = Worker(_fails)
    with pytest.raises(WorkerFailed, match=r"(?s)failed:.*KeyError: 'missing'"):
        list(worker.results())
    worker.close()
    worker = Worker(_dies)
    with pytest.raises(WorkerFailed, match=r"ended \(exit code 3\) before its work was done"):
        list(worker.results())
    worker.close()


def test_closing_stops_a_worker_still_at_work() -> None:
    worker = Worker(_sleeps)
    started = time.monotonic()
    worker.close()
    assert worker._process.poll() is not None and time.monotonic() - started < 10


def test_a_script_without_a_main_guard_is_not_run_again(tmp_path: Path) -> None:
    script = tmp_path / "script.py"
    script.write_text(
        "from heart.worker import Worker\n"
        "import tests.test_worker as t\n"
        "print('script ran')\n"
        "w = Worker(t._squares, 3)\n"
        "print(list(w.results()))\n"
        "w.close()\n",
        encoding="utf-8",
    )
    done = subprocess.run(
        [sys.executable, str(script)], capture_output=True, text=True, timeout=120,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(ROOT / "src"), str(ROOT)])},
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert done.stdout == "script ran\n[0, 1, 4]\n"


def test_a_worker_started_first_imports_its_modules_then_runs_what_it_is_given() -> None:
    preloaded = "tests.latency_rows"  # a module nothing else in the worker imports
    worker = Worker.started(preload=(preloaded,))
    worker.submit(_squares, 3)
    assert list(worker.results()) == [0, 1, 4]
    worker.close()
    worker = Worker.started(preload=(preloaded,))
    worker.submit(_imported, preloaded)
    assert list(worker.results()) == [True]
    worker.close()
    worker = Worker(_imported, preloaded)
    assert list(worker.results()) == [False]
    worker.close()


def test_one_worker_runs_one_function_after_another() -> None:
    """Each function's results in turn; what is left of the last one's is read at the next
    ``submit``; results asked before any function is a mistake."""
    worker = Worker.started()
    with pytest.raises(RuntimeError, match="no function to run: submit one first"):
        next(worker.results())
    worker.submit(_squares, 4)
    assert next(worker.results()) == 0  # the rest left unread
    worker.submit(_pid)
    first = list(worker.results())
    worker.submit(_fails)
    with pytest.raises(WorkerFailed, match=r"KeyError: 'missing'"):
        list(worker.results())
    worker.submit(_pid)
    assert list(worker.results()) == first != [os.getpid()]  # the same process throughout
    worker.close()


def test_a_module_that_fails_to_import_is_told_by_results() -> None:
    worker = Worker.started(preload=("tests.no_such_module",))
    worker.submit(_squares, 3)
    with pytest.raises(WorkerFailed, match=r"(?s)failed:.*No module named 'tests.no_such_module'"):
        list(worker.results())
    worker.close()


def test_closing_stops_a_worker_still_waiting_for_its_function() -> None:
    worker = Worker.started(preload=("tests.latency_rows",))
    started = time.monotonic()
    worker.close()
    assert worker._process.poll() is not None and time.monotonic() - started < 10


def test_a_running_function_takes_the_values_sent_to_it_in_order() -> None:
    """Values larger than the pipe are sent while the function is still busy: the caller goes
    on meanwhile; the function takes them in the order they were sent."""
    worker = Worker.started()
    with pytest.raises(RuntimeError, match="no function to run: submit one first"):
        worker.send(b"")
    worker.submit(_adds_what_it_receives, 3)
    big = bytes(8 << 20)  # eight times what the pipe holds
    started = time.monotonic()
    worker.send(big)
    worker.send(b"xy")
    worker.send(big[:5])
    assert time.monotonic() - started < 5  # not waited for while the worker reads
    assert list(worker.results()) == [-1, len(big), 2, 5]
    worker.submit(_pid)  # the next function follows the values
    assert list(worker.results()) != [os.getpid()]
    worker.close()


def test_a_function_waiting_for_a_value_is_stopped_by_close_and_received_needs_a_worker() -> None:
    worker = Worker.started()
    worker.submit(_adds_what_it_receives, 1)
    assert next(worker.results()) == -1
    started = time.monotonic()
    worker.close()
    assert worker._process.poll() is not None and time.monotonic() - started < 10
    with pytest.raises(RuntimeError, match="only by a function a heart worker runs"):
        received()


@pytest.mark.parametrize("ahead", [True, False])
def test_a_worker_started_ahead_runs_on_while_the_caller_is_busy(ahead: bool) -> None:
    """Eight items of 2 MiB: started ``ahead``, the worker makes them all while the caller
    sleeps; otherwise it waits for the caller to read what the pipe cannot hold."""
    worker = Worker.started(ahead=ahead)
    worker.submit(_stamped, 8)
    results = worker.results()
    next(results)
    time.sleep(3)
    woke = time.time()
    made = [stamp for stamp, _ in results]
    worker.close()
    assert len(made) == 7
    assert (made[-1] < woke) is ahead


def test_closing_a_worker_started_ahead_ends_its_reading_thread() -> None:
    """Closed before its results are read, a worker started ahead leaves no thread holding a
    full queue of frames behind."""
    before = threading.active_count()
    worker = Worker.started(ahead=True)
    worker.submit(_stamped, 100)  # far more than the queue and the pipe hold
    next(worker.results())
    time.sleep(1)  # the queue fills
    worker.close()
    deadline = time.monotonic() + 10
    while threading.active_count() > before and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threading.active_count() == before
