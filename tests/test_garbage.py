"""Collecting garbage less often while a study is analysed, and restoring the settings after."""

from __future__ import annotations

import gc

import pytest

from heart.garbage import YOUNGEST, fewer_collections


def test_thresholds_are_raised_inside_and_restored_after_even_on_error() -> None:
    before = gc.get_threshold()
    with fewer_collections():
        assert gc.get_threshold() == (max(YOUNGEST, before[0]), *before[1:])
        assert gc.get_freeze_count() > 0  # what existed before is left out of collections
    assert gc.get_threshold() == before and gc.get_freeze_count() == 0

    @fewer_collections()
    def fails() -> None:
        assert gc.get_threshold()[0] >= YOUNGEST
        raise RuntimeError("stop")

    with pytest.raises(RuntimeError):
        fails()
    assert gc.get_threshold() == before
