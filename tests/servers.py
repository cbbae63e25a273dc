"""Real model servers on 127.0.0.1 for tests and benchmarks."""

from __future__ import annotations

import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from typing import IO, Any

from heart.models.embedded import embedded_model_path

SERVED_NAME = "smollm2"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def stop(process: subprocess.Popen[Any], timeout: float = 30) -> None:
    """End a server subprocess: ask it to stop, and kill it if it has not within ``timeout``."""
    process.terminate()
    try:
        process.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait(timeout=timeout)


@contextmanager
def llama_server(n_ctx: int = 4096) -> Iterator[str]:
    """``python -m llama_cpp.server`` with the embedded model; yields its OpenAI base URL."""
    port = free_port()
    # the server's load log goes to a file: a pipe would fill up and stall it
    with tempfile.TemporaryFile(mode="w+") as log:
        process = subprocess.Popen(
            [
                sys.executable, "-m", "llama_cpp.server", "--model", str(embedded_model_path()),
                "--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx),
                "--logits_all", "false", "--model_alias", SERVED_NAME,
                "--interrupt_requests", "false",
            ],
            stdout=subprocess.DEVNULL,
            stderr=log,
        )  # fmt: skip
        base_url = f"http://127.0.0.1:{port}/v1"
        try:
            _wait_until_up(process, base_url, log)
            yield base_url
        finally:
            stop(process, timeout=10)


def _wait_until_up(process: subprocess.Popen[bytes], base_url: str, log: IO[str]) -> None:
    deadline = time.monotonic() + 120
    while True:
        if process.poll() is not None:
            log.seek(0)
            raise RuntimeError(f"llama_cpp.server exited: {log.read()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=1) as answer:
                if answer.status == 200:
                    return
        except (urllib.error.URLError, OSError):
            pass
        if time.monotonic() > deadline:
            raise RuntimeError("llama_cpp.server did not start within 120 s")
        time.sleep(0.2)
