"""The cores this process may run on: what the work shared among processes (an import's
reading, the online-Elo orders) and the embedded model's threads are sized by."""

from __future__ import annotations

import os


def usable_cores() -> int:
    """The cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)
