"""How many threads the embedded model computes with."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from heart.cores import usable_cores
from heart.errors import HeartError
from heart.models._cores import (
    MIN_WINDOW,
    CpuLook,
    FreeCores,
    free_cores,
    look,
    others_busy,
)
from heart.models.embedded import embedded_threads, fixed_threads, llama_settings


def test_one_thread_per_core_unless_the_environment_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]
) -> None:
    monkeypatch.delenv("HEART_EMBEDDED_THREADS", raising=False)
    assert llama_settings(tmp_path, 512)["n_threads"] == usable_cores()
    monkeypatch.setenv("HEART_EMBEDDED_THREADS", "3")
    assert embedded_threads() == 3
    for bad in ("two", "0", "-1"):
        monkeypatch.setenv("HEART_EMBEDDED_THREADS", bad)
        with pytest.raises(HeartError, match=f"HEART_EMBEDDED_THREADS is '{bad}'; set it to a"):
            embedded_threads()


def test_others_busy_is_machine_time_less_this_process_over_the_wall_time() -> None:
    before = CpuLook(wall=10.0, busy=100.0, own=4.0)
    # 2 s of wall time; the machine was busy 3.5 core-seconds, 1.5 of them this process's
    assert others_busy(before, CpuLook(wall=12.0, busy=103.5, own=5.5)) == pytest.approx(1.0)
    # this process alone: nothing left for others (never below zero when clock ticks round)
    assert others_busy(before, CpuLook(wall=12.0, busy=101.0, own=5.02)) == 0.0
    assert others_busy(before, CpuLook(wall=10.0, busy=101.0, own=4.0)) == 0.0


@pytest.mark.parametrize(
    ("machine", "others", "most", "threads"),
    [
        (2, 0.0, 2, 2),
        (2, 0.4, 2, 2),  # a light neighbour: both cores are still worth computing on
        (2, 0.6, 2, 1),
        (2, 1.0, 2, 1),
        (2, 3.0, 2, 1),  # never fewer than one
        (64, 1.0, 2, 2),  # one busy process on a big machine leaves this one's cores alone
        (4, 1.0, 8, 3),
    ],
)
def test_free_cores(machine: int, others: float, most: int, threads: int) -> None:
    assert free_cores(machine, others, most) == threads


def _write_stat(path: Path, busy_seconds: float) -> None:
    ticks = int(busy_seconds * os.sysconf("SC_CLK_TCK"))
    path.write_text(f"cpu  {ticks} 0 0 500 0 0 0 0 0 0\ncpu0 {ticks} 0 0 500 0 0 0 0 0 0\n")


def test_free_cores_follow_what_the_machine_reports(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    _write_stat(stat, 1000.0)
    free = FreeCores(most=2, machine=2, stat=stat)
    assert free.threads() == 2  # the first look waits out its window; nothing else ran
    _write_stat(stat, 1100.0)  # 100 core-seconds by others since: the machine is taken
    time.sleep(MIN_WINDOW)
    assert free.threads() == 1
    _write_stat(stat, 1110.0)
    assert free.threads() == 1  # too short a window to look again: the choice stands
    time.sleep(MIN_WINDOW)
    _write_stat(stat, 1110.0)  # the window runs on from the last full look: 10 s over 0.2 s
    assert free.threads() == 1
    time.sleep(MIN_WINDOW)
    assert free.threads() == 2  # quiet since


def test_without_proc_stat_every_core_is_used(tmp_path: Path) -> None:
    assert look(tmp_path / "missing") is None
    (tmp_path / "odd").write_text("intr 1 2 3\n")
    assert look(tmp_path / "odd") is None
    assert FreeCores(most=3, stat=tmp_path / "missing").threads() == 3


@pytest.mark.skipif(not Path("/proc/stat").is_file(), reason="reads Linux's /proc/stat")
def test_a_busy_neighbour_takes_a_core_away() -> None:
    machine = os.cpu_count() or 1
    if machine < 2:
        pytest.skip("needs two cores")
    neighbour = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        free = FreeCores(most=machine, machine=machine)
        time.sleep(0.5)
        assert free.threads() <= machine - 1
    finally:
        neighbour.kill()
        neighbour.wait()


def test_a_fixed_thread_count_is_not_adapted(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEART_EMBEDDED_THREADS", "2")
    assert fixed_threads() == 2
    monkeypatch.delenv("HEART_EMBEDDED_THREADS")
    assert fixed_threads() is None
    assert embedded_threads() == usable_cores()
