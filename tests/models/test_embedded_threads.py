"""llama.cpp's OpenMP threads sleep while they wait (spinning ones collapse beside any other busy
process), unless the user chose otherwise; read back from the OpenMP runtime itself."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from heart.errors import HeartError
from heart.models.embedded import embedded_threads, with_waiting_threads

pytestmark = pytest.mark.slow

# load the embedded model as heart does, then ask the OpenMP runtime llama.cpp uses what it read
SHOW_RUNTIME = """
import ctypes
from heart.models.embedded import _load, embedded_model_path
_load(embedded_model_path(), 256)
ctypes.CDLL("libgomp.so.1").omp_display_env(1)
"""


def _runtime_settings(**env: str) -> str:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("OMP_", "GOMP_"))}
    done = subprocess.run(
        [sys.executable, "-c", SHOW_RUNTIME],
        env={**clean, **env},
        capture_output=True,
        text=True,
        check=True,
        timeout=300,
    )
    return done.stderr


def test_the_threads_sleep_while_they_wait() -> None:
    shown = _runtime_settings()
    assert "GOMP_SPINCOUNT = '0'" in shown
    assert "OMP_WAIT_POLICY = 'PASSIVE'" in shown


def test_the_users_own_wait_policy_wins() -> None:
    assert "GOMP_SPINCOUNT = '30000000000'" in _runtime_settings(OMP_WAIT_POLICY="ACTIVE")
    assert with_waiting_threads({"OMP_WAIT_POLICY": "ACTIVE"}) == {"OMP_WAIT_POLICY": "ACTIVE"}


def test_thread_count_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("HEART_EMBEDDED_THREADS", "3")
    assert embedded_threads() == 3
    monkeypatch.setenv("HEART_EMBEDDED_THREADS", "two")
    with pytest.raises(HeartError, match="HEART_EMBEDDED_THREADS is 'two'; set it to a whole"):
        embedded_threads()
