"""How many cores are free for the embedded model: the machine's busy time (``/proc/stat``) less
this process's own, between two looks. llama.cpp's threads wait for each other by spinning, so a
thread team larger than the free cores loses whole time slices to any busy neighbour; computing
with the free cores only keeps it near its quiet speed."""

from __future__ import annotations

import os
import time
from dataclasses import dataclass
from pathlib import Path

from heart.cores import usable_cores

PROC_STAT = Path("/proc/stat")
# /proc/stat's cpu columns that are time some process (or another guest) had the core:
# user, nice, system, irq, softirq, steal (guest time is already counted in user)
_BUSY_COLUMNS = (0, 1, 2, 5, 6, 7)
# a look over less time than this says too little; the previous choice stands
MIN_WINDOW = 0.1


@dataclass(frozen=True)
class CpuLook:
    """One reading: when, the machine's busy core-seconds so far, and this process's own."""

    wall: float
    busy: float
    own: float


def look(stat: Path = PROC_STAT) -> CpuLook | None:
    """The machine's and this process's CPU time now, or None where /proc/stat is not readable."""
    try:
        first = stat.read_text(encoding="ascii").split("\n", 1)[0].split()
        ticks = [int(value) for value in first[1:]]
        per_second = os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, UnicodeDecodeError):
        return None
    if first[:1] != ["cpu"] or len(ticks) < 8 or per_second <= 0:
        return None
    times = os.times()
    return CpuLook(
        wall=time.monotonic(),
        busy=sum(ticks[i] for i in _BUSY_COLUMNS) / per_second,
        own=times.user + times.system,
    )


def others_busy(before: CpuLook, after: CpuLook) -> float:
    """Cores other processes kept busy on average between two looks."""
    wall = after.wall - before.wall
    if wall <= 0:
        return 0.0
    return max(0.0, (after.busy - before.busy) - (after.own - before.own)) / wall


def free_cores(machine: int, others: float, most: int) -> int:
    """Whole cores of ``machine`` left when others keep ``others`` busy: 1 to ``most``."""
    return max(1, min(most, int(machine - others + 0.5)))


class FreeCores:
    """Follows the cores other processes leave free, one look per call: at most ``most``."""

    def __init__(
        self, most: int | None = None, machine: int | None = None, stat: Path = PROC_STAT
    ) -> None:
        self.cores = most or usable_cores()
        self.machine = machine or os.cpu_count() or self.cores
        self._stat = stat
        self._last = look(stat)
        self._choice = self.cores
        self._decided = False

    def threads(self) -> int:
        """Threads to compute with now: the cores others left free since the previous look.
        A look over a short window keeps the previous choice and waits for more time, except
        the first, which waits out the rest of its window so that it is not a guess."""
        if self._last is None:
            return self.cores
        now = look(self._stat)
        if now is None:
            return self._choice
        short = now.wall - self._last.wall < MIN_WINDOW
        if short and self._decided:
            return self._choice
        if short:
            time.sleep(max(0.0, MIN_WINDOW - (now.wall - self._last.wall)))
            now = look(self._stat) or now
        self._choice = free_cores(self.machine, others_busy(self._last, now), self.cores)
        self._last = now
        self._decided = True
        return self._choice
