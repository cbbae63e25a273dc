"""Generation through a real OpenAI-compatible server: llama.cpp's, with the embedded model."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..helpers import heart, set_items
from ..servers import SERVED_NAME, llama_server

pytestmark = pytest.mark.slow


@pytest.fixture(scope="module")
def server() -> Iterator[str]:
    with llama_server() as base_url:
        yield base_url


def _study_on_server(root: Path, base_url: str) -> Path:
    heart("init", root, "--demo")
    set_items(root, 4)
    path = root / "study.yaml"
    text = path.read_text()
    head, rest = text.split("systems:\n", 1)
    rest = rest[rest.index("  - name: esconv-original") :]  # the served model replaces SmolLM2
    served = (
        "systems:\n"
        "  - name: smollm2-served\n"
        "    kind: model\n"
        "    family: huggingface\n"
        "    model:\n"
        "      provider: openai\n"
        f"      base_url: {base_url}\n"
        f"      model: {SERVED_NAME}\n"
        "      max_tokens: 60\n"
        "      price: {input_per_mtok: 0.5, output_per_mtok: 1.5}\n"
    )
    path.write_text(head + served + rest)
    return root


def test_generation_streams_and_records_ttft(server: str, tmp_path: Path) -> None:
    root = _study_on_server(tmp_path / "s", server)
    heart("items", "build", "--study", root)
    out = heart("generate", "--study", root).stdout
    assert "4 model calls (0 from cache, 0 failed)" in out
    with sqlite3.connect(root / "heart.db") as conn:
        rows = conn.execute(
            "SELECT text, ttft_ms, latency_ms, tokens_out, finish_reason, cost_usd, prompt_hash, "
            "call_hash, status FROM completions WHERE system = 'smollm2-served'"
        ).fetchall()
    assert len(rows) == 4
    for text, ttft, latency, tokens_out, finish, cost, prompt_hash, call_hash, status in rows:
        assert status == "ok" and text
        assert 0 < ttft <= latency
        assert 0 < tokens_out <= 60
        assert finish in ("stop", "length")
        assert cost == pytest.approx(tokens_out * 1.5 / 1e6)
        assert len(prompt_hash) == 64 and len(call_hash) == 64

    again = heart("generate", "--study", root).stdout
    assert "0 model calls" in again and "12 completions already done" in again
