"""Garbage collection while a whole study is read and analysed.

A report holds hundreds of thousands of rows and records at once, and makes few reference
cycles. With Python's default thresholds the collector runs every 700 new objects and keeps
walking the same live rows, which cost a large study seconds. So inside the block it runs less
often, and the objects that existed before (modules, the study) are frozen out of its walks;
collecting less often costs a little memory and frees the same cycles later.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

YOUNGEST = 50_000  # new objects between collections of the youngest generation (default 700)


@contextmanager
def fewer_collections() -> Iterator[None]:
    """Collect garbage less often inside the block (or the decorated function), and leave the
    objects that already exist out of its collections; then restore the thresholds that were set
    before and return those objects to the collector."""
    before = gc.get_threshold()
    gc.set_threshold(max(YOUNGEST, before[0]), *before[1:])
    gc.freeze()
    try:
        yield
    finally:
        gc.unfreeze()
        gc.set_threshold(*before)
