"""How many threads the embedded model computes with."""

from __future__ import annotations

import os

import pytest

from heart.errors import HeartError
from heart.models.embedded import embedded_threads, llama_settings


def test_one_thread_per_core_unless_the_environment_says(
    monkeypatch: pytest.MonkeyPatch, tmp_path: os.PathLike[str]
) -> None:
    monkeypatch.delenv("HEART_EMBEDDED_THREADS", raising=False)
    assert llama_settings(tmp_path, 512)["n_threads"] == (os.cpu_count() or 1)
    monkeypatch.setenv("HEART_EMBEDDED_THREADS", "3")
    assert embedded_threads() == 3
    for bad in ("two", "0", "-1"):
        monkeypatch.setenv("HEART_EMBEDDED_THREADS", bad)
        with pytest.raises(HeartError, match=f"HEART_EMBEDDED_THREADS is '{bad}'; set it to a"):
            embedded_threads()
